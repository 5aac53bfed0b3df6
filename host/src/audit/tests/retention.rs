//! Retention: pruning to a checkpoint anchor, and the signed `pruned` record that tells a
//! prune from a deleted head.

use std::time::Duration;

use super::super::*;
use super::{fill, finding, key, lines, settings};

#[test]
fn prune_keeps_a_verifiable_log_from_an_anchor_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (path, witness) = (dir.path().join("audit.log"), dir.path().join("witness"));
    let log = AuditLog::open(&path, key(1), settings(4, Some(witness.clone())), 0).unwrap();
    // Records 1-4 at 0..3 s, checkpoint 5, records 6-9 at 4..7 s, checkpoint 10, 11-12 at 8, 9 s.
    fill(&log, 10, 0);
    // The first record at or after 5 s is record 7; the last checkpoint before it is 5.
    assert_eq!(log.prune(5_000, 9_500).unwrap(), 4);
    let kept = lines(&path);
    assert!(kept[0].contains(r#""seq":5,"#));
    // A signed statement of where the log now starts follows the kept records.
    assert!(
        kept[8].contains(r#""seq":13,"time_ms":9500,"#)
            && kept[8].contains(r#""event":"pruned","anchor":5}"#),
        "{}",
        kept[8]
    );
    assert!(kept[9].contains(r#""covers":13"#), "{}", kept[9]);
    assert_eq!(
        lines(&witness).last(),
        kept.last(),
        "the new checkpoint is witnessed"
    );
    assert_eq!(log.prune(5_000, 9_600).unwrap(), 0, "already at its anchor");
    fill(&log, 1, 10_000);
    log.close(11_000).unwrap();
    let report = verify(&path, &key(1).verifying_key(), Some(&witness), false).unwrap();
    assert_eq!(report.pruned_before, Some(5));
    assert!(!report.unproven_start);
    assert_eq!((report.first_seq, report.last_seq), (5, 16));
    assert_eq!(report.witnessed, Some(4));
    // Dropping the anchor as well leaves a log that cannot vouch for its start.
    let all = lines(&path);
    std::fs::write(&path, all[1..].join("\n") + "\n").unwrap();
    let f = finding(verify(&path, &key(1).verifying_key(), None, false));
    assert!(f.why.contains("is not a checkpoint"), "{f}");
}

#[test]
fn prune_without_a_checkpoint_keeps_everything_and_retention_prunes_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(&path, key(1), settings(4, None), 0).unwrap();
    fill(&log, 3, 0);
    assert_eq!(log.prune(i64::MAX, 3_000).unwrap(), 0);
    fill(&log, 7, 3_000);
    drop(log);
    let keep = AuditSettings {
        retention: Some(Duration::from_secs(5)),
        ..settings(4, None)
    };
    // Now 10 s: keep what is at or after 5 s.
    let log = AuditLog::open(&path, key(1), keep, 10_000).unwrap();
    assert!(lines(&path)[0].contains(r#""seq":5,"#));
    log.close(11_000).unwrap();
    let report = verify(&path, &key(1).verifying_key(), None, false).unwrap();
    assert_eq!(report.pruned_before, Some(5));
}

#[test]
fn a_pruned_record_proves_a_start_only_once_a_checkpoint_signs_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log = AuditLog::open(&path, key(1), settings(4, None), 0).unwrap();
    fill(&log, 10, 0);
    assert_eq!(log.prune(5_000, 9_500).unwrap(), 4);
    drop(log);
    let pk = key(1).verifying_key();
    verify(&path, &pk, None, false).unwrap();
    // Without the checkpoint after it, the `pruned` record is in the unsigned tail: anyone
    // could have written it.
    let mut kept = lines(&path);
    kept.pop();
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    let f = finding(verify(&path, &pk, None, true));
    assert!(
        f.to_string().starts_with(
            "record 5 (line 1): the log starts at record 5, a checkpoint, but no signed"
        ),
        "{f}"
    );
    let allowed = VerifyOptions {
        allow_open_tail: true,
        allow_pruned: true,
        ..VerifyOptions::default()
    };
    let report = verify_with(&path, &pk, &allowed).unwrap();
    assert!(report.unproven_start);
    assert_eq!(report.key, key(1).fingerprint());
}
