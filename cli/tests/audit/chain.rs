//! The chain: an untouched log verifies; an edit, a deletion, a swap, a cut or torn tail is
//! named; a file that is not a log is refused at its first long line.

use super::support::*;

#[test]
fn an_untouched_log_verifies() {
    let dir = fresh_log();
    let o = verify(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let key = fingerprint_of(&dir.path().join("public"));
    assert_eq!(
        said(&o),
        format!("ok: 213 records, 13 checkpoints, records 1..=213\nkey: {key}\n")
    );
    let o = with_witness(dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_eq!(
        said(&o),
        format!(
            "ok: 213 records, 13 checkpoints, records 1..=213; 13 witness checkpoints found \
             in the log\nkey: {key}\n"
        )
    );
}

#[test]
fn an_edited_status_names_its_record() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    let mut l = lines(&log);
    let i = (100..).find(|&i| l[i].contains(r#""status":200"#)).unwrap();
    l[i] = l[i].replace(r#""status":200"#, r#""status":500"#);
    write_lines(&log, &l);
    let n = i + 1;
    assert_tampered(
        &verify(dir.path(), &[]),
        &format!("record {n} (line {n}): its hash does not match its contents (edited?)"),
    );
}

#[test]
fn a_deleted_record_is_named() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    let mut l = lines(&log);
    l.remove(99);
    write_lines(&log, &l);
    assert_tampered(
        &verify(dir.path(), &[]),
        "record 101 (line 100): expected record 100 here, found record 101",
    );
}

#[test]
fn swapped_records_are_named() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    let mut l = lines(&log);
    l.swap(120, 121);
    write_lines(&log, &l);
    assert_tampered(
        &verify(dir.path(), &[]),
        "record 122 (line 121): expected record 121 here, found record 122",
    );
}

#[test]
fn a_truncated_tail_is_reported_as_an_open_tail() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    let l = lines(&log);
    write_lines(&log, &l[..l.len() - 5]);
    assert_tampered(
        &verify(dir.path(), &[]),
        "record 208 (line 208): the log ends 4 records after its last checkpoint (record 204) \
         (truncated tail or log not closed); pass --allow-open-tail for a live log",
    );
    // Accepted as a live log, the cut is still visible through the witness.
    let witness = dir.path().join("witness");
    let o = verify(
        dir.path(),
        &["--allow-open-tail", "--witness", witness.to_str().unwrap()],
    );
    assert_tampered(
        &o,
        "witness line 13: the log lacks checkpoint covering record 212 recorded in the \
         witness: its tail was deleted",
    );
}

#[test]
fn a_torn_last_line_is_repaired_on_reopen() {
    let dir = fresh_log();
    let (log, witness) = (dir.path().join("log"), dir.path().join("witness"));
    let whole = std::fs::read(&log).unwrap();
    let mut torn = whole.clone();
    torn.extend_from_slice(&whole[..100]);
    std::fs::write(&log, &torn).unwrap();
    assert_tampered(
        &verify(dir.path(), &[]),
        "line 214: the last line is incomplete",
    );
    let key = audit::load_signing(&dir.path().join("secret")).unwrap();
    let w = AuditLog::open(&log, key, settings(&witness), T0 + 2_000_000).unwrap();
    assert_eq!(w.last_seq(), 213);
    let e = Event::new(EventKind::Cancelled, T0 + 2_000_000).task("task-1");
    assert_eq!(w.append(&e).unwrap(), 214);
    w.close(T0 + 2_000_001).unwrap();
    let o = with_witness(dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        said(&o).starts_with("ok: 215 records, 14 checkpoints, records 1..=215"),
        "{}",
        said(&o)
    );
}

#[test]
fn unreadable_input_exits_2_naming_the_file() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    std::fs::remove_file(&log).unwrap();
    let o = verify(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    let cannot = format!("error: the log {}: cannot read: ", log.display());
    assert!(said(&o).contains(&cannot), "{}", said(&o));
    let dir = fresh_log();
    std::fs::write(dir.path().join("public"), "not a key\n").unwrap();
    let o = verify(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        said(&o).contains("public: it does not start with `sluice-audit-public-v1`"),
        "{}",
        said(&o)
    );
}

#[test]
fn verify_reads_no_line_longer_than_64_kib_and_names_it() {
    let dir = fresh_log();
    let d = dir.path();
    let public = d.join("public");
    let run = |log: &Path, extra: &[&Path]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["audit".as_ref(), "verify".as_ref()];
        args.push(log.as_os_str());
        args.push("--key".as_ref());
        args.push(public.as_os_str());
        for w in extra {
            args.push("--witness".as_ref());
            args.push(w.as_os_str());
        }
        sluice_within(&args, Duration::from_secs(60))
    };
    // `/dev/zero` is not read at all: only a regular file is (tests/named_files.rs).
    let zero = Path::new("/dev/zero");
    let refused = run(zero, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", said(&refused));
    assert!(
        said(&refused).contains("the log /dev/zero: not a regular file"),
        "{}",
        said(&refused)
    );
    // A line of gigabytes: a sparse file, so the test costs no disk.
    let huge = d.join("huge.log");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    assert_tampered(
        &run(&huge, &[]),
        "line 1: longer than 65536 bytes: not a record",
    );
    // A long line in the middle of a good log is named by its number.
    let log = d.join("log");
    let mut l = lines(&log);
    l[4] = "x".repeat(70_000);
    write_lines(&log, &l);
    assert_tampered(
        &run(&log, &[]),
        "line 5: longer than 65536 bytes: not a record",
    );
    // The witness is read the same way.
    let dir = fresh_log();
    let log = dir.path().join("log");
    let public = dir.path().join("public");
    let huge = dir.path().join("huge.witness");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let mut args: Vec<&std::ffi::OsStr> = vec!["audit".as_ref(), "verify".as_ref()];
    args.extend([
        log.as_os_str(),
        "--key".as_ref(),
        public.as_os_str(),
        "--witness".as_ref(),
        huge.as_os_str(),
    ]);
    assert_tampered(
        &sluice_within(&args, Duration::from_secs(60)),
        "witness line 1: longer than 65536 bytes: not a record",
    );
}
