//! Safe writes at the wire: every claim is checked against what the fake provider received
//! and stored, and against the journal and the audit log on disk.

use std::time::Duration;

use sluice::Sluice;
use sluice::audit::verify;
use sluice::contract::RequestClass;
use sluice::journal::escalations::{Choice, Decision};
use sluice::journal::{JournalError, State};
use sluice::retry::RetryConfig;
use sluice::writes::{WriteError, WriteOutcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{Paths, audit_key, host, write};

const OBJECTS: &str = "/v1/objects";

async fn stripe() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .unwrap()
}

fn stack(plugin: &str, dir: &tempfile::TempDir) -> (Sluice, Paths) {
    let paths = Paths::under(dir.path());
    let retry = RetryConfig {
        backoff_base_ms: 100,
        backoff_cap_ms: 1_000,
        ..RetryConfig::default()
    };
    (host(plugin, &paths, retry, Duration::from_secs(2)), paths)
}

/// The audit log verifies, holds `kinds` in order among its events, and holds nothing
/// secret.
fn audited(paths: &Paths, kinds: &[&str]) -> String {
    let key = audit_key().verifying_key();
    let report = verify(&paths.audit, &key, Some(&paths.witness), true).expect("verifies");
    assert!(report.records > 0);
    let log = std::fs::read_to_string(&paths.audit).unwrap();
    let events: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split("\"event\":\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let mut want = kinds.iter().peekable();
    for e in &events {
        if want.peek() == Some(&e) {
            want.next();
        }
    }
    assert!(
        want.peek().is_none(),
        "the log lacks {:?} in order; it has {events:?}",
        want.collect::<Vec<_>>()
    );
    assert_no_secret(&log, "the audit log");
    log
}

fn assert_no_secret(text: &str, what: &str) {
    let lower = text.to_ascii_lowercase();
    for needle in [
        "sk-live",
        "authorization",
        "bearer",
        "amount=",
        "card-secret",
    ] {
        assert!(!lower.contains(needle), "{what} holds `{needle}`:\n{text}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_stored_and_then_dropped_is_reconciled_to_exactly_one_record() {
    let fake = stripe().await;
    fake.script(OBJECTS, [Fault::StoreThenDrop]);
    let dir = tempfile::tempdir().unwrap();
    let (writes, paths) = stack("stripe", &dir);
    let w = write(
        "stripe",
        "pay-invoice-42",
        "charge",
        &fake.url(OBJECTS),
        RequestClass::UncertainWrite,
        "amount=100&card-secret=x",
    );
    let outcome = writes.write(&w).await.unwrap();
    let WriteOutcome::Succeeded { action, .. } = outcome else {
        panic!("reconciled to success: {outcome:?}")
    };
    assert_eq!(fake.stored().len(), 1, "exactly one record at the provider");
    assert_eq!(action.operation_id.as_deref(), Some("obj_000001"));
    assert_eq!(action.state, State::Succeeded);
    // Both attempts carried the action's one key; the second was a replay.
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(
        attempts
            .iter()
            .all(|a| a.idempotency_key.as_deref() == Some(action.idempotency_key.as_str()))
    );
    assert_eq!(attempts[0].status, None, "the first was dropped");
    audited(
        &paths,
        &[
            "action_requested",
            "action_sent",
            "action_result",
            "reconciliation_required",
            "reconciled",
            "action_sent",
            "action_result",
        ],
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_same_action_with_another_body_is_refused_and_nothing_is_sent() {
    let fake = stripe().await;
    let dir = tempfile::tempdir().unwrap();
    let (writes, _) = stack("stripe", &dir);
    let url = fake.url(OBJECTS);
    let first = write(
        "stripe",
        "t",
        "charge",
        &url,
        RequestClass::IdempotentWrite,
        "a=1",
    );
    writes.write(&first).await.unwrap();
    let other = write(
        "stripe",
        "t",
        "charge",
        &url,
        RequestClass::IdempotentWrite,
        "a=2",
    );
    let e = writes.write(&other).await.unwrap_err();
    assert!(
        matches!(e, WriteError::Journal(JournalError::BodyMismatch { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("`charge`"), "{e}");
    assert_eq!(fake.attempts().len(), 1, "the second body never went out");
    // The same body again is the same action: nothing more is sent either.
    let again = writes.write(&first).await.unwrap();
    assert!(matches!(again, WriteOutcome::Succeeded { .. }));
    assert_eq!(fake.attempts().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn two_concurrent_submits_of_one_action_make_one_send() {
    let fake = stripe().await;
    fake.script(OBJECTS, [Fault::Slow(Duration::from_millis(300))]);
    let dir = tempfile::tempdir().unwrap();
    let (writes, _) = stack("stripe", &dir);
    let w = write(
        "stripe",
        "t",
        "invite-ann",
        &fake.url(OBJECTS),
        RequestClass::IdempotentWrite,
        "user=ann",
    );
    let (a, b) = tokio::join!(writes.write(&w), writes.write(&w));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(fake.attempts().len(), 1, "one send");
    assert_eq!(fake.stored().len(), 1);
    assert!(matches!(a, WriteOutcome::Succeeded { .. }), "{a:?}");
    assert_eq!(a.action().operation_id, b.action().operation_id, "{b:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_certain_refusal_fails_the_action_without_a_second_send() {
    let fake = stripe().await;
    fake.script(
        OBJECTS,
        [Fault::Status {
            status: 400,
            code: "parameter_invalid",
        }],
    );
    let dir = tempfile::tempdir().unwrap();
    let (writes, _) = stack("stripe", &dir);
    let url = fake.url(OBJECTS);
    let w = write(
        "stripe",
        "t",
        "bad",
        &url,
        RequestClass::IdempotentWrite,
        "x=1",
    );
    let outcome = writes.write(&w).await.unwrap();
    assert!(
        matches!(outcome, WriteOutcome::Failed { .. }),
        "{outcome:?}"
    );
    assert_eq!(outcome.action().state, State::Failed);
    assert_eq!(fake.attempts().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_the_plugin_cannot_settle_is_escalated_with_a_sanitized_case_and_a_decision_settles_it()
 {
    let fake = stripe().await;
    // Stored and dropped, then the resend with the same key is dropped too: the plugin's
    // one safe move did not settle it, so a person decides.
    fake.script(OBJECTS, [Fault::StoreThenDrop, Fault::StoreThenDrop]);
    let dir = tempfile::tempdir().unwrap();
    let (writes, paths) = stack("stripe", &dir);
    let url = fake.url(OBJECTS);
    let w = write(
        "stripe",
        "pay-invoice-7",
        "charge",
        &url,
        RequestClass::UncertainWrite,
        "amount=700&card-secret=y",
    );
    let WriteOutcome::Escalated { action, escalation } = writes.write(&w).await.unwrap() else {
        panic!("escalated")
    };
    assert_eq!(action.state, State::Escalated);
    assert_eq!(fake.stored().len(), 1, "one record, however many sends");
    let e = writes.journal().escalations().get(escalation).unwrap();
    assert_no_secret(&e.case_json, "the case");
    let case: serde_json::Value = serde_json::from_str(&e.case_json).unwrap();
    assert_eq!(case["kind"], "uncertain_write");
    assert_eq!(case["goal"], "pay-invoice-7: pay the supplier's invoice");
    assert_eq!(case["endpoint"], "POST /v1/objects");
    assert_eq!(case["idempotency_key"], action.idempotency_key.as_str());
    assert!(case["fingerprint"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(case["attempts"].as_array().unwrap().len(), 2);
    let options: Vec<(&str, bool)> = case["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap(),
                o["may_create_second_side_effect"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        options,
        [
            ("query-existing", false),
            ("retry-same-key", false),
            ("cancel", false),
            ("send-as-new", true)
        ]
    );
    // The operator found the object and asks the provider about it.
    writes
        .journal()
        .escalations()
        .resolve(
            escalation,
            &Decision {
                choice: Choice::QueryExisting,
                decided_by: "ops@example".into(),
                operation_id: Some("obj_000001".into()),
                note: "found it in the dashboard".into(),
            },
            0,
        )
        .unwrap();
    let applied = writes.escalations().apply().await.unwrap();
    let [WriteOutcome::Succeeded { action, .. }] = &applied[..] else {
        panic!("settled by the query: {applied:?}")
    };
    assert_eq!(action.operation_id.as_deref(), Some("obj_000001"));
    assert_eq!(fake.stored().len(), 1);
    let gets = fake.attempts().iter().filter(|a| a.method == "GET").count();
    assert_eq!(gets, 1, "one status query");
    let log = audited(&paths, &["escalated", "decision", "reconciled"]);
    assert!(
        log.contains("ops@example"),
        "the decision names who made it"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_spent_time_budget_escalates_and_the_cancelled_work_never_wakes() {
    let fake = stripe().await;
    let dir = tempfile::tempdir().unwrap();
    let (writes, paths) = stack("stripe", &dir);
    let url = fake.url(OBJECTS);
    // A 429 with Retry-After: 3 holds the credential's scope.
    fake.script(
        OBJECTS,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(3)),
        }],
    );
    let mut warmup = write(
        "stripe",
        "other",
        "w",
        &url,
        RequestClass::IdempotentWrite,
        "n=0",
    );
    warmup.call.deadline = Some(Duration::from_millis(50));
    let refused = writes.write(&warmup).await.unwrap();
    // Every answer refused it and the budget cannot wait out the hold: nothing happened,
    // and a person decides.
    assert!(
        matches!(refused, WriteOutcome::Escalated { .. }),
        "{refused:?}"
    );
    let before = fake.attempts().len();

    // The task's queued work, and then a write whose 1-second budget cannot be met.
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
        "amount=1&card-secret=z",
    );
    late.call.deadline = Some(Duration::from_secs(1));
    let waiting = writes.write(&queued);
    let spent = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        writes.write(&late).await
    };
    let (waiting, spent) = tokio::join!(waiting, spent);
    let WriteOutcome::Escalated { escalation, .. } = spent.unwrap() else {
        panic!("a spent budget escalates")
    };
    let waiting = waiting.unwrap();
    assert!(
        matches!(waiting, WriteOutcome::Cancelled { .. }),
        "{waiting:?}"
    );
    let e = writes.journal().escalations().get(escalation).unwrap();
    assert_no_secret(&e.case_json, "the case");
    let case: serde_json::Value = serde_json::from_str(&e.case_json).unwrap();
    assert_eq!(case["kind"], "time_budget");
    assert_eq!(case["spent"]["time_budget_ms"], 1000);
    let options: Vec<&str> = case["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["continue-access", "cancel"]);

    // The operator cancels; past the hold, and after a restart, nothing of the task wakes.
    writes
        .journal()
        .escalations()
        .resolve(
            escalation,
            &Decision {
                choice: Choice::Cancel,
                decided_by: "ops@example".into(),
                operation_id: None,
                note: String::new(),
            },
            0,
        )
        .unwrap();
    drop(writes);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (restarted, _) = stack("stripe", &dir);
    let resumed = restarted.recover().await.unwrap();
    assert!(
        resumed.iter().all(|o| o.action().task != "task-9"),
        "{resumed:?}"
    );
    assert!(matches!(
        restarted.write(&queued).await.unwrap(),
        WriteOutcome::Cancelled { .. }
    ));
    assert!(
        restarted
            .write(&write(
                "stripe",
                "task-9",
                "c",
                &url,
                RequestClass::IdempotentWrite,
                "n=3"
            ))
            .await
            .is_err()
    );
    let keys: Vec<String> = restarted
        .journal()
        .all()
        .unwrap()
        .into_iter()
        .filter(|a| a.task == "task-9")
        .map(|a| a.idempotency_key)
        .collect();
    assert_eq!(keys.len(), 2);
    for key in &keys {
        assert_eq!(
            fake.attempts_with_key(key),
            0,
            "no attempt of the task went out"
        );
    }
    assert!(fake.attempts().len() >= before);
    audited(&paths, &["escalated", "cancelled"]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_restarted_host_settles_a_sent_write_with_its_original_key() {
    let fake = stripe().await;
    let dir = tempfile::tempdir().unwrap();
    let url = fake.url(OBJECTS);
    let w = write(
        "stripe",
        "t",
        "charge",
        &url,
        RequestClass::UncertainWrite,
        "a=1",
    );
    // The first host stops while its attempt hangs: the journal holds it `sent`, and
    // nobody knows whether the provider acted.
    fake.script(OBJECTS, [Fault::Hang]);
    {
        let (writes, _) = stack("stripe", &dir);
        let first = tokio::time::timeout(Duration::from_millis(500), writes.write(&w)).await;
        assert!(first.is_err(), "the first host stopped mid-send");
    }
    let key = fake.attempts()[0].idempotency_key.clone().unwrap();
    let (restarted, _) = stack("stripe", &dir);
    let resumed = restarted.recover().await.unwrap();
    let [WriteOutcome::Succeeded { action, .. }] = &resumed[..] else {
        panic!("{resumed:?}")
    };
    assert_eq!(action.idempotency_key, key, "the original key");
    assert_eq!(fake.attempts_with_key(&key), 2);
    assert_eq!(fake.stored().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_provider_without_reconcile_support_goes_to_a_person_not_to_a_resend() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Ietf))
        .await
        .unwrap();
    fake.script(OBJECTS, [Fault::StoreThenDrop]);
    let dir = tempfile::tempdir().unwrap();
    let (writes, paths) = stack("ietf", &dir);
    let url = fake.url(OBJECTS);
    let w = write(
        "ietf",
        "t",
        "post",
        &url,
        RequestClass::UncertainWrite,
        "x=1",
    );
    let outcome = writes.write(&w).await.unwrap();
    let WriteOutcome::Escalated { escalation, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(fake.attempts().len(), 1, "never resent");
    let case = writes
        .journal()
        .escalations()
        .get(escalation)
        .unwrap()
        .case_json;
    assert!(case.contains("cannot check this write"), "{case}");
    audited(
        &paths,
        &["action_sent", "reconciliation_required", "escalated"],
    );
}

#[tokio::test(flavor = "current_thread")]
async fn continued_access_sends_the_escalated_write_once_with_its_key() {
    let fake = stripe().await;
    fake.script(
        OBJECTS,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(1)),
        }],
    );
    let dir = tempfile::tempdir().unwrap();
    let (writes, paths) = stack("stripe", &dir);
    let url = fake.url(OBJECTS);
    let mut w = write(
        "stripe",
        "t",
        "charge",
        &url,
        RequestClass::IdempotentWrite,
        "a=1",
    );
    w.call.deadline = Some(Duration::from_millis(200));
    let WriteOutcome::Escalated { action, escalation } = writes.write(&w).await.unwrap() else {
        panic!("a spent budget escalates")
    };
    assert!(fake.stored().is_empty(), "the 429 stored nothing");
    let approval = writes
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
    assert_eq!((approval.kind, approval.action_id), ("access", None));
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let applied = writes.escalations().apply().await.unwrap();
    let [WriteOutcome::Succeeded { action: done, .. }] = &applied[..] else {
        panic!("{applied:?}")
    };
    assert_eq!(done.id, action.id);
    assert_eq!(fake.stored().len(), 1);
    assert_eq!(fake.attempts_with_key(&action.idempotency_key), 2);
    assert!(
        writes.escalations().apply().await.unwrap().is_empty(),
        "applied once"
    );
    audited(
        &paths,
        &[
            "escalated",
            "access_approved",
            "action_sent",
            "action_result",
        ],
    );
}
