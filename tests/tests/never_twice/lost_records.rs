//! Never twice, whatever happens to the journal: a journal that lost records the audit log
//! proves it had — restored from an older copy, another host's copied in — is refused at
//! start, and accepted only on the operator's word, with what it lost marked `lost` (never
//! sent; a resubmit goes to a person). A write refused before its first byte is over: no
//! restart sends it; only its agent's resubmit does. Every case runs against a provider
//! that ignores idempotency keys (every request it stores is a new side effect), and counts
//! what it stored.

use std::path::Path;
use std::time::Duration;

use sluice::BuildError;
use sluice::contract::RequestClass;
use sluice::journal::State;
use sluice::retry::RetryConfig;
use sluice::writes::witnesses::{Disagreement, WitnessError};
use sluice::writes::{Write, WriteOutcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::{Paths, host_builder, write};

const OBJECTS: &str = "/v1/objects";

/// A provider that ignores idempotency keys: every POST it accepts is a new object.
async fn keyless() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::GitHub))
        .await
        .unwrap()
}

fn retry() -> RetryConfig {
    RetryConfig {
        backoff_base_ms: 50,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    }
}

fn build(paths: &Paths, accept: bool) -> Result<sluice::Sluice, BuildError> {
    host_builder("stripe", paths, retry(), Duration::from_secs(2))
        .fresh_journal(accept)
        .build()
}

fn pay(fake: &FakeProvider, action: &str) -> Write {
    write(
        "stripe",
        "acme/invoices",
        action,
        &fake.url(OBJECTS),
        RequestClass::UncertainWrite,
        &format!("amount=100&action={action}"),
    )
}

fn copy_journal(from: &Path, to: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let name = format!("journal.sqlite{suffix}");
        let _ = std::fs::remove_file(to.join(&name));
        if from.join(&name).exists() {
            std::fs::copy(from.join(&name), to.join(&name)).unwrap();
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_journal_restored_from_an_older_copy_is_refused_and_what_it_lost_is_never_sent() {
    let fake = keyless().await;
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::under(&dir.path().join("state"));
    let backup = dir.path().join("backup");
    std::fs::create_dir_all(&backup).unwrap();

    let host = build(&paths, false).unwrap();
    let first = host.writes().write(&pay(&fake, "pay-1")).await.unwrap();
    assert!(matches!(first, WriteOutcome::Succeeded { .. }), "{first:?}");
    drop(host);
    copy_journal(&paths.dir, &backup); // the operator's snapshot
    let host = build(&paths, false).unwrap();
    let second = host.writes().write(&pay(&fake, "pay-2")).await.unwrap();
    assert!(
        matches!(second, WriteOutcome::Succeeded { .. }),
        "{second:?}"
    );
    drop(host);
    assert_eq!(fake.stored().len(), 2);

    // The snapshot is put back: it knows pay-1, not pay-2.
    copy_journal(&backup, &paths.dir);
    let refused = build(&paths, false).unwrap_err();
    let BuildError::Witnesses(WitnessError::Disagree(Disagreement::Behind { at, logged, .. })) =
        &refused
    else {
        panic!("refused for the journal's lag: {refused}")
    };
    assert!(at < logged, "{refused}");
    let said = refused.to_string();
    assert!(said.contains("behind the audit log"), "{said}");
    assert!(said.contains("--fresh-journal"), "{said}");

    // Accepted on the operator's word: pay-2 is known lost; the agent's resubmit of it goes
    // to a person, and pay-1's is answered from the journal. Nothing is stored again.
    let host = build(&paths, true).unwrap();
    let again = host.writes().write(&pay(&fake, "pay-2")).await.unwrap();
    let WriteOutcome::Escalated { action, escalation } = &again else {
        panic!("a lost action goes to a person: {again:?}")
    };
    assert_eq!(action.state, State::Escalated);
    let case = host.journal().escalations().get(*escalation).unwrap();
    assert_eq!(case.kind.name(), "record_lost");
    let replay = host.writes().write(&pay(&fake, "pay-1")).await.unwrap();
    assert!(
        matches!(replay, WriteOutcome::Succeeded { replayed: true, .. }),
        "{replay:?}"
    );
    drop(host);
    assert_eq!(fake.stored().len(), 2, "nothing was done twice");

    // The acceptance is recorded, and the next start agrees without the flag.
    let log = std::fs::read_to_string(&paths.audit).unwrap();
    assert!(log.contains(r#""event":"journal_accepted""#), "{log}");
    build(&paths, false).expect("the journal and the log agree again");
}

#[tokio::test(flavor = "current_thread")]
async fn another_host_s_journal_copied_in_is_refused() {
    let fake = keyless().await;
    let dir = tempfile::tempdir().unwrap();
    let ours = Paths::under(&dir.path().join("ours"));
    let theirs = Paths::under(&dir.path().join("theirs"));
    for (paths, action) in [(&ours, "pay-1"), (&theirs, "pay-9")] {
        let host = build(paths, false).unwrap();
        let done = host.writes().write(&pay(&fake, action)).await.unwrap();
        assert!(matches!(done, WriteOutcome::Succeeded { .. }), "{done:?}");
    }
    copy_journal(&theirs.dir, &ours.dir);
    let refused = build(&ours, false).unwrap_err();
    assert!(
        matches!(
            refused,
            BuildError::Witnesses(WitnessError::Disagree(Disagreement::Replaced { .. }))
        ),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("not the one the audit log"),
        "{refused}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_refused_before_it_was_sent_is_sent_only_when_its_agent_submits_it_again() {
    let fake = keyless().await;
    // Its route's breaker opens on one failure, and stays open 300 ms.
    fake.script(
        OBJECTS,
        [Fault::Status {
            status: 500,
            code: "server_error",
        }],
    );
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::under(dir.path());
    let retry = RetryConfig {
        breaker_threshold: 1,
        breaker_open_ms: 300,
        ..retry()
    };
    let host = host_builder("stripe", &paths, retry.clone(), Duration::from_secs(2))
        .build()
        .unwrap();
    let read = sluice::execute::Call::post("stripe", fake.url(OBJECTS), "q=1")
        .credential("team-key")
        .tenant("acme")
        .class(RequestClass::Read);
    let _ = host.executor().execute(&read).await;
    let attempts = fake.attempts().len();

    let refused = host.writes().write(&pay(&fake, "pay-1")).await.unwrap();
    let WriteOutcome::Refused { action, terminal } = &refused else {
        panic!("refused before it was sent: {refused:?}")
    };
    assert_eq!(action.state, State::Refused);
    assert_eq!(action.attempts, 0);
    assert!(terminal.is_some());
    assert_eq!(fake.attempts().len(), attempts, "nothing went out");
    drop(host);

    // A restart resumes what is unfinished: the refused write is not.
    let host = host_builder("stripe", &paths, retry, Duration::from_secs(2))
        .build()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let resumed = host.writes().recover().await.unwrap();
    assert!(resumed.is_empty(), "{resumed:?}");
    assert_eq!(fake.attempts().len(), attempts, "a restart sent nothing");
    assert!(fake.stored().is_empty());

    // Its agent submits it again: now it goes, once.
    let sent = host.writes().write(&pay(&fake, "pay-1")).await.unwrap();
    assert!(matches!(sent, WriteOutcome::Succeeded { .. }), "{sent:?}");
    assert_eq!(fake.stored().len(), 1);
}
