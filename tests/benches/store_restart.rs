//! Four hosts sharing an Anthropic-style account's output-token limit through Redis (the
//! usage-correction workload: 24 agents, 80 000 output tokens per minute, margin 0.95), in
//! real time, two minutes: once with Redis up throughout, once with Redis killed a minute in
//! and restarted empty 3 s later; each with slices of the quota (`[store] slice_ms = 250`,
//! the default) and with every call asking the store (`slice_ms = 0`). Prints the
//! provider's figures for each: the share of the limit used over the run and in each 10 s
//! window, and the attempts it refused.
//!
//! Run: `cargo bench -p sluice-tests --bench store_restart` (about nine minutes;
//! needs `redis-server`). The figures are the provider's, not the hosts' speed: the test
//! profile gives the same, without a release build,
//! `cargo test -p sluice-tests --bench store_restart -- --bench`.

use std::time::Duration;

use sluice_tests::restart_workload::{GroupFigures, GroupRun, through_a_group};

fn row(name: &str, f: &GroupFigures) {
    println!(
        "{name:<36} {:>6.1}% {:>8} {:>5} {:>6.2}%   {}",
        f.utilization * 100.0,
        f.attempts,
        f.limited,
        f.limited_share() * 100.0,
        f.windows_shown()
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    // Without `--bench` (as `cargo test --benches` runs it), a brief check that it runs.
    let brief = !std::env::args().any(|a| a == "--bench");
    let duration = if brief {
        Duration::from_secs(8)
    } else {
        Duration::from_secs(120)
    };
    let restart_at = if brief {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(60)
    };
    println!(
        "{:<36} {:>7} {:>8} {:>5} {:>7}   each 10 s window (%)",
        "run", "used", "attempts", "429s", "429 %"
    );
    for (slices, slice_ms) in [("slices", 250), ("every call", 0)] {
        for (name, restart) in [
            ("redis up throughout", None),
            (
                "redis restarted empty",
                Some((restart_at, Duration::from_secs(3))),
            ),
        ] {
            let f = rt.block_on(through_a_group(GroupRun {
                duration,
                restart,
                slice_ms,
                ..GroupRun::default()
            }));
            row(&format!("{name}, {slices}"), &f);
        }
    }
}
