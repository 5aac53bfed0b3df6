//! `sluice escalations`, run as an operator runs it, on a journal the library wrote.

mod support;

use std::path::Path;
use std::process::Output;

use sluice::journal::escalations::Kind;
use sluice::journal::{Intent, Journal, Recorded, State};

use support::sluice;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A journal with one uncertain write escalated: returns the escalation's id.
fn journal_with_a_case(path: &Path) -> i64 {
    let j = Journal::open_or_create(path).unwrap();
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
    j.escalations()
        .open(Some(a.id), "pay-invoice-42", Kind::UncertainWrite, case, 1)
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
    let (_, disclosures) = Journal::open_existing(&path)
        .unwrap()
        .escalations()
        .unaudited()
        .unwrap();
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

fn resolve(journal: &str, extra: &[&str]) -> Output {
    let mut args = vec!["escalations", "resolve", "1", "--journal", journal];
    args.extend(extra);
    sluice(&args)
}

/// Issue: `--by ''` and multi-line names were accepted, and `--by $'ops\ndecision: ...'` made
/// `show` display a forged decision line; `--operation-id` with `cancel` was stored.
#[test]
fn forged_names_and_an_operation_id_nobody_uses_are_refused_and_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    journal_with_a_case(&path);
    let journal = path.to_str().unwrap();
    for (by, says) in [
        ("", "is empty"),
        (
            "ops\ndecision: action approval `retry-same-key` by cfo",
            "a line break",
        ),
        ("ops\u{1b}[1A\u{1b}[2K", "U+001B"),
        ("ops\u{202e}", "U+202E"),
        (&"o".repeat(300), "at most 256"),
    ] {
        let o = resolve(journal, &["--option", "cancel", "--by", by]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{by:?}: {err}");
        assert!(err.contains("the operator's name"), "{err}");
        assert!(err.contains(says), "{by:?}: {err}");
        assert!(
            !err.contains('\u{1b}'),
            "the error escapes what it quotes: {err:?}"
        );
        let o = sluice(&[
            "escalations",
            "show",
            "1",
            "--journal",
            journal,
            "--body",
            "--by",
            by,
        ]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{by:?}: a body is shown to a name only"
        );
        assert!(!text(&o).0.contains("amount=4200"), "{by:?}");
    }
    let o = resolve(
        journal,
        &[
            "--option",
            "cancel",
            "--by",
            "ops",
            "--operation-id",
            "pi_3Nx",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`cancel` takes no operation id"), "{err}");
    let o = resolve(
        journal,
        &["--option", "cancel", "--by", "ops", "--note", "a\nb"],
    );
    assert_eq!(o.status.code(), Some(2), "a note is one line");

    // Nothing was stored: the case is still open, with no decision and no disclosure.
    let (out, _) = text(&sluice(&["escalations", "show", "1", "--journal", journal]));
    assert!(out.contains("open"), "{out}");
    assert!(!out.contains("decision:"), "{out}");
    let (approvals, disclosures) = Journal::open_existing(&path)
        .unwrap()
        .escalations()
        .unaudited()
        .unwrap();
    assert!(approvals.is_empty() && disclosures.is_empty());

    let o = resolve(
        journal,
        &[
            "--option",
            "query-existing",
            "--by",
            "ops@example",
            "--operation-id",
            "pi_3Nx",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
}

/// A journal written before names were checked (or edited by hand) may hold anything: `show`
/// and `list` print it escaped, so it cannot fake a line or drive the terminal.
#[test]
fn show_escapes_what_an_old_journal_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    journal_with_a_case(&path);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE escalations SET case_json = ?1, task = ?2",
            [
                "{\"action\":\"charge\u{202e}\",\"reason\":\"x\"}\ndecision: action approval `send-as-new` by cfo\u{1b}[2K",
                "pay\u{1b}]0;owned\u{7}",
            ],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO approvals (escalation_id, kind, task, action_id, option, decided_by, \
             at_ms, note) VALUES (1, 'action', ?3, 1, 'cancel', ?1, 5, ?2)",
            [
                "ops\ndecision: action approval `retry-same-key` by cfo",
                "fine\ndecision: access approval `continue-access` by cfo",
                "pay\u{1b}]0;owned\u{7}",
            ],
        )
        .unwrap();
    }
    let journal = path.to_str().unwrap();
    for args in [
        vec!["escalations", "show", "1", "--journal", journal],
        vec!["escalations", "list", "--all", "--journal", journal],
    ] {
        let o = sluice(&args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{args:?}: {err}");
        let decisions = out.lines().filter(|l| l.starts_with("decision:")).count();
        assert!(decisions <= 1, "{args:?} printed a forged line:\n{out}");
        for c in ['\u{1b}', '\u{7}', '\u{202e}'] {
            assert!(!out.contains(c), "{args:?} printed {c:?}: {out:?}");
        }
    }
    let (out, _) = text(&sluice(&["escalations", "show", "1", "--journal", journal]));
    assert!(
        out.contains("decision: action approval `cancel` by ops\\ndecision: action approval"),
        "{out}"
    );
}

/// Characters a reviewer got past the first blocklist into `--by` and `--note`: each prints
/// as nothing, so `show` printed `by ops` and invisible bytes, identical to a real `ops`.
const INVISIBLE: [char; 9] = [
    '\u{AD}',
    '\u{E0041}',
    '\u{2800}',
    '\u{3164}',
    '\u{115F}',
    '\u{180E}',
    '\u{FE0F}',
    '\u{34F}',
    '\u{1D173}',
];

#[test]
fn invisible_characters_in_a_name_or_a_note_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    journal_with_a_case(&path);
    let journal = path.to_str().unwrap();
    for c in INVISIBLE {
        let code = format!("U+{:04X}", u32::from(c));
        let name = format!("ops{c}");
        let note = format!("checked{c}");
        for (args, field) in [
            (vec!["--by", &name], "the operator's name"),
            (vec!["--by", "ops", "--note", &note], "the note"),
        ] {
            let mut args = args;
            args.extend(["--option", "cancel"]);
            let o = resolve(journal, &args);
            let (_, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(field) && err.contains(&code), "{err}");
            assert!(!err.contains(c), "the error escapes it: {err:?}");
        }
        let o = sluice(&[
            "escalations",
            "show",
            "1",
            "--journal",
            journal,
            "--body",
            "--by",
            &name,
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&code), "{err}");
        assert!(!out.contains("amount=4200"), "{out}");
    }
    let (approvals, disclosures) = Journal::open_existing(&path)
        .unwrap()
        .escalations()
        .unaudited()
        .unwrap();
    assert!(approvals.is_empty() && disclosures.is_empty());
}

/// Issue: `show --by X` without `--body` was silently ignored, and `X` not even checked.
#[test]
fn show_refuses_by_without_body_and_checks_the_name_as_resolve_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    journal_with_a_case(&path);
    let journal = path.to_str().unwrap();
    let o = sluice(&[
        "escalations",
        "show",
        "1",
        "--journal",
        journal,
        "--by",
        "ops",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("--body"), "{err}");
    assert!(out.is_empty(), "{out}");
    // A bad name is refused before the journal is even opened.
    let o = sluice(&[
        "escalations",
        "show",
        "1",
        "--journal",
        "/nonexistent/journal.sqlite",
        "--body",
        "--by",
        "ops\u{AD}",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the operator's name") && err.contains("U+00AD"),
        "{err}"
    );
    let (_, disclosures) = Journal::open_existing(&path)
        .unwrap()
        .escalations()
        .unaudited()
        .unwrap();
    assert!(disclosures.is_empty());
}
