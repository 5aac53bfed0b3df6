//! What `sluice demo` leaves on disk, run as a user runs it and stopped as a user (or the
//! system) stops it: the audit signing key never touches the disk unless asked for, a run
//! without `--state-dir` leaves nothing behind when it ends or is stopped by SIGINT, SIGTERM
//! or SIGHUP, SIGKILL leaves only what docs/demo.md says, and state is private whatever the
//! umask and refused where another user could write it.

#![cfg(unix)]

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

/// One compiled-component cache for every run of this file, so plugins compile once.
fn cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// A directory that stands in for the system's temporary directory (`TMPDIR`), so that
/// whatever a run leaves there can be seen.
struct Sandbox {
    root: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("tmp")).unwrap();
        Self { root }
    }

    fn tmp(&self) -> PathBuf {
        self.root.path().join("tmp")
    }

    /// A state directory path (not yet made) inside the temporary directory.
    fn state(&self) -> PathBuf {
        self.tmp().join("state")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
        cmd.arg("demo")
            .args(args)
            .env("TMPDIR", self.tmp())
            .env("XDG_CACHE_HOME", cache())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        from_a_terminal(&mut cmd);
        cmd
    }

    /// Every path under the temporary directory, relative to it, sorted.
    fn left(&self) -> Vec<String> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                out.push(path.strip_prefix(base).unwrap().display().to_string());
                if path.is_dir() {
                    walk(&path, base, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.tmp(), &self.tmp(), &mut out);
        out.sort();
        out
    }

    /// Fails if a file named like a secret key is anywhere under the temporary directory.
    fn assert_no_key(&self) {
        let keys: Vec<String> = self
            .left()
            .into_iter()
            .filter(|p| p.ends_with(".key") || p.contains("secret"))
            .collect();
        assert!(keys.is_empty(), "a secret key left on disk: {keys:?}");
    }
}

