//! The audit log on real files: format, chaining, checkpoints, crash repair and the verifier's
//! findings; retention and keys in their own files.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;

mod keys;
mod retention;

fn key(n: u8) -> AuditKey {
    AuditKey::from_bytes(&[n; 32])
}

fn settings(every: u32, witness: Option<PathBuf>) -> AuditSettings {
    AuditSettings {
        checkpoint_every: NonZeroU32::new(every).unwrap(),
        retention: None,
        witness,
        new_witness_epoch: false,
    }
}

/// Appends `n` events at times `t0, t0 + 1000, ...`.
fn fill(log: &AuditLog, n: u64, t0: i64) {
    for i in 0..n {
        let t = t0 + 1000 * i as i64;
        let e = Event::new(EventKind::ActionResult, t)
            .task("task-1")
            .action(format!("a-{i}"))
            .status(200);
        log.append(&e).unwrap();
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn finding(result: Result<Report, VerifyError>) -> Finding {
    match result {
        Err(VerifyError::Tampered(f)) => f,
        other => panic!("expected a finding, got {other:?}"),
    }
}

#[test]
fn a_record_is_canonical_json_without_absent_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(&path, key(1), settings(64, None), 0).unwrap();
    let e = Event::new(EventKind::ActionSent, 5).task("t").attempt(2);
    assert_eq!(log.append(&e).unwrap(), 1);
    let line = &lines(&path)[0];
    let (hash, json) = line.split_once(' ').unwrap();
    let zeros = "0".repeat(64);
    assert_eq!(
        json,
        format!(
            r#"{{"seq":1,"time_ms":5,"prev":"{zeros}","event":"action_sent","task":"t","attempt":2}}"#
        )
    );
    // SHA-256(32 zero bytes || the stored JSON).
    let expected = record::record_hash(&[0; 32], json.as_bytes());
    assert_eq!(hash, record::to_hex(&expected));
}

#[test]
fn a_signed_checkpoint_follows_every_n_records_and_goes_to_the_witness() {
    let dir = tempfile::tempdir().unwrap();
    let (path, witness) = (dir.path().join("audit.log"), dir.path().join("witness"));
    let log = AuditLog::open(&path, key(1), settings(2, Some(witness.clone())), 0).unwrap();
    fill(&log, 5, 0);
    assert_eq!(log.close(9_000).unwrap(), 8);
    let all = lines(&path);
    let kinds: Vec<bool> = all
        .iter()
        .map(|l| l.contains(r#""checkpoint":{"#))
        .collect();
    assert_eq!(kinds, [false, false, true, false, false, true, false, true]);
    assert!(all[2].contains(r#""covers":2"#), "{}", all[2]);
    assert_eq!(lines(&witness), [all[2].as_str(), &all[5], &all[7]]);
    let report = verify(&path, &key(1).verifying_key(), Some(&witness), false).unwrap();
    assert_eq!(
        (report.records, report.checkpoints, report.witnessed),
        (8, 3, Some(3))
    );
}

#[test]
fn reopening_continues_the_chain_and_its_checkpoint_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    fill(
        &AuditLog::open(&path, key(1), settings(4, None), 0).unwrap(),
        3,
        0,
    );
    let log = AuditLog::open(&path, key(1), settings(4, None), 0).unwrap();
    assert_eq!(log.last_seq(), 3);
    fill(&log, 1, 5_000);
    assert!(
        lines(&path)[4].contains(r#""covers":4"#),
        "a checkpoint after 4 records"
    );
    log.close(9_000).unwrap();
    let report = verify(&path, &key(1).verifying_key(), None, false).unwrap();
    assert_eq!((report.records, report.checkpoints), (5, 1));
}

#[test]
fn a_torn_last_line_is_cut_away_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    fill(
        &AuditLog::open(&path, key(1), settings(64, None), 0).unwrap(),
        3,
        0,
    );
    let whole = std::fs::read(&path).unwrap();
    let mut torn = whole.clone();
    torn.extend_from_slice(br#"ab12 {"seq":4,"time"#);
    std::fs::write(&path, &torn).unwrap();
    let f = finding(verify(&path, &key(1).verifying_key(), None, false));
    assert!(
        f.to_string()
            .starts_with("line 4: the last line is incomplete"),
        "{f}"
    );
    let log = AuditLog::open(&path, key(1), settings(64, None), 0).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), whole);
    assert_eq!(log.append(&Event::new(EventKind::Cancelled, 9)).unwrap(), 4);
    log.close(10).unwrap();
    verify(&path, &key(1).verifying_key(), None, false).unwrap();
}

#[test]
fn a_malformed_last_record_is_refused_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    fill(
        &AuditLog::open(&path, key(1), settings(64, None), 0).unwrap(),
        3,
        0,
    );
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace(r#""status":200}"#, r#""status":201}"#)).unwrap();
    let err = AuditLog::open(&path, key(1), settings(64, None), 0).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("audit.log, line 3: its hash does not match"),
        "{msg}"
    );
    std::fs::write(&path, format!("{text}not a record\n")).unwrap();
    let msg = AuditLog::open(&path, key(1), settings(64, None), 0)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("line 4: not a record"), "{msg}");
}

#[test]
fn checkpoint_events_come_only_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(&dir.path().join("a"), key(1), settings(64, None), 0).unwrap();
    for kind in [EventKind::Checkpoint, EventKind::Pruned] {
        let err = log.append(&Event::new(kind, 0));
        assert!(matches!(err, Err(AuditError::CheckpointEvent)), "{kind:?}");
    }
    assert_eq!(log.last_seq(), 0);
}

