//! Writes to a provider that takes no idempotency key (GitHub's create endpoints), settled by
//! a lookup, at the wire: the fake stores every POST it accepts as a new issue, so a blind
//! resend would show as a duplicate in its ledger. An uncertain write is looked for by the
//! client reference its body carries; found, it is done; not found twice, a provider timeout
//! apart, it is sent again; anything else goes to a person.

use std::time::Duration;

use sluice::Sluice;
use sluice::contract::RequestClass;
use sluice::journal::{State, client_reference};
use sluice::retry::RetryConfig;
use sluice::writes::{Write, WriteOutcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Stored, Style};
use sluice_tests::crash_run::Provider;
use sluice_tests::stack::{Paths, host_builder, write};

const ISSUES: &str = "/repos/acme/ledger/issues";
const TASK: &str = "close-the-books";

async fn github() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::GitHub))
        .await
        .unwrap()
}

/// A host reading GitHub, whose attempts wait `attempt_timeout` for an answer and which
/// believes a lookup's "not found" only when a second one `provider_timeout` later agrees.
fn stack(dir: &tempfile::TempDir, attempt_timeout: Duration, provider_timeout: Duration) -> Sluice {
    let retry = RetryConfig {
        backoff_base_ms: 100,
        backoff_cap_ms: 1_000,
        ..RetryConfig::default()
    };
    host_builder("github", &Paths::under(dir.path()), retry, attempt_timeout)
        .provider_timeout(provider_timeout)
        .build()
        .expect("a host")
}

/// The issue of action `action`, its body carrying the action's client reference.
fn issue(fake: &FakeProvider, action: &str) -> Write {
    let body = Provider::GitHub.body(TASK, action, 1);
    let mut w = write(
        "github",
        TASK,
        action,
        &fake.url(ISSUES),
        RequestClass::UncertainWrite,
        &body,
    );
    w.call.headers = vec![("content-type".into(), "application/json".into())];
    w
}

fn posts(fake: &FakeProvider) -> usize {
    fake.attempts()
        .iter()
        .filter(|a| a.method == "POST")
        .count()
}

fn lookups(fake: &FakeProvider) -> usize {
    fake.attempts()
        .iter()
        .filter(|a| a.method == "GET" && a.path == ISSUES)
        .count()
}

fn of_action<'s>(stored: &'s [Stored], action: &str) -> Vec<&'s Stored> {
    let reference = client_reference(TASK, action);
    stored
        .iter()
        .filter(|s| s.reference.as_deref() == Some(reference.as_str()))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn an_issue_stored_and_then_dropped_is_found_by_its_reference_not_created_again() {
    let fake = github().await;
    fake.script_writes(ISSUES, [Fault::StoreThenDrop]);
    let dir = tempfile::tempdir().unwrap();
    let writes = stack(&dir, Duration::from_secs(2), Duration::from_secs(1));
    let outcome = writes.write(&issue(&fake, "report")).await.unwrap();
    let WriteOutcome::Succeeded { action, .. } = outcome else {
        panic!("found by the lookup: {outcome:?}")
    };
    let stored = fake.stored();
    assert_eq!(of_action(&stored, "report").len(), 1, "one issue");
    assert_eq!(fake.duplicates(), 0);
    assert_eq!(action.operation_id.as_deref(), Some(stored[0].id.as_str()));
    assert_eq!((posts(&fake), lookups(&fake)), (1, 1), "one send, one look");
}

