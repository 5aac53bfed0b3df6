//! Two hosts sharing one journal in PostgreSQL (`[journal] url`), each with a state
//! directory of its own, in front of one strict provider: an action belongs to the host that
//! recorded it, the other answers it from the journal without sending a byte (one still in
//! flight is refused there: `journal::tests`), both see its escalation, and a decision made
//! through either is carried out by its owner alone. The group's database reached over TLS,
//! its certificate checked as the URL's `sslmode` says, is the last test's.

use std::path::Path;
use std::time::Duration;

use sluice::Sluice;
use sluice::contract::RequestClass;
use sluice::journal::escalations::{Choice, Decision};
use sluice::journal::{Journal, JournalError, State};
use sluice::retry::RetryConfig;
use sluice::writes::{WriteError, WriteOutcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::{builder, transport, write};

const OBJECTS: &str = "/v1/objects";

/// A host of the group: its own state directory (so its own name), the group's journal.
fn host(dir: &Path, journal_url: &str) -> Sluice {
    let config = format!(
        "[providers.stripe.limits]\nrequests_per_minute = 6000\n\
         [journal]\nurl = \"{journal_url}\"\n"
    );
    let retry = RetryConfig {
        backoff_base_ms: 100,
        backoff_cap_ms: 1_000,
        ..RetryConfig::default()
    };
    builder("stripe", &config, retry, transport(Duration::from_secs(2)))
        .state_dir(dir)
        .build()
        .expect("a host of the group")
}

#[tokio::test(flavor = "current_thread")]
async fn an_action_belongs_to_the_host_that_recorded_it_and_its_decision_is_carried_out_there() {
    let Some(url) = sluice_tests::postgres::fresh_schema() else {
        return;
    };
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .unwrap();
    // Stored and dropped twice: the plugin's one safe move does not settle it.
    fake.script(OBJECTS, [Fault::StoreThenDrop, Fault::StoreThenDrop]);
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = host(dir_a.path(), &url);
    let b = host(dir_b.path(), &url);
    assert_ne!(a.journal().owner(), b.journal().owner());
    let w = write(
        "stripe",
        "pay-invoice-9",
        "charge",
        &fake.url(OBJECTS),
        RequestClass::UncertainWrite,
        "amount=900",
    );
    let WriteOutcome::Escalated { action, escalation } = a.write(&w).await.unwrap() else {
        panic!("escalated")
    };
    let sent = fake.attempts().len();

    // The same action given to the other host: answered from the journal (it waits for a
    // person), not carried on there.
    let WriteOutcome::Escalated {
        action: seen,
        escalation: same,
    } = b.write(&w).await.unwrap()
    else {
        panic!("the other host answers the escalation")
    };
    assert_eq!((seen.id, same), (action.id, escalation));
    assert_eq!(fake.attempts().len(), sent, "the other host sent nothing");
    assert!(
        b.recover().await.unwrap().is_empty(),
        "not the other host's to settle"
    );

    // Both hosts show the case; an operator decides through the other host.
    for h in [&a, &b] {
        let open = h.journal().escalations().list(true).unwrap();
        assert_eq!(open.iter().map(|e| e.id).collect::<Vec<_>>(), [escalation]);
    }
    b.journal()
        .escalations()
        .resolve(
            escalation,
            &Decision {
                choice: Choice::QueryExisting,
                decided_by: "ops@example".into(),
                operation_id: Some("obj_000001".into()),
                note: "found it".into(),
            },
            0,
        )
        .unwrap();
    assert!(
        b.escalations().apply().await.unwrap().is_empty(),
        "the other host does not carry out a decision on an action it does not own"
    );
    assert_eq!(fake.attempts().len(), sent);
    let applied = a.escalations().apply().await.unwrap();
    let [WriteOutcome::Succeeded { action: done, .. }] = &applied[..] else {
        panic!("settled by its owner: {applied:?}")
    };
    assert_eq!(done.id, action.id);
    assert_eq!(fake.stored().len(), 1, "one record at the provider");
    assert_eq!(
        b.journal().get(action.id).unwrap().state,
        State::Succeeded,
        "the group sees it settled"
    );
}

/// The group's database goes away: a new write is refused with nothing recorded and
/// nothing sent, the host says it is not ready for writes, and when the database is back
/// the same write goes once.
#[tokio::test(flavor = "current_thread")]
async fn while_the_database_is_gone_a_write_is_refused_with_nothing_sent() {
    let Some(cluster) = sluice_tests::postgres::OwnCluster::start() else {
        return;
    };
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path(), cluster.url());
    let w = write(
        "stripe",
        "pay-invoice-10",
        "charge",
        &fake.url(OBJECTS),
        RequestClass::IdempotentWrite,
        "amount=1000",
    );
    cluster.stop();
    let refused = host.write(&w).await.unwrap_err();
    assert!(
        matches!(refused, WriteError::Journal(JournalError::Postgres { .. })),
        "{refused}"
    );
    assert!(fake.attempts().is_empty(), "nothing was sent");
    let why = host
        .writes()
        .refused_because()
        .expect("not ready for writes");
    assert!(why.contains("journal"), "{why}");

    cluster.start_again();
    assert_eq!(host.writes().refused_because(), None, "ready again");
    let WriteOutcome::Succeeded { .. } = host.write(&w).await.unwrap() else {
        panic!("sent once the database is back")
    };
    assert_eq!(fake.stored().len(), 1);
    assert_eq!(fake.attempts().len(), 1);
}

