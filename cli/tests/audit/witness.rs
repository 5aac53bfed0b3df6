//! The witness: a log must hold exactly the witness's checkpoints from its start on, and the
//! writer keeps the two in step.

use super::support::*;

#[test]
fn a_tail_cut_at_a_checkpoint_is_found_by_the_witness() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    let l = lines(&log);
    write_lines(&log, &l[..204]);
    // Without the witness the cut log is a well-formed closed log: the documented limit.
    let o = verify(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_tampered(
        &with_witness(dir.path()),
        "witness line 13: the log lacks checkpoint covering record 212 recorded in the \
         witness: its tail was deleted",
    );
}

#[test]
fn an_empty_witness_is_an_error() {
    let dir = fresh_log();
    std::fs::write(dir.path().join("witness"), "").unwrap();
    assert_tampered(
        &with_witness(dir.path()),
        "witness: it holds no checkpoint, but the log has 13",
    );
}

#[test]
fn a_witness_cut_short_is_an_error() {
    let dir = fresh_log();
    let witness = dir.path().join("witness");
    let w = lines(&witness);
    write_lines(&witness, &w[..10]);
    assert_tampered(
        &with_witness(dir.path()),
        "witness: it ends at the checkpoint at record 170, but the log goes on to 3 more (the \
         first at record 187): the witness was cut short, or it is not this log's witness",
    );
}

#[test]
fn a_witness_with_a_line_deleted_is_an_error() {
    let dir = fresh_log();
    let witness = dir.path().join("witness");
    let mut w = lines(&witness);
    w.remove(4);
    write_lines(&witness, &w);
    assert_tampered(
        &with_witness(dir.path()),
        "witness line 5: it lacks the log's checkpoint at record 85: lines were deleted from \
         the witness or reordered, or it is not this log's witness",
    );
}

#[test]
fn a_witness_out_of_order_or_repeated_is_an_error() {
    let dir = fresh_log();
    let witness = dir.path().join("witness");
    let w = lines(&witness);
    let mut swapped = w.clone();
    swapped.swap(3, 4);
    write_lines(&witness, &swapped);
    assert_tampered(
        &with_witness(dir.path()),
        "witness line 4: it lacks the log's checkpoint at record 68: lines were deleted from \
         the witness or reordered",
    );
    let mut repeated = w.clone();
    repeated.insert(5, w[4].clone());
    write_lines(&witness, &repeated);
    assert_tampered(
        &with_witness(dir.path()),
        "witness line 6: the checkpoint at record 85 is not after the one before it (record \
         85): the witness was reordered or edited",
    );
}

#[test]
fn only_a_live_log_may_be_one_checkpoint_ahead_of_its_witness() {
    let dir = fresh_log();
    let witness = dir.path().join("witness");
    let w = lines(&witness);
    // The writer stopped between the log's last checkpoint and its copy to the witness.
    write_lines(&witness, &w[..12]);
    assert_tampered(
        &with_witness(dir.path()),
        "witness: it ends at the checkpoint at record 204, but the log goes on to 1 more (the \
         first at record 213)",
    );
    let o = verify(
        dir.path(),
        &["--allow-open-tail", "--witness", witness.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        said(&o).contains(
            "12 witness checkpoints found in the log; its last checkpoint (record 213) is not \
             yet in the witness"
        ),
        "{}",
        said(&o)
    );
}

#[test]
fn reopening_fills_in_a_witness_left_one_checkpoint_behind() {
    let dir = fresh_log();
    let (log, witness) = (dir.path().join("log"), dir.path().join("witness"));
    let w = lines(&witness);
    write_lines(&witness, &w[..12]);
    let key = audit::load_signing(&dir.path().join("secret")).unwrap();
    let writer = AuditLog::open(&log, key, settings(&witness), T0 + 2_000_000).unwrap();
    assert_eq!(
        lines(&witness),
        w,
        "the missing checkpoint copied from the log"
    );
    writer.close(T0 + 2_000_001).unwrap();
    let o = with_witness(dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
}

#[test]
fn the_writer_refuses_a_log_whose_witness_is_ahead_of_it() {
    let dir = fresh_log();
    let (log, witness) = (dir.path().join("log"), dir.path().join("witness"));
    let l = lines(&log);
    write_lines(&log, &l[..204]);
    let key = audit::load_signing(&dir.path().join("secret")).unwrap();
    let err = AuditLog::open(&log, key, settings(&witness), T0 + 2_000_000).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("holds the checkpoint at record 213, past the log's last record 204"),
        "{msg}"
    );
    assert_eq!(lines(&log), l[..204], "nothing appended");
}
