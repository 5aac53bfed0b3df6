//! The journal on real files: restarts, refusals, concurrent submits, transitions.

use super::*;

pub(super) fn intent(action: &str, body: &str) -> Intent {
    Intent {
        task: "task-1".into(),
        action: action.into(),
        provider: "stripe".into(),
        method: "POST".into(),
        route: "POST /v1/charges".into(),
        class: "idempotent_write".into(),
        body: body.as_bytes().to_vec(),
        request: "{}".into(),
        goal: "pay invoice 42".into(),
    }
}

/// Where a test's journal is kept: a host's file, and a group's database when one is
/// given (`SLUICE_TEST_POSTGRES_URL`; each place a schema of its own).
#[derive(Debug)]
pub(crate) enum Place {
    File(tempfile::TempDir),
    #[cfg(feature = "postgres")]
    Shared(String),
}

impl Place {
    /// The journal here, opened again as a restarted host would (as host `host-a` in a
    /// group's database).
    pub(crate) fn open(&self) -> Journal {
        self.open_as("host-a")
    }

    /// The journal here as host `owner` of the group (a file has one host).
    pub(crate) fn open_as(&self, owner: &str) -> Journal {
        match self {
            Self::File(dir) => {
                let _ = owner;
                Journal::open_or_create(&dir.path().join("journal.sqlite")).unwrap()
            }
            // A host whose earlier process is gone for sure: its lease is taken whoever held
            // it, and lasts for the test (leases are `group`'s tests).
            #[cfg(feature = "postgres")]
            Self::Shared(url) => {
                let j = Journal::connect_to(url, owner, true, DEFAULT_LEASE_TTL).unwrap();
                if !owner.is_empty() {
                    j.write(|c| {
                        let take = format!(
                            "INSERT INTO hosts (host, lease_until_ms, process) \
                             VALUES (?1, {} + 600000, ?2) ON CONFLICT (host) DO UPDATE \
                             SET lease_until_ms = excluded.lease_until_ms, \
                             process = excluded.process",
                            value::NOW_MS
                        );
                        Ok(c.exec(&take, values![owner, &j.process])?)
                    })
                    .unwrap();
                }
                j
            }
        }
    }
}

/// A host's file, and a fresh schema of the group's database when there is one.
pub(crate) fn places() -> Vec<Place> {
    #[allow(unused_mut)]
    let mut places = vec![Place::File(tempfile::tempdir().unwrap())];
    #[cfg(feature = "postgres")]
    if let Some(url) = sluice_fake_provider::services::postgres_schema() {
        places.push(Place::Shared(url));
    }
    places
}

#[test]
fn the_intent_and_its_key_survive_a_restart() {
    for place in places() {
        let first = {
            let j = place.open();
            let Recorded::New(a) = j.record(&intent("charge-42", "amount=100")).unwrap() else {
                panic!("a new action")
            };
            j.advance(a.id, State::Sent, None).unwrap();
            j.advance(a.id, State::Uncertain, None).unwrap()
        };
        // A new process opens the same file.
        let j = place.open();
        let unfinished = j.unfinished().unwrap();
        assert_eq!(unfinished, vec![first.clone()]);
        assert_eq!(first.state, State::Uncertain);
        assert_eq!(first.attempts, 1);
        let Recorded::Existing(again) = j.record(&intent("charge-42", "amount=100")).unwrap()
        else {
            panic!("the action exists")
        };
        assert_eq!(
            again.idempotency_key, first.idempotency_key,
            "one key per action"
        );
        assert_eq!(j.body(first.id).unwrap(), b"amount=100");
    }
}

#[test]
fn the_same_action_with_another_body_is_refused() {
    for place in places() {
        let j = place.open();
        j.record(&intent("charge-42", "amount=100")).unwrap();
        let e = j.record(&intent("charge-42", "amount=999")).unwrap_err();
        assert!(matches!(e, JournalError::BodyMismatch { .. }), "{e}");
        assert!(e.to_string().contains("charge-42"), "{e}");
    }
}

