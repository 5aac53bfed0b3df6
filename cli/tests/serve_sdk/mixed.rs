//! One OpenAI-style account shared by agents that call it as agents do, through the sidecar
//! with the official SDK: chats with and without `max_tokens`, streams that do not ask for
//! usage, embeddings, and POSTs that generate nothing (file uploads, batches). Judged at the
//! provider, which counts tokens per minute in an exact sliding minute: how much of the
//! paced rate the account carried once the first burst was spent, and how many attempts it
//! refused.

use std::time::Duration;

use sluice_fake_provider::{Attempt, FakeConfig, Style};

use crate::python::PYTHON;
use crate::sidecar::{AGENT_TOKEN, World};

/// The provider's tokens per minute.
const TPM: u64 = 120_000;
/// The default margin: sluice paces at 90% of every limit.
const MARGIN: f64 = 0.9;

/// What one run of the mix carried.
#[derive(Debug)]
pub struct Figures {
    /// Tokens the provider counted per second in the steady part, over the paced rate.
    pub utilization: f64,
    /// Attempts the provider received.
    pub attempts: usize,
    /// Of them, answered 429.
    pub limited: usize,
    /// What the agents saw: calls of each kind, statuses.
    pub seen: serde_json::Value,
}

impl Figures {
    /// The share of attempts answered 429.
    pub fn limited_share(&self) -> f64 {
        self.limited as f64 / self.attempts.max(1) as f64
    }
}

/// Runs `agents` agents for `seconds` against an account of [`TPM`] tokens per minute
/// (`sluice serve` told the same limit), and measures the provider's count from `warm`
/// seconds after the first attempt to the run's end.
pub fn run(agents: u32, seconds: u64, warm: u64) -> Figures {
    let world = World::with_openai(
        FakeConfig::new(Style::OpenAi).tpm(TPM).rpm(6000),
        &format!("requests_per_minute = 6000\ntokens_per_minute = {TPM}"),
    );
    let sidecar = world.serve();
    let seen = PYTHON.run(
        "openai_mixed",
        &[
            "--agents",
            &agents.to_string(),
            "--seconds",
            &seconds.to_string(),
        ],
        &sidecar.url,
        AGENT_TOKEN,
    );
    let attempts = world.openai.attempts();
    let first = attempts.first().map_or(Duration::ZERO, |a| a.at);
    let (from, to) = (
        first + Duration::from_secs(warm),
        first + Duration::from_secs(seconds),
    );
    let counted: u64 = attempts
        .iter()
        .filter(|a| a.at >= from && a.at < to)
        .map(|a: &Attempt| a.tokens)
        .sum();
    let paced_per_second = MARGIN * TPM as f64 / 60.0;
    Figures {
        utilization: counted as f64 / (paced_per_second * (to - from).as_secs_f64()),
        attempts: attempts.len(),
        limited: attempts.iter().filter(|a| a.status == Some(429)).count(),
        seen,
    }
}

#[test]
fn mixed_agents_use_the_paced_rate_without_429s() {
    if PYTHON.unavailable() {
        return;
    }
    let f = run(8, 50, 10);
    eprintln!("{f:?}");
    let calls = &f.seen["calls"];
    for kind in [
        "chat-unbounded",
        "stream",
        "stream-unbounded",
        "upload",
        "batch",
    ] {
        assert!(calls[kind].as_u64() > Some(5), "{kind}: {f:?}");
    }
    assert!(
        f.utilization >= 0.90,
        "{:.1}% of the paced rate: {f:?}",
        100.0 * f.utilization
    );
    assert!(f.limited_share() <= 0.005, "429s: {f:?}");
    let statuses = f.seen["statuses"].as_object().expect("statuses");
    let refused: u64 = statuses
        .iter()
        .filter(|(s, _)| s.as_str() != "200")
        .filter_map(|(_, n)| n.as_u64())
        .sum();
    let total: u64 = statuses.values().filter_map(|n| n.as_u64()).sum();
    assert!(
        refused as f64 <= 0.005 * total as f64,
        "the agents saw {refused} of {total} calls fail: {f:?}"
    );
}

/// The figures of `docs/benchmarks/mixed-sdk.md` (mixed OpenAI-style traffic through the
/// sidecar): a longer run, against this build or the `sluice` binary
/// `$SLUICE_SDK_SIDECAR_BIN` names.
#[test]
#[ignore = "a two-minute measurement; run by hand for BENCHMARKS.md"]
fn mixed_agents_figures() {
    if PYTHON.unavailable() {
        return;
    }
    let f = run(8, 120, 20);
    println!(
        "utilization {:.1}% of the paced rate; {} attempts, {} answered 429 ({:.2}%); seen {}",
        100.0 * f.utilization,
        f.attempts,
        f.limited,
        100.0 * f.limited_share(),
        f.seen
    );
}