/// A database that takes encrypted connections only, its certificate (for `localhost`)
/// signed by a CA the test makes: each `sslmode` checks what libpq's does, and a
/// certificate it refuses is named, with the CA trusted; a host whose journal is so refused
/// does not start.
#[tokio::test(flavor = "current_thread")]
async fn the_journal_over_tls_checks_the_servers_certificate_as_sslmode_says() {
    let pki = sluice_tests::pki::Pki::new();
    let Some(cluster) = sluice_tests::postgres::OwnCluster::start_tls(&pki) else {
        return;
    };
    let port = cluster
        .url()
        .rsplit(':')
        .next()
        .and_then(|p| p.split('/').next())
        .expect("the cluster's port");
    let url = |host: &str, query: &str| format!("postgres://postgres@{host}:{port}/sluice?{query}");
    let ca = pki.path("ca.pem").display().to_string();
    let other = pki.path("other-ca.pem").display().to_string();
    let full = |host: &str, ca: &str| url(host, &format!("sslmode=verify-full&sslrootcert={ca}"));
    let refusal = |url: &str| Journal::connect(url, "refused").unwrap_err().to_string();

    Journal::connect(&full("localhost", &ca), "full").expect("verify-full by the name it is for");
    let err = refusal(&full("localhost", &other));
    assert!(
        err.contains(&format!(
            "the PostgreSQL server's certificate is not signed by the CA in {other}"
        )),
        "{err}"
    );
    let err = refusal(&full("127.0.0.1", &ca));
    assert!(
        err.contains(
            "the PostgreSQL server's certificate is not for the host name it was reached at"
        ),
        "{err}"
    );
    // verify-ca checks the CA only; require checks nothing, unless given a root (as libpq).
    let ca_only = url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}"));
    Journal::connect(&ca_only, "ca-only").expect("verify-ca by another name");
    Journal::connect(&url("127.0.0.1", "sslmode=require"), "unchecked").expect("require");
    let err = refusal(&url(
        "localhost",
        &format!("sslmode=require&sslrootcert={other}"),
    ));
    assert!(err.contains("is not signed by the CA in"), "{err}");
    // The server takes nothing in clear text: the connections above were encrypted.
    let err = refusal(&url("localhost", "sslmode=disable"));
    assert!(err.contains("no encryption"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[providers.stripe.limits]\nrequests_per_minute = 6000\n\
         [journal]\nurl = \"{}\"\n",
        full("localhost", &other)
    );
    let built = builder(
        "stripe",
        &config,
        RetryConfig::default(),
        transport(Duration::from_secs(2)),
    )
    .state_dir(dir.path())
    .build();
    let err = built
        .expect_err("a host whose journal's certificate is refused")
        .to_string();
    assert!(err.contains("is not signed by the CA in"), "{err}");
}