#[test]
fn two_concurrent_submits_of_one_action_make_one_new_action() {
    for place in places() {
        place.open();
        let new = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let place = &place;
                    scope.spawn(move || {
                        // Separate connections, as separate host processes would have
                        // (separate hosts of a group, where the journal is shared).
                        let j = place.open_as(&format!("host-{i}"));
                        match j.record(&intent("invite-7", "user=ann")) {
                            Ok(Recorded::New(_)) => true,
                            Ok(Recorded::Existing(_))
                            | Err(JournalError::OwnedElsewhere { .. }) => false,
                            Err(e) => panic!("{e}"),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .filter(|n| *n)
                .count()
        });
        assert_eq!(new, 1, "exactly one submit may send ({place:?})");
    }
}

#[test]
fn states_move_only_forward_and_final_states_stay() {
    for place in places() {
        let j = place.open();
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
}

#[test]
fn cancelling_a_task_ends_its_unsent_actions_and_refuses_new_ones() {
    for place in places() {
        let j = place.open();
        let Recorded::New(a) = j.record(&intent("a", "x")).unwrap() else {
            panic!()
        };
        let Recorded::New(b) = j.record(&intent("b", "y")).unwrap() else {
            panic!()
        };
        j.advance(b.id, State::Sent, None).unwrap();
        j.advance(b.id, State::Succeeded, None).unwrap();
        let Recorded::New(c) = j.record(&intent("c", "z")).unwrap() else {
            panic!()
        };
        j.advance(c.id, State::Sent, None).unwrap();
        j.advance(c.id, State::Uncertain, None).unwrap();
        assert_eq!(j.cancel_task("task-1", 0).unwrap(), 1);
        assert_eq!(j.get(a.id).unwrap().state, State::Cancelled);
        assert_eq!(
            j.get(b.id).unwrap().state,
            State::Succeeded,
            "a finished action stays"
        );
        assert_eq!(
            j.unfinished().unwrap(),
            vec![j.get(c.id).unwrap()],
            "only the action that may have happened stays, to be settled"
        );
        assert!(j.is_cancelled("task-1").unwrap());
        assert!(matches!(
            j.record(&intent("d", "w")),
            Err(JournalError::TaskCancelled(_))
        ));
        // A second submit of an action recorded before still finds it.
        assert!(matches!(
            j.record(&intent("a", "x")).unwrap(),
            Recorded::Existing(_)
        ));
    }
}

#[test]
fn decisions_are_approval_records_of_one_action_or_of_access() {
    use escalations::{Choice, Decision, Kind};
    for place in places() {
        let j = place.open();
        let Recorded::New(a) = j.record(&intent("a", "x")).unwrap() else {
            panic!()
        };
        j.advance(a.id, State::Sent, None).unwrap();
        j.advance(a.id, State::Uncertain, None).unwrap();
        let e = j
            .escalations()
            .open(Some(a.id), "task-1", Kind::UncertainWrite, "{}", 5)
            .unwrap();
        assert_eq!(j.get(a.id).unwrap().state, State::Escalated);
        assert_eq!(j.escalations().list(true).unwrap().len(), 1);
        let decide = |choice| Decision {
            choice,
            decided_by: "ops@example".into(),
            operation_id: None,
            note: String::new(),
        };
        let refused = j
            .escalations()
            .resolve(e, &decide(Choice::ContinueAccess), 6)
            .unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("query-existing, retry-same-key"),
            "{refused}"
        );
        let approval = j
            .escalations()
            .resolve(e, &decide(Choice::RetrySameKey), 7)
            .unwrap();
        assert_eq!((approval.kind, approval.action_id), ("action", Some(a.id)));
        assert!(matches!(
            j.escalations().resolve(e, &decide(Choice::Cancel), 8),
            Err(JournalError::AlreadyResolved(_))
        ));
        assert_eq!(j.escalations().undone().unwrap(), vec![approval.clone()]);
        j.escalations().done(e).unwrap();
        assert!(j.escalations().undone().unwrap().is_empty());

        // A spent time budget: continued access is its own kind of record.
        let Recorded::New(b) = j.record(&intent("b", "y")).unwrap() else {
            panic!()
        };
        let e = j
            .escalations()
            .open(Some(b.id), "task-1", Kind::TimeBudget, "{}", 9)
            .unwrap();
        let access = j
            .escalations()
            .resolve(e, &decide(Choice::ContinueAccess), 10)
            .unwrap();
        assert_eq!((access.kind, access.action_id), ("access", None));
        assert_eq!(
            j.escalations().approvals("task-1").unwrap(),
            vec![approval, access]
        );
        let (unaudited, _) = j.escalations().unaudited().unwrap();
        assert_eq!(unaudited.len(), 2);
    }
}

#[test]
fn showing_a_body_is_recorded_first() {
    use escalations::Kind;
    for place in places() {
        let j = place.open();
        let Recorded::New(a) = j.record(&intent("a", "amount=100")).unwrap() else {
            panic!()
        };
        let e = j
            .escalations()
            .open(Some(a.id), "task-1", Kind::TimeBudget, "{}", 1)
            .unwrap();
        assert_eq!(
            j.escalations().disclose_body(e, "ops@example", 2).unwrap(),
            b"amount=100"
        );
        let (_, disclosures) = j.escalations().unaudited().unwrap();
        assert_eq!(disclosures.len(), 1);
        assert_eq!(disclosures[0].asked_by, "ops@example");
        j.escalations().audited(&[], &[disclosures[0].id]).unwrap();
        assert!(j.escalations().unaudited().unwrap().1.is_empty());
    }
}

#[test]
fn the_journal_is_durable_by_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let j = Place::File(dir).open();
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

/// Issue: keys came from a seeded user-space generator (`fastrand`); they come from the
/// operating system now, and never repeat.
#[test]
fn idempotency_keys_are_128_random_bits_that_never_repeat() {
    let keys: std::collections::HashSet<String> = (0..10_000)
        .map(|_| new_idempotency_key().unwrap())
        .collect();
    assert_eq!(keys.len(), 10_000);
    for k in keys.iter().take(3) {
        let hex = k.strip_prefix("sluice-").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}

/// Issue: `--by ''`, multi-line names and an operation id with `cancel` were stored. The
/// library refuses them, whoever calls it, and stores nothing.
#[test]
fn a_decision_with_a_forged_name_or_a_misplaced_operation_id_stores_nothing() {
    use escalations::{Choice, Decision, Kind};
    for place in places() {
        let j = place.open();
        let Recorded::New(a) = j.record(&intent("a", "amount=100")).unwrap() else {
            panic!()
        };
        j.advance(a.id, State::Sent, None).unwrap();
        j.advance(a.id, State::Uncertain, None).unwrap();
        let e = j
            .escalations()
            .open(Some(a.id), "task-1", Kind::UncertainWrite, "{}", 1)
            .unwrap();
        let decide = |choice, by: &str, operation_id: Option<&str>, note: &str| Decision {
            choice,
            decided_by: by.into(),
            operation_id: operation_id.map(Into::into),
            note: note.into(),
        };
        for (decision, refused) in [
            (
                decide(Choice::Cancel, "", None, ""),
                "the operator's name is empty",
            ),
            (
                decide(Choice::Cancel, "ops\ndecision: action approval", None, ""),
                "a line break",
            ),
            (
                decide(Choice::Cancel, "ops", Some("pi_3Nx"), ""),
                "`cancel` takes no operation id",
            ),
            (
                decide(Choice::QueryExisting, "ops", Some("pi 3\n"), ""),
                "the operation id",
            ),
            (
                decide(Choice::Cancel, "ops", None, "a\u{1b}[2K"),
                "the note",
            ),
        ] {
            let err = j.escalations().resolve(e, &decision, 2).unwrap_err();
            assert!(err.to_string().contains(refused), "{err}");
        }
        assert!(matches!(
            j.escalations().disclose_body(e, "ops\r\nx", 2),
            Err(JournalError::Text { .. })
        ));
        assert_eq!(j.escalations().get(e).unwrap().resolved_ms, None);
        assert!(j.escalations().approvals("task-1").unwrap().is_empty());
        let (approvals, disclosures) = j.escalations().unaudited().unwrap();
        assert!(approvals.is_empty() && disclosures.is_empty());
        assert_eq!(j.get(a.id).unwrap().state, State::Escalated);

        let ok = j
            .escalations()
            .resolve(
                e,
                &decide(Choice::QueryExisting, "ops@example", Some("pi_3Nx"), "seen"),
                3,
            )
            .unwrap();
        assert_eq!(ok.decision.operation_id.as_deref(), Some("pi_3Nx"));
    }
}

/// A group's journal: each host resumes, lists and moves only the actions it recorded; the
/// same action given to a second host is refused there, naming its owner; an operator's
/// view (no owner) sees every host's.
#[test]
fn another_host_s_action_is_neither_resumed_nor_moved_here() {
    for place in places() {
        if matches!(place, Place::File(_)) {
            continue;
        }
        let (a, b) = (place.open_as("host-a"), place.open_as("host-b"));
        let Recorded::New(act) = a.record(&intent("pay-1", "amount=5")).unwrap() else {
            panic!("new")
        };
        a.advance(act.id, State::Sent, None).unwrap();
        let e = b.record(&intent("pay-1", "amount=5")).unwrap_err();
        assert!(
            matches!(&e, JournalError::OwnedElsewhere { owner, .. } if owner == "host-a"),
            "{e}"
        );
        assert!(e.to_string().contains("host `host-a`"), "{e}");
        let e = b.advance(act.id, State::Uncertain, None).unwrap_err();
        assert!(matches!(e, JournalError::OwnedElsewhere { .. }), "{e}");
        assert!(b.unfinished().unwrap().is_empty());
        assert!(b.names().unwrap().is_empty());
        assert!(!b.knows("task-1", "pay-1").unwrap());
        assert_eq!(a.unfinished().unwrap().len(), 1);
        assert_eq!(
            place.open_as("").all().unwrap().len(),
            1,
            "the operator sees it"
        );
        // Settled, it is answered from any host of the group, and still moved by none but
        // its owner.
        a.advance(act.id, State::Succeeded, None).unwrap();
        assert!(matches!(
            b.record(&intent("pay-1", "amount=5")).unwrap(),
            Recorded::Existing(found) if found.state == State::Succeeded
        ));
        // The same body, found by its owner after a restart: carried on, not new.
        assert!(matches!(
            place
                .open_as("host-a")
                .record(&intent("pay-1", "amount=5"))
                .unwrap(),
            Recorded::Existing(_)
        ));
    }
}

#[test]
fn every_move_of_an_action_raises_the_mark_and_a_restart_keeps_it() {
    for place in places() {
        let (id, seq) = {
            let j = place.open();
            let a = j.record(&intent("charge-42", "amount=100")).unwrap();
            let after_record = j.mark();
            assert!(!after_record.id.is_empty());
            j.advance(a.action().id, State::Sent, None).unwrap();
            let after_send = j.mark();
            assert_eq!(after_send.id, after_record.id);
            assert!(
                after_send.seq > after_record.seq,
                "{after_record} then {after_send}"
            );
            (after_send.id, after_send.seq)
        };
        // A new process: the next move goes on from the committed mark, in the same journal.
        let j = place.open();
        let a = j.find("task-1", "charge-42").unwrap().unwrap();
        j.advance(a.id, State::Succeeded, None).unwrap();
        assert_eq!(j.mark(), Mark { id, seq: seq + 1 });
    }
}

#[test]
fn a_refused_action_is_reopened_only_by_its_resubmit_and_never_listed_to_resume() {
    for place in places() {
        let j = place.open();
        let a = j.record(&intent("charge-42", "amount=100")).unwrap();
        let refused = j.advance(a.action().id, State::Refused, None).unwrap();
        assert_eq!(refused.state, State::Refused);
        assert!(
            j.unfinished().unwrap().is_empty(),
            "a restart resumes nothing"
        );
        let again = j.record(&intent("charge-42", "amount=100")).unwrap();
        let Recorded::Existing(again) = again else {
            panic!("the same action")
        };
        assert_eq!(again.state, State::Pending, "the resubmit reopens it");
        assert_eq!(again.idempotency_key, refused.idempotency_key);
    }
}

#[test]
fn keys_derived_from_a_secret_are_the_same_in_a_new_journal() {
    let secret = KeySecret::from_bytes([3; 32]);
    let key = |dir: &tempfile::TempDir| {
        let j = Journal::open_or_create(&dir.path().join("journal.sqlite"))
            .unwrap()
            .with_key_secret(secret.clone());
        j.record(&intent("charge-42", "amount=100"))
            .unwrap()
            .action()
            .idempotency_key
            .clone()
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert_eq!(
        key(&a),
        key(&b),
        "a journal lost and made again gives the same key"
    );
}

/// Every transaction that moves an action raises the mark, not only recording and state
/// moves: a journal put back to just before an escalation or a task's cancelling must be
/// behind the audit log's record of it.
#[test]
fn escalating_and_cancelling_raise_the_mark_too() {
    for place in places() {
        let j = place.open();
        let a = j.record(&intent("charge-42", "amount=100")).unwrap();
        let before = j.mark().seq;
        j.escalations()
            .open(
                Some(a.action().id),
                "task-1",
                escalations::Kind::TimeBudget,
                "{}",
                1,
            )
            .unwrap();
        let escalated = j.mark().seq;
        assert!(escalated > before, "an escalation moved the action");
        j.cancel_task("task-1", 2).unwrap();
        assert!(j.mark().seq > escalated, "cancelling the task moved it");
    }
}

/// What an operator's acceptance of a journal does to it (`writes::witnesses::hold`): the
/// mark gets a new id; an action the log saw move since is lost unless over; an action not
/// over that the log does not know is lost.
#[test]
fn an_accepted_journal_gets_a_new_id_and_loses_what_it_cannot_vouch_for() {
    for place in places() {
        let j = place.open();
        let pending = j.record(&intent("pending", "a")).unwrap();
        let done = j.record(&intent("done", "b")).unwrap();
        j.advance(done.action().id, State::Sent, None).unwrap();
        j.advance(done.action().id, State::Succeeded, None).unwrap();
        let refused = j.record(&intent("refused", "c")).unwrap();
        j.advance(refused.action().id, State::Refused, None)
            .unwrap();
        j.record(&intent("foreign", "d")).unwrap();
        let before = j.mark();
        // The log saw `pending` and `done` move since this copy; it never knew `foreign`.
        for action in [&pending, &done] {
            let a = action.action();
            assert_eq!(
                j.record_lost(&a.task, &a.action, &a.idempotency_key, "{}", true)
                    .unwrap(),
                a.action == "pending",
                "{}",
                a.action
            );
        }
        let r = refused.action();
        assert!(
            !j.record_lost(&r.task, &r.action, &r.idempotency_key, "{}", false)
                .unwrap(),
            "an action the log saw no move of since stays as it is"
        );
        let known = ["pending", "done", "refused"]
            .map(|a| ("task-1".to_owned(), a.to_owned()))
            .into_iter()
            .collect();
        assert_eq!(j.lose_unknown(&known).unwrap(), 1);
        let state = |a: &str| j.find("task-1", a).unwrap().unwrap().state;
        assert_eq!(state("pending"), State::Lost);
        assert_eq!(state("done"), State::Succeeded, "what is over stays over");
        assert_eq!(state("refused"), State::Refused);
        assert_eq!(state("foreign"), State::Lost);
        assert!(j.unfinished().unwrap().is_empty(), "nothing to resume");
        let after = j.renew_mark(before.seq + 10).unwrap();
        assert_ne!(after.id, before.id, "a journal of its own");
        assert!(after.seq > before.seq + 10);
        assert_eq!(place.open().load_mark().unwrap(), after, "kept");
    }
}

/// A journal changed under a running host — its mark rolled back, another journal's, or
/// gone (its database made again) — records nothing more: the host's next move is refused
/// and rolled back, naming both marks.
#[test]
fn a_journal_changed_under_a_running_host_records_nothing_more() {
    for place in places() {
        for (n, change) in [
            "UPDATE marks SET seq = 0",
            "UPDATE marks SET journal_id = 'j-another'",
            "DELETE FROM marks",
        ]
        .into_iter()
        .enumerate()
        {
            let j = place.open();
            j.load_mark().unwrap();
            j.record(&intent(&format!("before-{n}"), "a")).unwrap();
            place.open().write(|c| Ok(c.exec(change, &[])?)).unwrap();
            let err = j.record(&intent(&format!("after-{n}"), "b")).unwrap_err();
            assert!(
                matches!(err, JournalError::MovedUnder { .. }),
                "{change}: {err}"
            );
            assert!(err.to_string().contains("changed under this running host"));
            let why = j.failing().expect("the journal says it cannot be written");
            assert!(why.contains("changed under this running host"), "{why}");
            assert!(
                place
                    .open()
                    .find("task-1", &format!("after-{n}"))
                    .unwrap()
                    .is_none(),
                "{change}: nothing recorded"
            );
        }
    }
}