#[test]
fn the_verifier_names_the_first_broken_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(&path, key(1), settings(4, None), 0).unwrap();
    fill(&log, 10, 0);
    log.close(20_000).unwrap();
    let good = lines(&path);
    let pk = key(1).verifying_key();
    let check = |edit: &dyn Fn(&mut Vec<String>)| {
        let mut l = good.clone();
        edit(&mut l);
        std::fs::write(&path, l.join("\n") + "\n").unwrap();
        finding(verify(&path, &pk, None, false)).to_string()
    };
    let edited = check(&|l| l[6] = l[6].replace("a-5", "a-9"));
    assert_eq!(
        edited,
        "record 7 (line 7): its hash does not match its contents (edited?)"
    );
    let deleted = check(&|l| {
        l.remove(6);
    });
    assert!(
        deleted.starts_with("record 8 (line 7): expected record 7 here"),
        "{deleted}"
    );
    let swapped = check(&|l| l.swap(6, 7));
    assert!(
        swapped.starts_with("record 8 (line 7): expected record 7 here"),
        "{swapped}"
    );
    let open_tail = check(&|l| l.truncate(12));
    assert!(
        open_tail.starts_with(
            "record 12 (line 12): the log ends 2 records after its last checkpoint (record 10)"
        ),
        "{open_tail}"
    );
    std::fs::write(&path, good.join("\n") + "\n").unwrap();
    let wrong_key = finding(verify(&path, &key(2).verifying_key(), None, false)).to_string();
    assert!(
        wrong_key.starts_with(
            "record 5 (line 5): checkpoint signature does not verify with the given key"
        ),
        "{wrong_key}"
    );
    std::fs::write(&path, "").unwrap();
    assert_eq!(
        finding(verify(&path, &pk, None, false)).to_string(),
        "the log is empty: it holds no record"
    );
}

#[test]
fn a_hash_rewritten_in_upper_case_is_an_edit() {
    // Found by the `audit_chain` fuzz target: the stored hash was read in either case, so a
    // line's bytes could change and the log still verify.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(&path, key(1), settings(4, None), 0).unwrap();
    fill(&log, 3, 0);
    log.close(5_000).unwrap();
    let mut l = lines(&path);
    let (hash, record) = l[1].split_once(' ').unwrap();
    l[1] = format!("{} {record}", hash.to_ascii_uppercase());
    assert_ne!(l[1], lines(&path)[1], "the hash has letters to change");
    std::fs::write(&path, l.join("\n") + "\n").unwrap();
    let f = finding(verify(&path, &key(1).verifying_key(), None, false));
    assert_eq!(
        f.to_string(),
        "line 2: not a record: the hash is not 64 lower-case hex digits"
    );
}

#[test]
fn an_open_tail_is_allowed_for_a_live_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(&path, key(1), settings(4, None), 0).unwrap();
    fill(&log, 6, 0);
    let pk = key(1).verifying_key();
    let report = verify(&path, &pk, None, true).unwrap();
    assert_eq!((report.records, report.unsigned_tail), (7, 2));
    assert!(verify(&path, &pk, None, false).is_err());
}

#[test]
fn the_witness_shows_a_tail_cut_at_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (path, witness) = (dir.path().join("audit.log"), dir.path().join("witness"));
    let log = AuditLog::open(&path, key(1), settings(4, Some(witness.clone())), 0).unwrap();
    fill(&log, 10, 0);
    log.close(20_000).unwrap();
    let all = lines(&path);
    std::fs::write(&path, all[..10].join("\n") + "\n").unwrap();
    let pk = key(1).verifying_key();
    verify(&path, &pk, None, false).expect("without the witness the cut cannot be seen");
    assert_eq!(
        finding(verify(&path, &pk, Some(&witness), false)).to_string(),
        "witness line 3: the log lacks checkpoint covering record 12 recorded in the \
         witness: its tail was deleted"
    );
}

