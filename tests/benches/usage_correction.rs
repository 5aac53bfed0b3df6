//! sluice against a naive client on an Anthropic-style account that charges output tokens
//! by actual usage (reserved at `max_tokens`, the unused part given back when the answer
//! ends): 24 agents, 80 000 output tokens per minute, two minutes of virtual time, each
//! client against a fresh provider. Prints the provider's figures for both.
//!
//! Run: `cargo bench -p sluice-tests --bench usage_correction`

use sluice_tests::usage_workload::{Figures, Workload, naive, through_sluice};

fn row(name: &str, f: &Figures) {
    println!(
        "{name:<8} {:>11.1}% {:>9} {:>8} {:>9.1}% {:>9}",
        f.utilization * 100.0,
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
    let w = Workload::default();
    let (s, n) = rt.block_on(async { (through_sluice(w).await, naive(w).await) });
    println!(
        "{} agents, {} output tokens/min, {:?} of virtual time",
        w.agents, w.otpm, w.duration
    );
    println!("client   utilization  attempts      429  429 share  answered");
    row("sluice", &s);
    row("naive", &n);
}
