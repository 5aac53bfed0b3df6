//! The journal on real files: restarts, refusals, concurrent submits, transitions.

use super::*;

fn intent(action: &str, body: &str) -> Intent {
    Intent {
        task: "task-1".into(),
        action: action.into(),
        provider: "stripe".into(),
        method: "POST".into(),
        route: "POST /v1/charges".into(),
        class: "idempotent_write".into(),
        body: body.as_bytes().to_vec(),
    }
}

fn journal(dir: &tempfile::TempDir) -> Journal {
    Journal::open(&dir.path().join("journal.sqlite")).unwrap()
}

#[test]
fn the_intent_and_its_key_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let j = journal(&dir);
        let Recorded::New(a) = j.record(&intent("charge-42", "amount=100")).unwrap() else {
            panic!("a new action")
        };
        j.advance(a.id, State::Sent, None).unwrap();
        j.advance(a.id, State::Uncertain, None).unwrap()
    };
    // A new process opens the same file.
    let j = journal(&dir);
    let unfinished = j.unfinished().unwrap();
    assert_eq!(unfinished, vec![first.clone()]);
    assert_eq!(first.state, State::Uncertain);
    assert_eq!(first.attempts, 1);
    let Recorded::Existing(again) = j.record(&intent("charge-42", "amount=100")).unwrap() else {
        panic!("the action exists")
    };
    assert_eq!(
        again.idempotency_key, first.idempotency_key,
        "one key per action"
    );
    assert_eq!(j.body(first.id).unwrap(), b"amount=100");
}

#[test]
fn the_same_action_with_another_body_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let j = journal(&dir);
    j.record(&intent("charge-42", "amount=100")).unwrap();
    let e = j.record(&intent("charge-42", "amount=999")).unwrap_err();
    assert!(matches!(e, JournalError::BodyMismatch { .. }), "{e}");
    assert!(e.to_string().contains("charge-42"), "{e}");
}

#[test]
fn two_concurrent_submits_of_one_action_make_one_new_action() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    Journal::open(&path).unwrap();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                // Separate connections, as separate host processes would have.
                let j = Journal::open(&path).unwrap();
                matches!(
                    j.record(&intent("invite-7", "user=ann")).unwrap(),
                    Recorded::New(_)
                )
            })
        })
        .collect();
    let new = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|n| *n)
        .count();
    assert_eq!(new, 1, "exactly one submit may send");
}

#[test]
fn states_move_only_forward_and_final_states_stay() {
    let dir = tempfile::tempdir().unwrap();
    let j = journal(&dir);
    let Recorded::New(a) = j.record(&intent("a", "x")).unwrap() else {
        panic!()
    };
    assert!(matches!(
        j.advance(a.id, State::Succeeded, None),
        Err(JournalError::Transition {
            from: "pending",
            to: "succeeded",
            ..
        })
    ));
    j.advance(a.id, State::Sent, None).unwrap();
    let done = j.advance(a.id, State::Succeeded, Some("ch_123")).unwrap();
    assert_eq!(done.operation_id.as_deref(), Some("ch_123"));
    assert!(j.advance(a.id, State::Sent, None).is_err(), "final");
    assert!(j.unfinished().unwrap().is_empty());
}

#[test]
fn cancelling_a_task_ends_its_unfinished_actions() {
    let dir = tempfile::tempdir().unwrap();
    let j = journal(&dir);
    let Recorded::New(a) = j.record(&intent("a", "x")).unwrap() else {
        panic!()
    };
    let Recorded::New(b) = j.record(&intent("b", "y")).unwrap() else {
        panic!()
    };
    j.advance(b.id, State::Sent, None).unwrap();
    j.advance(b.id, State::Succeeded, None).unwrap();
    assert_eq!(j.cancel_task("task-1").unwrap(), 1);
    assert_eq!(j.get(a.id).unwrap().state, State::Cancelled);
    assert_eq!(
        j.get(b.id).unwrap().state,
        State::Succeeded,
        "a finished action stays"
    );
    assert!(
        j.unfinished().unwrap().is_empty(),
        "cancelled work never wakes"
    );
}

#[test]
fn the_journal_is_durable_by_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let j = journal(&dir);
    let conn = j.conn();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    let sync: i64 = conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        (mode.as_str(), sync),
        ("wal", 2),
        "WAL with synchronous=FULL"
    );
}
