//! The audit log end to end: a log written through the library, tampered with the way an
//! intruder would, and checked with `sluice audit verify` as an auditor runs it.

use std::num::NonZeroU32;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use sluice::audit::{self, AuditKey, AuditLog, AuditSettings, Event, EventKind};

const T0: i64 = 1_700_000_000_000;

/// 200 events in the life of 50 actions, one second apart.
fn events() -> Vec<Event> {
    (0..200i64)
        .map(|i| {
            let t = T0 + 1000 * i;
            let action = format!("charge-{}", i / 4);
            let e = match i % 4 {
                0 => Event::new(EventKind::ActionRequested, t)
                    .idempotency_key(format!("key-{}", i / 4))
                    .scope("stripe/write"),
                1 => Event::new(EventKind::ActionSent, t).attempt(1),
                2 => Event::new(EventKind::ActionResult, t)
                    .attempt(1)
                    .status(200),
                _ => Event::new(EventKind::Decision, t).detail("approved by on-call"),
            };
            e.task("task-1").action(action)
        })
        .collect()
}

fn settings(witness: &Path) -> AuditSettings {
    AuditSettings {
        checkpoint_every: NonZeroU32::new(16).unwrap(),
        retention: None,
        witness: Some(witness.to_path_buf()),
    }
}

/// Writes `events` to a closed log signed by `key`: 200 events and a checkpoint after every
/// 16 (records 17, 34, ..., 204) and the closing one (213).
fn write_log(log: &Path, witness: &Path, key: AuditKey, events: &[Event]) {
    let w = AuditLog::open(log, key, settings(witness), T0).unwrap();
    for e in events {
        w.append(e).unwrap();
    }
    w.close(T0 + 1_000_000).unwrap();
}

/// A fresh, untouched log to tamper with: `secret`, `public`, `log` and `witness` in a
/// directory of its own.
fn fresh_log() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let key = audit::generate(&d.join("secret"), &d.join("public")).unwrap();
    write_log(&d.join("log"), &d.join("witness"), key, &events());
    dir
}

fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// `sluice audit verify` on `dir`'s log with its public key and `extra` arguments.
fn verify(dir: &Path, extra: &[&str]) -> Output {
    let (log, public) = (dir.join("log"), dir.join("public"));
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["audit", "verify"])
        .arg(&log)
        .arg("--key")
        .arg(&public)
        .args(extra)
        .output()
        .expect("run sluice")
}

fn with_witness(dir: &Path) -> Output {
    let witness = dir.join("witness");
    verify(dir, &["--witness", witness.to_str().unwrap()])
}

/// stdout and stderr together.
fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts exit 1 and a report that starts with `tampered: {finding}`.
fn assert_tampered(o: &Output, finding: &str) {
    let out = said(o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.starts_with(&format!("tampered: {finding}")),
        "expected `tampered: {finding}...`, got: {out}"
    );
}

#[test]
fn an_untouched_log_verifies() {
    let dir = fresh_log();
    let o = verify(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_eq!(
        said(&o),
        "ok: 213 records, 13 checkpoints, records 1..=213\n"
    );
    let o = with_witness(dir.path());
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_eq!(
        said(&o),
        "ok: 213 records, 13 checkpoints, records 1..=213; 13 witness checkpoints found in \
         the log\n"
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
fn a_chain_rebuilt_with_another_key_fails_at_its_first_checkpoint() {
    let dir = fresh_log();
    let (log, witness) = (dir.path().join("log"), dir.path().join("forged-witness"));
    std::fs::remove_file(&log).unwrap();
    let mut forged = events();
    forged[50] = forged[50].clone().status(500);
    let key = AuditKey::generate().unwrap();
    let forger_public = dir.path().join("forger.pub");
    std::fs::write(
        &forger_public,
        format!(
            "sluice-audit-public-v1 {}\n",
            key.verifying_key()
                .as_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
    )
    .unwrap();
    write_log(&log, &witness, key, &forged);
    // The forged chain is consistent in itself: only the signatures give it away.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["audit", "verify"])
        .arg(&log)
        .arg("--key")
        .arg(&forger_public)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert_tampered(
        &verify(dir.path(), &[]),
        "record 17 (line 17): checkpoint signature does not verify with the given key (chain \
         rebuilt or wrong key)",
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
    assert_eq!(
        said(&o),
        "ok: 112 records, 8 checkpoints, records 102..=213 (records before 102 pruned); 8 \
         witness checkpoints found in the log\n"
    );
}

#[test]
fn unreadable_input_exits_2_naming_the_file() {
    let dir = fresh_log();
    let log = dir.path().join("log");
    std::fs::remove_file(&log).unwrap();
    let o = verify(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    let cannot = format!("error: cannot read {}", log.display());
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
fn keygen_writes_a_pair_and_never_overwrites_it() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = (dir.path().join("a.key"), dir.path().join("a.pub"));
    let keygen = || {
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["audit", "keygen", "--secret"])
            .arg(&secret)
            .arg("--public")
            .arg(&public)
            .output()
            .unwrap()
    };
    let o = keygen();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let first = std::fs::read(&secret).unwrap();
    let made = audit::load_signing(&secret).unwrap();
    assert_eq!(
        audit::load_verifying(&public).unwrap(),
        made.verifying_key()
    );
    let o = keygen();
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(said(&o).contains("a.key exists already"), "{}", said(&o));
    assert_eq!(std::fs::read(&secret).unwrap(), first);
}
