//! `sluice escalations`, run as an operator runs it, on a journal the library wrote.

use std::path::Path;
use std::process::{Command, Output};

use sluice::journal::escalations::Kind;
use sluice::journal::{Intent, Journal, Recorded, State};

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("run sluice")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A journal with one uncertain write escalated: returns the escalation's id.
fn journal_with_a_case(path: &Path) -> i64 {
    let j = Journal::open(path).unwrap();
    let Recorded::New(a) = j
        .record(&Intent {
            task: "pay-invoice-42".into(),
            action: "charge".into(),
            provider: "stripe".into(),
            method: "POST".into(),
            route: "POST /v1/charges".into(),
            class: "uncertain_write".into(),
            body: b"amount=4200&card=tok_visa".to_vec(),
            request: "{}".into(),
            goal: "pay invoice 42".into(),
        })
        .unwrap()
    else {
        panic!()
    };
    j.advance(a.id, State::Sent, None).unwrap();
    j.advance(a.id, State::Uncertain, None).unwrap();
    let case = r#"{"action":"charge","reason":"the status query did not settle it"}"#;
    j.escalate(Some(a.id), "pay-invoice-42", Kind::UncertainWrite, case, 1)
        .unwrap()
}

#[test]
fn an_operator_lists_shows_and_resolves_a_case() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    let id = journal_with_a_case(&path).to_string();
    let journal = path.to_str().unwrap();

    let (out, _) = text(&sluice(&["escalations", "list", "--journal", journal]));
    assert!(out.contains("uncertain_write"), "{out}");
    assert!(out.contains("pay-invoice-42/charge"), "{out}");
    assert!(out.contains("did not settle"), "{out}");

    let o = sluice(&["escalations", "show", &id, "--journal", journal]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(
        out.contains("escalation 1 (uncertain_write), open"),
        "{out}"
    );
    assert!(!out.contains("amount=4200"), "no body unless asked: {out}");

    // The body only on request, which names who asked and is recorded.
    let refused = sluice(&["escalations", "show", &id, "--journal", journal, "--body"]);
    assert!(!refused.status.success(), "--body needs --by");
    let o = sluice(&[
        "escalations",
        "show",
        &id,
        "--journal",
        journal,
        "--body",
        "--by",
        "ops@example",
    ]);
    let (out, err) = text(&o);
    assert!(out.contains("amount=4200"), "{out}");
    assert!(err.contains("recorded"), "{err}");
    let (_, disclosures) = Journal::open(&path).unwrap().unaudited().unwrap();
    assert_eq!(disclosures.len(), 1);
    assert_eq!(disclosures[0].asked_by, "ops@example");

    let o = sluice(&[
        "escalations",
        "resolve",
        &id,
        "--journal",
        journal,
        "--option",
        "continue-access",
        "--by",
        "ops@example",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "not an option of this case");
    assert!(
        err.contains("query-existing, retry-same-key, cancel, send-as-new"),
        "{err}"
    );

    let o = sluice(&[
        "escalations",
        "resolve",
        &id,
        "--journal",
        journal,
        "--option",
        "send-as-new",
        "--by",
        "ops@example",
        "--note",
        "the customer confirmed no charge",
    ]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(
        out.contains("action approval `send-as-new` by ops@example"),
        "{out}"
    );
    assert!(out.contains("may create a second side effect"), "{out}");

    let again = sluice(&[
        "escalations",
        "resolve",
        &id,
        "--journal",
        journal,
        "--option",
        "cancel",
        "--by",
        "x",
    ]);
    let (_, err) = text(&again);
    assert_eq!(again.status.code(), Some(2));
    assert!(err.contains("already resolved"), "{err}");
    let (out, _) = text(&sluice(&["escalations", "list", "--journal", journal]));
    assert!(out.contains("no open escalations"), "{out}");
}

#[test]
fn a_missing_journal_or_option_is_named() {
    let o = sluice(&[
        "escalations",
        "list",
        "--journal",
        "/nonexistent/journal.sqlite",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("/nonexistent/journal.sqlite"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    journal_with_a_case(&path);
    let o = sluice(&[
        "escalations",
        "resolve",
        "1",
        "--journal",
        path.to_str().unwrap(),
        "--option",
        "yolo",
        "--by",
        "x",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("`yolo` is not an option"), "{err}");
}
