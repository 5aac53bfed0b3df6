//! Fifty agents on one 600-requests-per-minute account, three ways, side by side in one
//! process against the same fake provider (a real HTTP server on loopback that enforces the
//! limit with an exact sliding minute and answers 429 with `Retry-After` beyond it):
//!
//! - `naive`: each agent sends, and on a 429 sleeps a fixed exponential backoff
//!   (1 s, 2 s, 4 s, … capped at 32 s), sharing nothing with the others;
//! - `jittered`: the same, with full jitter (a uniform draw from 0 to that backoff);
//! - `sluice`: each agent calls `Executor::execute`; every call waits in the host's admission
//!   queue (the account's scope, paced at 90% of 600 per minute) and the retry engine.
//!
//! Each agent completes `PER_AGENT` successful calls. Reported per strategy: calls sent,
//! successes, 429s received, calls per success, and the time to finish. The provider's own
//! ledger counts the calls and the 429s, not the clients.
//!
//! Run: `cargo bench -p sluice --bench retry_storm` (about four minutes: each strategy has
//! to outlast the provider's minute).

use std::time::Duration;

use sluice::Sluice;
use sluice::clock::{Clock, SystemClock};
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};

/// Agents, and the successful calls each makes: 50 and 13 (more than the account's minute);
/// 5 and 2 without `--bench` (as `cargo test --benches` runs it), a brief check that the
/// bench still runs.
fn scale() -> (usize, usize) {
    if std::env::args().any(|a| a == "--bench") {
        (50, 13)
    } else {
        (5, 2)
    }
}
const RPM: u64 = 600;
const PATH: &str = "/v1/chat/completions";
const BODY: &str = r#"{"model":"gpt-4o","max_tokens":16}"#;

/// What one strategy's run cost.
struct Run {
    name: &'static str,
    calls: usize,
    successes: usize,
    limited: usize,
    took: Duration,
}

/// One agent of a client without shared state: retries every 429 after `backoff(n)`.
async fn lone_agent(url: String, jitter: bool, seed: u64) -> usize {
    let client = reqwest::Client::new();
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ok = 0;
    while ok < scale().1 {
        let mut n = 0u32;
        loop {
            let r = client.post(&url).body(BODY).send().await;
            if r.is_ok_and(|r| r.status().is_success()) {
                ok += 1;
                break;
            }
            let window = Duration::from_secs(1u64 << n.min(5));
            let wait = if jitter {
                Duration::from_nanos(
                    rng.u64(0..=u64::try_from(window.as_nanos()).unwrap_or(u64::MAX)),
                )
            } else {
                window
            };
            tokio::time::sleep(wait).await;
            n += 1;
        }
    }
    ok
}

async fn lone(name: &'static str, jitter: bool) -> Run {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(RPM))
        .await
        .unwrap();
    let clock = SystemClock;
    let start = clock.now();
    let mut set = tokio::task::JoinSet::new();
    for a in 0..scale().0 {
        set.spawn(lone_agent(fake.url(PATH), jitter, a as u64));
    }
    let successes = set.join_all().await.into_iter().sum();
    Run {
        name,
        calls: fake.attempts().len(),
        successes,
        limited: fake.answered(429),
        took: clock.now() - start,
    }
}

async fn governed() -> Run {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(RPM))
        .await
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let sluice = Sluice::builder()
        .config_toml(&format!(
            "[queue]\nmax_wait_ms = 3600000\n[providers.openai.limits]\nrequests_per_minute = {RPM}\n"
        ))
        .state_dir(state.path())
        .seed(7)
        .build()
        .expect("a host");
    let ex = sluice.executor().clone();
    let call = Call::post("openai", fake.url(PATH), BODY)
        .credential("org")
        .tenant("agents")
        .class(RequestClass::Read)
        .header("content-type", "application/json");
    let clock = SystemClock;
    let start = clock.now();
    let mut set = tokio::task::JoinSet::new();
    for a in 0..scale().0 {
        let (ex, mut call) = (ex.clone(), call.clone());
        call.tenant = Some(format!("agent-{a}"));
        set.spawn(async move {
            let mut ok = 0;
            for _ in 0..scale().1 {
                if matches!(ex.execute(&call).await, Outcome::Succeeded { .. }) {
                    ok += 1;
                }
            }
            ok
        });
    }
    let successes = set.join_all().await.into_iter().sum();
    Run {
        name: "sluice",
        calls: fake.attempts().len(),
        successes,
        limited: fake.answered(429),
        took: clock.now() - start,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("retry_storm: bench");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    println!(
        "{} agents x {} successful calls on one {RPM}-per-minute account ({} calls' worth)",
        scale().0,
        scale().1,
        scale().0 * scale().1
    );
    println!(
        "{:<10} {:>7} {:>10} {:>7} {:>14} {:>9} {:>9}",
        "strategy", "calls", "successes", "429s", "calls/success", "429 share", "time"
    );
    for run in [
        rt.block_on(lone("naive", false)),
        rt.block_on(lone("jittered", true)),
        rt.block_on(governed()),
    ] {
        #[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
        let (per, share) = (
            run.calls as f64 / run.successes as f64,
            run.limited as f64 / run.calls as f64 * 100.0,
        );
        println!(
            "{:<10} {:>7} {:>10} {:>7} {:>14.3} {:>8.2}% {:>8.1}s",
            run.name,
            run.calls,
            run.successes,
            run.limited,
            per,
            share,
            run.took.as_secs_f64()
        );
    }
}
