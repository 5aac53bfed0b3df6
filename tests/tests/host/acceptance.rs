//! The seed's acceptance run, step by step, at the wire, on virtual time (tokio's paused
//! clock: the provider, the host and every timer move together, so the 10-second
//! `Retry-After` takes no real time):
//!
//! 1. three agents on one scope; a 429 with `Retry-After: 10` delays the whole scope, and
//!    the resumption is spread, not a wave;
//! 2. a write whose connection drops after the provider committed it is reconciled to
//!    exactly one record;
//! 3. an exhausted time budget produces a sanitized escalation, and the cancelled work never
//!    wakes;
//! 4. a restarted host resumes reconciliation with the original key.

use std::time::Duration;

use sluice::Sluice;
use sluice::clock::tokio_now;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::journal::State;
use sluice::retry::RetryConfig;
use sluice::writes::WriteOutcome;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{Paths, SECRET, host, write};

const READS: &str = "/v1/balance";
const WRITES: &str = "/v1/objects";

fn stack(dir: &tempfile::TempDir) -> Sluice {
    let retry = RetryConfig {
        backoff_base_ms: 200,
        backoff_cap_ms: 2_000,
        ..RetryConfig::default()
    };
    host(
        "stripe",
        &Paths::under(dir.path()),
        retry,
        Duration::from_secs(5),
    )
}

fn read(fake: &FakeProvider) -> Call {
    let mut c = write("stripe", "", "", &fake.url(READS), RequestClass::Read, "").call;
    c.method = "GET".into();
    c
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_seed_acceptance_run() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let writes = stack(&dir);
    let url = fake.url(WRITES);

    // 1. Three agents on one scope; the first meets a 429 with Retry-After: 10.
    fake.script(
        READS,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(10)),
        }],
    );
    let ex = writes.executor();
    let c = read(&fake);
    let later = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        tokio::join!(ex.execute(&c), ex.execute(&c))
    };
    let (a, (b, d)) = tokio::join!(ex.execute(&c), later);
    for o in [a, b, d] {
        assert!(matches!(o, Outcome::Succeeded { .. }), "{o:?}");
    }
    let reads: Vec<_> = fake
        .attempts()
        .into_iter()
        .filter(|x| x.path == READS)
        .collect();
    assert_eq!(reads.len(), 4, "three calls, one retry: {reads:?}");
    assert_eq!(reads[0].status, Some(429));
    for r in &reads[1..] {
        assert!(
            r.at >= reads[0].at + Duration::from_secs(10),
            "an attempt {:?} after the 429, inside its Retry-After",
            r.at - reads[0].at
        );
    }
    let mut resumed: Vec<Duration> = reads[1..].iter().map(|r| r.at).collect();
    resumed.sort();
    resumed.dedup();
    assert_eq!(
        resumed.len(),
        3,
        "the resumption is spread, not one instant"
    );

    // 2. A write stored and then dropped: reconciled to exactly one record.
    fake.script(WRITES, [Fault::StoreThenDrop]);
    let pay = write(
        "stripe",
        "pay-invoice-42",
        "charge",
        &url,
        RequestClass::UncertainWrite,
        "amount=4200&card-secret=x",
    );
    let WriteOutcome::Succeeded { action, .. } = writes.write(&pay).await.unwrap() else {
        panic!("reconciled")
    };
    assert_eq!(fake.stored().len(), 1);
    assert_eq!(fake.attempts_with_key(&action.idempotency_key), 2);

    // 3. A time budget that cannot be met: a sanitized escalation; the task's queued work
    //    is cancelled and never wakes.
    fake.script(
        WRITES,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(30)),
        }],
    );
    let mut probe = write(
        "stripe",
        "probe",
        "p",
        &url,
        RequestClass::IdempotentWrite,
        "n=0",
    );
    probe.call.deadline = Some(Duration::from_millis(100));
    let _ = writes.write(&probe).await.unwrap();
    let queued = write(
        "stripe",
        "task-9",
        "b",
        &url,
        RequestClass::IdempotentWrite,
        "n=2",
    );
    let mut late = write(
        "stripe",
        "task-9",
        "a",
        &url,
        RequestClass::IdempotentWrite,
        "n=1",
    );
    late.call.deadline = Some(Duration::from_secs(2));
    let spent = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        writes.write(&late).await
    };
    let (queued_outcome, spent) = tokio::join!(writes.write(&queued), spent);
    let WriteOutcome::Escalated { escalation, .. } = spent.unwrap() else {
        panic!("escalated")
    };
    assert!(matches!(
        queued_outcome.unwrap(),
        WriteOutcome::Cancelled { .. }
    ));
    let case = writes
        .journal()
        .escalations()
        .get(escalation)
        .unwrap()
        .case_json;
    for secret in [SECRET, "authorization", "card-secret", "n=1"] {
        assert!(!case.contains(secret), "the case holds `{secret}`: {case}");
    }
    let log = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    for secret in [SECRET, "authorization", "card-secret"] {
        assert!(!log.contains(secret), "the audit log holds `{secret}`");
    }
    let before = fake.attempts().len();
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        fake.attempts().len(),
        before,
        "the cancelled work never woke"
    );

    // 4. A host stops mid-write; the restarted one settles it with the original key.
    fake.script(WRITES, [Fault::Hang]);
    let refund = write(
        "stripe",
        "refund-7",
        "refund",
        &url,
        RequestClass::UncertainWrite,
        "r=7",
    );
    let started = tokio_now();
    let first = tokio::time::timeout(Duration::from_secs(1), writes.write(&refund)).await;
    assert!(first.is_err(), "the host stopped mid-send");
    assert!(tokio_now() - started >= Duration::from_secs(1));
    drop(writes);
    let key = fake
        .attempts()
        .last()
        .and_then(|a| a.idempotency_key.clone())
        .unwrap();
    let restarted = stack(&dir);
    let resumed = restarted.recover().await.unwrap();
    let settled = resumed
        .iter()
        .find(|o| o.action().task == "refund-7")
        .expect("the refund was resumed");
    assert!(
        matches!(settled, WriteOutcome::Succeeded { .. }),
        "{settled:?}"
    );
    assert_eq!(settled.action().idempotency_key, key);
    assert_eq!(settled.action().state, State::Succeeded);
    assert_eq!(fake.attempts_with_key(&key), 2, "the original key, twice");
    let refunds = fake
        .stored()
        .into_iter()
        .filter(|s| s.idempotency_key.as_deref() == Some(key.as_str()))
        .count();
    assert_eq!(refunds, 1);
}
