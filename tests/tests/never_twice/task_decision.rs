//! A task whose time budget is spent waits for a person, in the journal: a restarted host
//! sends nothing more for it until the decision is applied — then it goes on, once.

use std::time::Duration;

use sluice::contract::RequestClass;
use sluice::journal::escalations::{Choice, Decision};
use sluice::retry::RetryConfig;
use sluice::writes::WriteOutcome;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{Paths, host, write};

const WRITES: &str = "/v1/objects";

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_task_awaiting_a_time_budget_decision_sends_nothing_after_a_restart_until_it_is_decided()
{
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::under(dir.path());
    let url = fake.url(WRITES);
    let retry = RetryConfig::default;

    // A 429 that asks for 30 s, and a write that may take 2 s: its budget is spent.
    fake.script(
        WRITES,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(30)),
        }],
    );
    let mut first = write(
        "stripe",
        "report",
        "a",
        &url,
        RequestClass::IdempotentWrite,
        "n=1",
    );
    first.call.deadline = Some(Duration::from_secs(2));
    let escalation = {
        let sluice = host("stripe", &paths, retry(), Duration::from_secs(5));
        let WriteOutcome::Escalated { escalation, .. } = sluice.write(&first).await.unwrap() else {
            panic!("the spent time budget escalates")
        };
        sluice.close().unwrap();
        escalation
    };
    assert_eq!(fake.attempts().len(), 1, "the one refused attempt");

    // Restarted: the task's next write is held, and nothing reaches the provider, even
    // after the provider's wait is over.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let sluice = host("stripe", &paths, retry(), Duration::from_secs(5));
    let second = write(
        "stripe",
        "report",
        "b",
        &url,
        RequestClass::IdempotentWrite,
        "n=2",
    );
    let held = sluice.write(&second).await.unwrap();
    assert!(matches!(held, WriteOutcome::Deferred { .. }), "{held:?}");
    let recovered = sluice.recover().await.unwrap();
    assert!(
        recovered
            .iter()
            .all(|o| !matches!(o, WriteOutcome::Succeeded { .. })),
        "{recovered:?}"
    );
    assert_eq!(
        fake.attempts().len(),
        1,
        "nothing sent while the decision is pending"
    );
    // Another task is not held.
    let other = write(
        "stripe",
        "other",
        "c",
        &url,
        RequestClass::IdempotentWrite,
        "n=3",
    );
    assert!(matches!(
        sluice.write(&other).await.unwrap(),
        WriteOutcome::Succeeded { .. }
    ));

    // A person lets the task go on: the escalated write goes, then the held one, once each.
    sluice
        .journal()
        .escalations()
        .resolve(
            escalation,
            &Decision {
                choice: Choice::ContinueAccess,
                decided_by: "ops@example".into(),
                operation_id: None,
                note: String::new(),
            },
            0,
        )
        .unwrap();
    let applied = sluice.escalations().apply().await.unwrap();
    assert!(
        matches!(applied[..], [WriteOutcome::Succeeded { .. }]),
        "{applied:?}"
    );
    let resumed = sluice.write(&second).await.unwrap();
    assert!(
        matches!(resumed, WriteOutcome::Succeeded { .. }),
        "{resumed:?}"
    );
    assert_eq!(fake.stored().len(), 3, "{:?}", fake.stored());
    assert_eq!(
        fake.attempts().len(),
        4,
        "one refused attempt, then one each"
    );
}
