//! What a call waiting in the queue costs: the size of the future [`Sluice::execute`] returns
//! (which the caller's task holds, inline) and the heap the host keeps for the call while it
//! waits, counted by a global allocator that wraps the system's.
//!
//! The calls are made ready first (their `Call` values, the caller's own), then each is
//! spawned as a task that awaits `Sluice::execute` on a provider that takes one request at a
//! time and never answers the first: every other call waits in the queue. The live heap
//! after, minus before, divided by the count, is a queued call's whole cost: tokio's task
//! (its header and the future, inline) plus what the host allocates for the call — its
//! request, plan and queue place. The caller's part of it is measured first, the same way:
//! as many tasks holding the same calls and an `Arc` of the host, awaiting nothing of the
//! host's. The rest is sluice's own. The future's size is printed beside them.
//!
//! Run: `cargo bench -p sluice --features internals,bundled --bench call_memory` (100 000 calls;
//! without `--bench`, as `cargo test --benches` runs it, 1 000). Either way it fails when
//! sluice's own part is over the 2 KB goal.

#[path = "support/counting.rs"]
mod counting;

use std::sync::Arc;
use std::time::Duration;

use counting::live;
use sluice::{Call, RequestClass, Sluice};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};

/// The most bytes of sluice's own a waiting call may take: the goal. Past it, the bench
/// fails (CI runs it, with 1 000 calls), so that a change that grows the wait is seen.
const OWN_GOAL: f64 = 2048.0;

/// A chat as an agent sends it.
const BODY: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one word."}],"max_tokens":16}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = if std::env::args().any(|a| a == "--bench") {
        100_000
    } else {
        1_000
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let provider = FakeProvider::start(FakeConfig::new(Style::OpenAi)).await?;
        provider.script("/v1/chat/completions", [Fault::Hang]);
        let dir = tempfile::tempdir()?;
        // One request at a time, and room to queue every call for as long as it takes.
        let config = format!(
            r#"
            state_dir = "{dir}/state"
            [queue]
            max_queued = 10000000
            max_queued_per_scope = 10000000
            max_wait_ms = 86400000
            [providers.openai]
            plugin = "openai"
            base_url = "{url}"
            [providers.openai.limits]
            concurrent_requests = 1
            "#,
            dir = dir.path().display(),
            url = provider.url(""),
        );
        let sluice = Arc::new(Sluice::builder().config_toml(&config).build()?);
        let call = Call::post("openai", "/v1/chat/completions", BODY)
            .tenant("acme")
            .class(RequestClass::Read)
            .header("content-type", "application/json");
        let future_bytes = size_of_val(&sluice.execute(&call));

        // The caller's part: the same tasks holding the same calls, waiting on nothing of
        // sluice's (tokio's task and the caller's own future, the `Call` inline in it).
        let callers = callers_only(&sluice, &call, count).await;

        let calls: Vec<Call> = (0..count).map(|_| call.clone()).collect();
        let before = live();
        let mut tasks = Vec::with_capacity(count);
        for call in calls {
            let sluice = sluice.clone();
            tasks.push(tokio::spawn(async move { sluice.execute(&call).await }));
        }
        // Each task runs until its call waits in the queue, but the first, which is sent.
        let waiting = loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let queued = sluice.scopes().queued;
            if queued + 1 >= count as u64 {
                break queued;
            }
        };
        let grown = live().saturating_sub(before);
        #[allow(clippy::cast_precision_loss, reason = "byte counts far below 2^52")]
        let each = grown as f64 / count as f64;
        #[allow(clippy::cast_precision_loss, reason = "byte counts far below 2^52")]
        let caller = callers as f64 / count as f64;
        let own = each - caller;
        println!(
            "{waiting} calls waiting in the queue: {each:.0} bytes each, of which sluice's own \
             {own:.0} and the caller's task {caller:.0} (the future Sluice::execute returns: \
             {future_bytes} bytes, held inline in its task)",
        );
        for t in tasks {
            t.abort();
        }
        if own > OWN_GOAL {
            eprintln!(
                "sluice's own memory per waiting call is {own:.0} bytes, over the goal of \
                 {OWN_GOAL} (BENCHMARKS.md, \"A call waiting in the queue\"): find what the \
                 wait's futures grew by with `RUSTC_BOOTSTRAP=1 cargo rustc -p sluice --lib \
                 --features internals -- -Zprint-type-sizes`"
            );
            std::process::exit(1);
        }
        Ok(())
    })
}

/// The live heap `count` tasks take that each hold an `Arc` of the host and a `Call`, as the
/// measured tasks do, but wait on nothing of the host's: what a caller pays for its own task
/// whatever it awaits. The tasks are gone when it returns.
async fn callers_only(sluice: &Arc<Sluice>, call: &Call, count: usize) -> usize {
    let calls: Vec<Call> = (0..count).map(|_| call.clone()).collect();
    let before = live();
    let mut tasks = Vec::with_capacity(count);
    for call in calls {
        let sluice = sluice.clone();
        tasks.push(tokio::spawn(async move {
            let held = (sluice, call);
            std::future::pending::<()>().await;
            drop(held);
        }));
    }
    tokio::task::yield_now().await;
    let grown = live().saturating_sub(before);
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        // Cancelled, and freed once awaited.
        let _ = t.await;
    }
    grown
}
