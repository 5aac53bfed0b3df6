//! Writes blocked by a spent provider quota (a billing or daily one): never `failed`, never
//! a silent wait — a person chooses to wait, raise the quota, change the plan, or cancel.

use std::time::Duration;

use sluice::Sluice;
use sluice::contract::RequestClass;
use sluice::execute::Outcome;
use sluice::journal::State;
use sluice::journal::escalations::{Choice, Decision, Kind};
use sluice::retry::RetryConfig;
use sluice::writes::WriteOutcome;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::{Paths, host, write};

const OBJECTS: &str = "/v1/objects";

fn spent() -> Fault {
    Fault::Status {
        status: 429,
        code: "insufficient_quota",
    }
}

fn decide(choice: Choice) -> Decision {
    Decision {
        choice,
        decided_by: "ops@example".into(),
        operation_id: None,
        note: String::new(),
    }
}

/// An OpenAI-style provider whose next answer on [`OBJECTS`] says the quota is spent, and a
/// host in front of it (its state in the returned directory).
async fn spent_account() -> (FakeProvider, Sluice, tempfile::TempDir) {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    fake.script(OBJECTS, [spent()]);
    let dir = tempfile::tempdir().unwrap();
    let writes = host(
        "openai",
        &Paths::under(dir.path()),
        RetryConfig::default(),
        Duration::from_secs(2),
    );
    (fake, writes, dir)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_write_refused_by_a_spent_quota_escalates_and_raising_the_quota_sends_it_once() {
    let (fake, writes, _dir) = spent_account().await;
    let w = write(
        "openai",
        "t",
        "upload",
        &fake.url(OBJECTS),
        RequestClass::IdempotentWrite,
        "a=1",
    );

    let outcome = writes.write(&w).await.unwrap();
    let WriteOutcome::Escalated { action, escalation } = outcome else {
        panic!("a spent quota goes to a person, not to `failed`: {outcome:?}")
    };
    assert_eq!(action.state, State::Escalated);
    assert!(fake.stored().is_empty());
    let e = writes.journal().escalations().get(escalation).unwrap();
    assert_eq!(e.kind, Kind::QuotaExhausted);
    for option in ["wait", "raise-quota", "change-plan", "cancel"] {
        assert!(
            e.case_json.contains(option),
            "the case offers `{option}`:\n{}",
            e.case_json
        );
    }

    // The scope is held: a read of the same credential does not reach the provider.
    let mut read = w.call.clone();
    read.method = "GET".into();
    read.class = RequestClass::Read;
    read.deadline = Some(Duration::from_secs(5));
    assert!(matches!(
        writes.executor().execute(&read).await,
        Outcome::Ended(_)
    ));
    assert_eq!(fake.attempts_on(OBJECTS), 1);

    writes
        .journal()
        .escalations()
        .resolve(escalation, &decide(Choice::RaiseQuota), 0)
        .unwrap();
    let applied = writes.escalations().apply().await.unwrap();
    let [WriteOutcome::Succeeded { action: done, .. }] = &applied[..] else {
        panic!("{applied:?}")
    };
    assert_eq!(done.id, action.id);
    assert_eq!(fake.stored().len(), 1, "one effect");
    assert_eq!(
        fake.attempts_with_key(&action.idempotency_key),
        2,
        "the same key, twice"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_write_held_back_by_a_spent_quota_escalates_as_such_and_changing_the_plan_sends_nothing()
{
    let (fake, writes, _dir) = spent_account().await;
    let mut w = write(
        "openai",
        "t",
        "upload",
        &fake.url(OBJECTS),
        RequestClass::IdempotentWrite,
        "a=1",
    );

    // A read meets the spent quota first; the scope is held for the configured time.
    let mut read = w.call.clone();
    read.method = "GET".into();
    read.class = RequestClass::Read;
    assert!(matches!(
        writes.executor().execute(&read).await,
        Outcome::Ended(_)
    ));

    w.call.deadline = Some(Duration::from_secs(30));
    let outcome = writes.write(&w).await.unwrap();
    let WriteOutcome::Escalated { action, escalation } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        writes.journal().escalations().get(escalation).unwrap().kind,
        Kind::QuotaExhausted
    );
    assert_eq!(action.attempts, 0, "nothing was sent");

    writes
        .journal()
        .escalations()
        .resolve(escalation, &decide(Choice::ChangePlan), 0)
        .unwrap();
    assert!(writes.escalations().apply().await.unwrap().is_empty());
    assert_eq!(
        writes.journal().get(action.id).unwrap().state,
        State::Cancelled
    );
    assert!(
        !writes.journal().is_cancelled("t").unwrap(),
        "the task goes on"
    );
    tokio::time::sleep(Duration::from_secs(3_600)).await;
    assert_eq!(
        fake.attempts_on(OBJECTS),
        1,
        "only the read reached the provider"
    );
    assert!(fake.stored().is_empty());
}