#[tokio::test(flavor = "current_thread")]
async fn an_issue_that_was_never_created_is_looked_for_twice_then_sent_once() {
    let fake = github().await;
    // A 503 to a write that has no key: the provider may or may not have acted (this one
    // did not).
    fake.script_writes(ISSUES, [Fault::Unavailable { retry_after: None }]);
    let dir = tempfile::tempdir().unwrap();
    let writes = stack(&dir, Duration::from_secs(2), Duration::from_millis(300));
    let outcome = writes.write(&issue(&fake, "report")).await.unwrap();
    let WriteOutcome::Succeeded { action, .. } = outcome else {
        panic!("sent once it was surely not there: {outcome:?}")
    };
    assert_eq!(of_action(&fake.stored(), "report").len(), 1);
    assert_eq!(fake.duplicates(), 0);
    assert_eq!(
        action.operation_id.as_deref(),
        Some(fake.stored()[0].id.as_str())
    );
    assert_eq!(lookups(&fake), 2, "not believed until a second look agreed");
    assert_eq!(posts(&fake), 2);
    let attempts = fake.attempts();
    let gap = attempts[2].at - attempts[1].at;
    assert!(
        gap >= Duration::from_millis(300),
        "looked again after {gap:?}"
    );
    let log = std::fs::read_to_string(Paths::under(dir.path()).audit).unwrap();
    assert!(
        log.contains("not found yet: looking again in 300 ms"),
        "{log}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_attempt_still_at_the_provider_is_found_by_the_second_look_not_sent_again() {
    // The provider takes two seconds to create each issue; the host stops waiting after
    // 300 ms, so its first look comes while the attempt is still at the provider.
    let slow = || Fault::Slow(Duration::from_secs(2));
    let attempt_timeout = Duration::from_millis(300);

    // A host that believed the first look would resend, and the provider would hold two:
    // the race is real, and the fake counts it.
    let fake = github().await;
    fake.script_writes(ISSUES, [slow()]);
    let dir = tempfile::tempdir().unwrap();
    let credulous = stack(&dir, attempt_timeout, Duration::ZERO);
    credulous.write(&issue(&fake, "report")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fake.duplicates(), 1, "{:?}", fake.stored());

    // Looking again a provider timeout later finds the first attempt's issue.
    let fake = github().await;
    fake.script_writes(ISSUES, [slow()]);
    let dir = tempfile::tempdir().unwrap();
    let writes = stack(&dir, attempt_timeout, Duration::from_secs(3));
    let outcome = writes.write(&issue(&fake, "report")).await.unwrap();
    let WriteOutcome::Succeeded { action, .. } = outcome else {
        panic!("found by the second look: {outcome:?}")
    };
    assert_eq!(fake.duplicates(), 0);
    assert_eq!(of_action(&fake.stored(), "report").len(), 1);
    assert_eq!((posts(&fake), lookups(&fake)), (1, 2));
    assert_eq!(
        action.operation_id.as_deref(),
        Some(fake.stored()[0].id.as_str())
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_whose_body_lacks_its_reference_goes_to_a_person_not_to_a_resend() {
    let fake = github().await;
    fake.script_writes(ISSUES, [Fault::StoreThenDrop]);
    let dir = tempfile::tempdir().unwrap();
    let writes = stack(&dir, Duration::from_secs(2), Duration::from_millis(300));
    let mut w = issue(&fake, "report");
    w.call.body = br#"{"title":"Invoice 1 paid","body":"no reference here"}"#
        .to_vec()
        .into();
    let outcome = writes.write(&w).await.unwrap();
    let WriteOutcome::Escalated { action, escalation } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(action.state, State::Escalated);
    assert_eq!(
        (posts(&fake), lookups(&fake)),
        (1, 0),
        "never resent, never guessed"
    );
    assert_eq!(fake.stored().len(), 1);
    let case = writes
        .journal()
        .escalations()
        .get(escalation)
        .unwrap()
        .case_json;
    assert!(case.contains("carries no client reference"), "{case}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_repository_with_more_issues_than_one_page_settles_nothing_and_goes_to_a_person() {
    let fake = github().await;
    // 101 other issues: the newest 100 fill the one page a lookup reads.
    let client = reqwest::Client::new();
    for i in 0..101 {
        let r = client
            .post(fake.url(ISSUES))
            .body(format!(r#"{{"title":"other {i}","body":"x"}}"#))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
    }
    fake.script_writes(ISSUES, [Fault::Unavailable { retry_after: None }]);
    let dir = tempfile::tempdir().unwrap();
    let writes = stack(&dir, Duration::from_secs(2), Duration::from_millis(300));
    let outcome = writes.write(&issue(&fake, "report")).await.unwrap();
    let WriteOutcome::Escalated { escalation, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(of_action(&fake.stored(), "report").len(), 0);
    assert_eq!(lookups(&fake), 1);
    assert_eq!(posts(&fake), 101 + 1, "the write was sent once");
    let case = writes
        .journal()
        .escalations()
        .get(escalation)
        .unwrap()
        .case_json;
    assert!(case.contains("the list goes on"), "{case}");
}
