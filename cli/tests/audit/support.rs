//! What every audit test uses: a log of 200 events written through the library, and
//! `sluice audit verify` run on it.

pub use std::num::NonZeroU32;
pub use std::path::Path;
pub use std::process::{Command, Output};
pub use std::time::Duration;

pub use sluice::audit::{self, AuditKey, AuditLog, AuditSettings, Event, EventKind};

pub const T0: i64 = 1_700_000_000_000;

/// 200 events in the life of 50 actions, one second apart.
pub fn events() -> Vec<Event> {
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

pub fn settings(witness: &Path) -> AuditSettings {
    AuditSettings {
        checkpoint_every: NonZeroU32::new(16).unwrap(),
        retention: None,
        witness: Some(witness.to_path_buf()),
        new_witness_epoch: false,
    }
}

/// Writes `events` to a closed log signed by `key`: 200 events and a checkpoint after every
/// 16 (records 17, 34, ..., 204) and the closing one (213).
pub fn write_log(log: &Path, witness: &Path, key: AuditKey, events: &[Event]) {
    let w = AuditLog::open(log, key, settings(witness), T0).unwrap();
    for e in events {
        w.append(e).unwrap();
    }
    w.close(T0 + 1_000_000).unwrap();
}

/// A fresh, untouched log to tamper with: `secret`, `public`, `log` and `witness` in a
/// directory of its own.
pub fn fresh_log() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let key = audit::generate(&d.join("secret"), &d.join("public")).unwrap();
    write_log(&d.join("log"), &d.join("witness"), key, &events());
    dir
}

pub fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_owned).collect()
}

pub fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// `sluice audit verify` on `dir`'s log with its public key and `extra` arguments.
pub fn verify(dir: &Path, extra: &[&str]) -> Output {
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

pub fn with_witness(dir: &Path) -> Output {
    let witness = dir.join("witness");
    verify(dir, &["--witness", witness.to_str().unwrap()])
}

/// stdout and stderr together.
pub fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts exit 1 and a report that starts with `tampered: {finding}`.
pub fn assert_tampered(o: &Output, finding: &str) {
    let out = said(o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.starts_with(&format!("tampered: {finding}")),
        "expected `tampered: {finding}...`, got: {out}"
    );
}

/// The fingerprint `verify` must print for a public key file: SHA-256 of the key's 32 bytes,
/// computed here from the file, independently of the library.
pub fn fingerprint_of(public: &Path) -> String {
    use sha2::Digest as _;
    let text = std::fs::read_to_string(public).unwrap();
    let hex = text.trim().split_once(' ').unwrap().1;
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let digest = sha2::Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Runs `sluice` with `args`, killing it and failing when it runs past `limit`.
pub fn sluice_within(args: &[&std::ffi::OsStr], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = sluice::clock::Clock::now(&sluice::clock::SystemClock);
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`sluice {args:?}` still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
