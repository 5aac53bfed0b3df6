//! sluice against a naive client on an Anthropic-style account that charges output tokens
//! by actual usage (reserved at `max_tokens`, the unused part given back when the answer
//! ends): 24 agents, 80 000 output tokens per minute, two minutes of virtual time, each
//! client against a fresh provider. Prints the provider's figures for both; then sluice's
//! at margins 0.90, 0.95 and 0.98: by default (no `refill` configured, so the plugin's
//! declaration stands: `continuous`, as Anthropic documents its token buckets), and told the
//! provider refills by window (`refill = "window"`) or continuously.
//!
//! Run: `cargo bench -p sluice-tests --bench usage_correction`

use sluice_tests::usage_workload::{Figures, Workload, naive, through_sluice};

fn row(name: &str, f: &Figures) {
    println!(
        "{name:<22} {:>11.1}% {:>7.1}% {:>9} {:>8} {:>9.1}% {:>9}",
        f.utilization * 100.0,
        f.steady * 100.0,
        f.attempts,
        f.limited,
        f.limited_share() * 100.0,
        f.answered
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    // Without `--bench` (as `cargo test --benches` runs it), a brief check that it runs:
    // ten seconds of virtual time, one margin.
    let bench = std::env::args().any(|a| a == "--bench");
    let w = Workload::default();
    let w = if bench {
        w
    } else {
        Workload {
            duration: std::time::Duration::from_secs(10),
            ..w
        }
    };
    let (s, n) = rt.block_on(async { (through_sluice(w).await, naive(w).await) });
    println!(
        "{} agents, {} output tokens/min, {:?} of virtual time",
        w.agents, w.otpm, w.duration
    );
    println!("client                 utilization  steady  attempts      429  429 share  answered");
    row("sluice", &s);
    row("naive", &n);
    for refill in [None, Some("window"), Some("continuous")] {
        let margins: &[f64] = if bench { &[0.90, 0.95, 0.98] } else { &[0.90] };
        for &margin in margins {
            let w = Workload {
                margin,
                refill,
                ..w
            };
            let f = rt.block_on(through_sluice(w));
            row(
                &format!("sluice {margin} {}", refill.unwrap_or("default")),
                &f,
            );
        }
    }
}