/// Issue 26: an emptied witness was refilled from the log at the next open, so a cut of the
/// log's tail made with it went unseen. A witness that lacks more than the checkpoint a
/// crash leaves out is refused; on the operator's word it starts a new epoch, which the log
/// records and `verify` reports.
#[test]
fn a_witness_emptied_or_cut_short_is_never_refilled_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (path, witness) = (dir.path().join("audit.log"), dir.path().join("witness"));
    let pk = key(1).verifying_key();
    let log = AuditLog::open(&path, key(1), settings(4, Some(witness.clone())), 0).unwrap();
    fill(&log, 10, 0);
    log.close(20_000).unwrap();
    // The tail cut back to the checkpoint at record 10, and the witness emptied with it.
    let all = lines(&path);
    std::fs::write(&path, all[..10].join("\n") + "\n").unwrap();
    std::fs::write(&witness, b"").unwrap();
    for damaged in [false, true] {
        if damaged {
            // Or deleted.
            std::fs::remove_file(&witness).unwrap();
        }
        let refused = AuditLog::open(&path, key(1), settings(4, Some(witness.clone())), 30_000)
            .expect_err("a witness that lacks the log's checkpoints is refused");
        assert!(
            matches!(
                refused,
                AuditError::WitnessLost {
                    lacks: 2,
                    last_checkpoint: 10,
                    ..
                }
            ),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("--new-witness-epoch"),
            "{refused}"
        );
        assert_eq!(lines(&path).len(), 10, "nothing appended to the log");
    }
    assert!(
        verify(&path, &pk, Some(&witness), false).is_err(),
        "and the verifier, given the empty witness, says so"
    );

    // On the operator's word: a new epoch, recorded and signed, never a refill.
    let epoch = AuditSettings {
        new_witness_epoch: true,
        ..settings(4, Some(witness.clone()))
    };
    let log = AuditLog::open(&path, key(1), epoch, 30_000).unwrap();
    fill(&log, 2, 31_000);
    log.close(40_000).unwrap();
    let witnessed = lines(&witness);
    assert!(
        witnessed.iter().all(|l| !l.contains(r#""seq":10,"#)),
        "the witness holds only the new epoch's checkpoints: {witnessed:?}"
    );
    let report = verify(&path, &pk, Some(&witness), false).expect("verifies from the epoch");
    assert_eq!(report.witness_epochs, [11]);
    assert!(lines(&path)[10].contains(r#""event":"witness_epoch""#));
}

/// A crash between the log's write of a checkpoint and the witness's leaves the witness one
/// checkpoint behind, the log's last record: that one is copied when the log is opened.
#[test]
fn the_checkpoint_a_crash_left_out_of_the_witness_is_copied_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, witness) = (dir.path().join("audit.log"), dir.path().join("witness"));
    let log = AuditLog::open(&path, key(1), settings(4, Some(witness.clone())), 0).unwrap();
    fill(&log, 8, 0);
    drop(log);
    let kept = lines(&witness);
    assert_eq!(kept.len(), 2);
    std::fs::write(&witness, kept[0].clone() + "\n").unwrap();
    let log = AuditLog::open(&path, key(1), settings(4, Some(witness.clone())), 9_000).unwrap();
    log.close(9_000).unwrap();
    assert_eq!(lines(&witness)[..2], kept[..]);
    verify(&path, &key(1).verifying_key(), Some(&witness), false).unwrap();
}

#[test]
fn the_log_is_shared_across_threads_and_keeps_one_chain() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AuditLog>();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = Arc::new(AuditLog::open(&path, key(1), settings(5, None), 0).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..10 {
                    log.append(&Event::new(EventKind::ActionSent, t * 100 + i))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    Arc::into_inner(log).unwrap().close(1_000).unwrap();
    let report = verify(&path, &key(1).verifying_key(), None, false).unwrap();
    assert_eq!((report.records, report.checkpoints), (48, 8));
}

#[test]
fn detail_is_sanitized_and_cut() {
    let e = Event::new(EventKind::Decision, 0).detail("approved\nby\ton-call");
    assert_eq!(e.detail.as_deref(), Some("approved by on-call"));
    let long = "x".repeat(500);
    let e = Event::new(EventKind::Decision, 0).detail(&long);
    assert_eq!(e.detail.unwrap().chars().count(), MAX_DETAIL_CHARS);
}

#[test]
fn names_past_the_limit_are_cut_so_that_a_record_fits_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(&path, key(1), settings(64, None), 0).unwrap();
    let huge = "\u{1}".repeat(10 * MAX_NAME_CHARS);
    let e = Event::new(EventKind::ActionSent, 0)
        .task(&huge)
        .action(&huge)
        .idempotency_key(&huge)
        .scope(&huge);
    let e = Event {
        detail: Some(huge.clone()),
        ..e
    };
    log.append(&e).unwrap();
    log.close(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.len() < MAX_LINE, "{}", first.len());
    let record: serde_json::Value = serde_json::from_str(first.split_once(' ').unwrap().1).unwrap();
    assert_eq!(
        record["task"].as_str().unwrap().chars().count(),
        MAX_NAME_CHARS
    );
    assert_eq!(
        record["detail"].as_str().unwrap().chars().count(),
        MAX_DETAIL_CHARS
    );
    verify(&path, &key(1).verifying_key(), None, false).unwrap();
}
