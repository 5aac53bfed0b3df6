//! The log's start: retention prunes to a signed anchor; a head cut by anyone else fails.

use super::support::*;

#[test]
fn retention_keeps_a_verifiable_log_from_an_anchor_checkpoint() {
    let dir = fresh_log();
    let (log, witness) = (dir.path().join("log"), dir.path().join("witness"));
    let key = audit::load_signing(&dir.path().join("secret")).unwrap();
    let keep = AuditSettings {
        retention: Some(Duration::from_secs(200)),
        ..settings(&witness)
    };
    // Keep what is at or after event 100 (record 107): the anchor is checkpoint 102.
    let w = AuditLog::open(&log, key, keep, T0 + 300_000).unwrap();
    w.close(T0 + 300_000).unwrap();
    let first = &lines(&log)[0];
    assert!(
        first.contains(r#""seq":102,"#) && first.contains(r#""event":"checkpoint""#),
        "{first}"
    );
    let o = with_witness(dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    // The kept records, then the signed statement of the prune: `pruned` (214) and the
    // checkpoint that signs it (215), which the witness holds too.
    let kept = lines(&log);
    assert!(
        kept[112].contains(r#""event":"pruned","anchor":102}"#),
        "{}",
        kept[112]
    );
    assert_eq!(
        said(&o),
        format!(
            "ok: 114 records, 9 checkpoints, records 102..=215 (records before 102 pruned, as \
             a signed `pruned` record says); 9 witness checkpoints found in the log\nkey: {}\n",
            fingerprint_of(&dir.path().join("public"))
        )
    );
}

#[test]
fn a_log_cut_down_to_its_last_checkpoint_does_not_verify_even_though_the_witness_holds_it() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    let l = lines(&log);
    // `tail -1 audit.log > x.log`: the closing checkpoint alone, which the witness holds.
    write_lines(&log, &l[212..]);
    let proof = "record 213 (line 1): the log starts at record 213, a checkpoint, but no signed \
                 `pruned` record names it as where retention cut the log: the records before it \
                 were deleted";
    assert_tampered(&with_witness(dir.path()), proof);
    assert_tampered(&verify(dir.path(), &[]), proof);
    // Accepted on request, and counted in words that fit one.
    let o = verify(dir.path(), &["--allow-pruned"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        said(&o).starts_with("ok: 1 record, 1 checkpoint, records 213..=213\n"),
        "{}",
        said(&o)
    );
}

#[test]
fn a_head_cut_to_a_checkpoint_passes_only_with_allow_pruned_and_says_so_loudly() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    let l = lines(&log);
    write_lines(&log, &l[101..]);
    assert_tampered(
        &with_witness(dir.path()),
        "record 102 (line 1): the log starts at record 102, a checkpoint, but no signed",
    );
    let witness = dir.path().join("witness");
    let o = verify(
        dir.path(),
        &["--allow-pruned", "--witness", witness.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let out = said(&o);
    assert!(
        out.starts_with("ok: 112 records, 8 checkpoints, records 102..=213"),
        "{out}"
    );
    assert!(
        out.contains(
            "WARNING: the log starts at record 102; records before it are missing and nothing \
             in the log says retention pruned them: they may have been deleted (accepted \
             because of --allow-pruned)"
        ),
        "{out}"
    );
    // One statement about the missing head, not a claim that they were pruned beside it.
    assert!(!out.contains("records before 102 pruned"), "{out}");
}