/// Starts `cmd` with SIGHUP's default disposition, as from a terminal: tests run under
/// `nohup` would pass it on ignored, and the demo keeps an ignored SIGHUP ignored.
#[allow(unsafe_code, reason = "resetting a signal in the child before exec")]
fn from_a_terminal(cmd: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: `signal` is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// A demo run under way, its stderr read line by line.
struct Run {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Run {
    fn start(mut cmd: Command) -> Self {
        let mut child = cmd.spawn().expect("start sluice demo");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for the governed run's first progress line: the run is then mid-way, its state
    /// on disk.
    fn wait_until_mid_run(&mut self) {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(120)) {
                Ok(line) => {
                    let progress = line.starts_with("sluice [#");
                    self.seen.push(line);
                    if progress {
                        return;
                    }
                }
                Err(e) => panic!("no progress line ({e}); stderr so far: {:?}", self.seen),
            }
        }
    }

    fn signal(&self, signal: Signal) {
        kill_process(Pid::from_child(&self.child), signal).unwrap();
    }

    /// Waits for the process to end (at most two minutes) and returns its status and stderr.
    fn wait(mut self) -> (ExitStatus, String) {
        let start = sluice::clock::Clock::now(&sluice::clock::SystemClock);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > Duration::from_secs(120) {
                let _ = self.child.kill();
                panic!("the demo did not end: {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The reader thread ends with the pipe.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        (status, self.seen.join("\n"))
    }
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A run long enough (in virtual time) to be stopped in the middle of.
const LONG: &[&str] = &["--duration", "600"];

#[test]
fn a_finished_run_keeps_no_signing_key_and_without_state_dir_leaves_nothing() {
    let sandbox = Sandbox::new();
    let (status, err) = Run::start(sandbox.command(&["--duration", "5"])).wait();
    assert!(status.code().is_some_and(|c| c <= 1), "{status}: {err}");
    assert_eq!(sandbox.left(), Vec::<String>::new(), "{err}");

    let state = sandbox.state();
    let (status, err) =
        Run::start(sandbox.command(&["--duration", "5", "--state-dir", state.to_str().unwrap()]))
            .wait();
    assert!(status.code().is_some_and(|c| c <= 1), "{status}: {err}");
    sandbox.assert_no_key();
    assert_eq!(
        sandbox.left(),
        [
            "state",
            "state/audit.log",
            "state/audit.pub",
            "state/audit.witness",
            "state/journal.sqlite"
        ]
    );
}

/// SIGHUP is what a closed terminal or a dropped ssh session sends: it ended the run where it
/// stood (exit 129), leaving the journal and the audit log in `$TMPDIR`.
#[test]
fn sigterm_sigint_and_sighup_stop_a_run_without_state_dir_and_leave_nothing_behind() {
    for (signal, code) in [(Signal::TERM, 143), (Signal::INT, 130), (Signal::HUP, 129)] {
        let sandbox = Sandbox::new();
        let mut run = Run::start(sandbox.command(LONG));
        run.wait_until_mid_run();
        assert!(!sandbox.left().is_empty(), "mid-run, its state is on disk");
        run.signal(signal);
        let (status, err) = run.wait();
        assert_eq!(status.code(), Some(code), "{signal:?}: {status}: {err}");
        assert!(err.contains("stopped by"), "{err}");
        assert_eq!(sandbox.left(), Vec::<String>::new(), "{signal:?}: {err}");
    }
}

#[test]
fn sigkill_leaves_no_signing_key_and_only_what_the_readme_names() {
    let sandbox = Sandbox::new();
    let mut run = Run::start(sandbox.command(LONG));
    run.wait_until_mid_run();
    run.signal(Signal::KILL);
    let (status, err) = run.wait();
    assert_eq!(status.code(), None, "killed: {err}");
    sandbox.assert_no_key();
    // docs/demo.md: a `sluice-demo-*` directory (0700) with the journal (and SQLite's own
    // side files), the audit log, its witness and the public key.
    let left = sandbox.left();
    let dir = left.first().expect("the temporary state directory").clone();
    assert!(dir.starts_with("sluice-demo-"), "{left:?}");
    assert_eq!(mode_of(&sandbox.tmp().join(&dir)), 0o700);
    for path in &left[1..] {
        let (parent, name) = path.split_once('/').expect("nothing outside it");
        assert_eq!(parent, dir, "{left:?}");
        assert!(
            ["audit.log", "audit.witness", "audit.pub"].contains(&name)
                || name.starts_with("journal.sqlite"),
            "{name} is not named in docs/demo.md: {left:?}"
        );
    }
}

/// Under `nohup` (SIGHUP ignored when it starts) SIGHUP stays ignored: the run goes on, and
/// still stops cleanly on SIGTERM.
#[test]
fn under_nohup_sighup_stays_ignored() {
    let sandbox = Sandbox::new();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"trap '' HUP && exec "$0" demo "$@""#)
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args(LONG)
        .env("TMPDIR", sandbox.tmp())
        .env("XDG_CACHE_HOME", cache())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut run = Run::start(cmd);
    run.wait_until_mid_run();
    run.signal(Signal::HUP);
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        run.child.try_wait().unwrap().is_none(),
        "SIGHUP ended a run under nohup: {:?}",
        run.seen
    );
    run.signal(Signal::TERM);
    let (status, err) = run.wait();
    assert_eq!(status.code(), Some(143), "{err}");
    assert_eq!(sandbox.left(), Vec::<String>::new(), "{err}");
}

/// Under SIGHUP the kept log lacked its closing checkpoint, and `audit verify` called it
/// tampered.
#[test]
fn sigterm_or_sighup_with_a_state_dir_keeps_a_closed_log_that_verifies() {
    for (signal, code) in [(Signal::TERM, 143), (Signal::HUP, 129)] {
        a_stopped_run_keeps_a_closed_log(signal, code);
    }
}

fn a_stopped_run_keeps_a_closed_log(signal: Signal, code: i32) {
    let sandbox = Sandbox::new();
    let state = sandbox.state();
    let mut args = LONG.to_vec();
    args.extend(["--state-dir", state.to_str().unwrap()]);
    let mut run = Run::start(sandbox.command(&args));
    run.wait_until_mid_run();
    run.signal(signal);
    let (status, err) = run.wait();
    assert_eq!(status.code(), Some(code), "{signal:?}: {err}");
    sandbox.assert_no_key();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["audit", "verify"])
        .arg(state.join("audit.log"))
        .arg("--key")
        .arg(state.join("audit.pub"))
        .arg("--witness")
        .arg(state.join("audit.witness"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{signal:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_signing_key_is_written_only_where_asked_and_only_beside_kept_state() {
    let sandbox = Sandbox::new();
    let key = sandbox.root.path().join("demo.key");
    let o = sandbox
        .command(&["--duration", "5", "--keep-audit-key", key.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--state-dir"), "{err}");
    assert!(!key.exists());

    // Refused before a state directory is made: a key beside the log it signs, a key in a
    // directory that does not exist.
    let state = sandbox.state();
    for (at, said) in [
        (state.join("audit.key"), "inside the state directory"),
        (state.join("sub/audit.key"), "inside the state directory"),
        (sandbox.root.path().join("nodir/k"), "does not exist"),
    ] {
        let o = sandbox
            .command(&[
                "--duration",
                "5",
                "--state-dir",
                state.to_str().unwrap(),
                "--keep-audit-key",
                at.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{at:?}: {err}");
        assert!(err.contains(said), "{at:?}: {err}");
        assert_eq!(sandbox.left(), Vec::<String>::new(), "{at:?}: nothing made");
    }

    let (status, err) = Run::start(sandbox.command(&[
        "--duration",
        "5",
        "--state-dir",
        state.to_str().unwrap(),
        "--keep-audit-key",
        key.to_str().unwrap(),
    ]))
    .wait();
    assert!(status.code().is_some_and(|c| c <= 1), "{status}: {err}");
    assert_eq!(mode_of(&key), 0o600);
    let secret = sluice::audit::load_signing(&key).unwrap();
    let public = sluice::audit::load_verifying(&state.join("audit.pub")).unwrap();
    assert_eq!(
        secret.verifying_key(),
        public,
        "the key that signed the kept log"
    );
}

#[test]
fn state_is_private_under_an_open_umask() {
    let sandbox = Sandbox::new();
    let state = sandbox.state().join("nested");
    // The umask is per process: set it in a shell that then becomes sluice.
    let o = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 000 && exec "$0" demo --duration 5 --state-dir "$1""#)
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .arg(&state)
        .env("TMPDIR", sandbox.tmp())
        .env("XDG_CACHE_HOME", cache())
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(mode_of(&sandbox.state()), 0o700);
    assert_eq!(mode_of(&state), 0o700);
    for file in ["audit.log", "audit.witness", "audit.pub"] {
        assert_eq!(mode_of(&state.join(file)), 0o600, "{file}");
    }
}

/// An existing empty state directory that anyone could write was used: another user could
/// have replaced `audit.pub` or the witness beside the log.
#[test]
fn a_state_dir_others_can_write_is_refused_with_the_chmod_to_run() {
    let sandbox = Sandbox::new();
    let state = sandbox.state();
    for mode in [0o777, 0o770, 0o703] {
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(mode)).unwrap();
        let o = sandbox
            .command(&["--duration", "5", "--state-dir", state.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{mode:o}: {err}");
        assert!(
            err.contains(&format!("chmod go-w {}", state.display())),
            "{mode:o}: {err}"
        );
        assert_eq!(sandbox.left(), ["state"], "{mode:o}: nothing written in it");
    }
}

#[test]
fn the_audit_log_names_a_payment_s_method_once() {
    let sandbox = Sandbox::new();
    let state = sandbox.state();
    let (status, err) =
        Run::start(sandbox.command(&["--duration", "10", "--state-dir", state.to_str().unwrap()]))
            .wait();
    assert!(status.code().is_some_and(|c| c <= 1), "{status}: {err}");
    let log = std::fs::read_to_string(state.join("audit.log")).unwrap();
    let requested: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(r#""event":"action_requested""#))
        .filter_map(|l| l.split(r#""detail":""#).nth(1))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(!requested.is_empty(), "no payment in ten seconds: {log}");
    for detail in requested {
        assert_eq!(detail, "POST /v1/payment_intents uncertain_write");
    }
}
