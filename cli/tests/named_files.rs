//! Files a user names, as a careless or hostile user names them: a device that never ends
//! (`/dev/zero`, `/dev/urandom`, or a symlink to one), a fifo no one writes to, a file far
//! larger than its kind ever is. Each used to hang `sluice` or grow it to gigabytes; each is
//! now refused at once, naming the file.
//!
//! Every run is watched: one that outlives its deadline, or grows past a memory bound, is
//! killed and fails the test, so a regression fails instead of hanging the suite or eating
//! the machine.
#![cfg(target_os = "linux")]

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long one run may take: an unoptimized build compiling a plugin on a busy machine.
const DEADLINE: Duration = Duration::from_secs(90);
/// How much memory one run may hold. A normal run holds a small fraction of this.
const MAX_RSS_BYTES: u64 = 1 << 30;

/// What a run printed and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `sluice args` with its cache in `cache`, killing it (and failing) past [`DEADLINE`]
/// or [`MAX_RSS_BYTES`].
fn sluice(cache: &Path, args: &[&str]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sluice");
    let start = sluice::clock::Clock::now(&sluice::clock::SystemClock);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let rss = resident_bytes(child.id());
        let late = start.elapsed() > DEADLINE;
        if late || rss > MAX_RSS_BYTES {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "sluice {args:?} {}: killed",
                if late {
                    format!("still ran after {DEADLINE:?}")
                } else {
                    format!("grew to {} MiB", rss >> 20)
                }
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child.stdout.unwrap().read_to_string(&mut stdout).unwrap();
    child.stderr.unwrap().read_to_string(&mut stderr).unwrap();
    Run {
        code: status.code(),
        stdout,
        stderr,
    }
}

/// The resident memory of process `pid`, in bytes (0 once it is gone).
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    kib << 10
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
}

/// A sparse file of `len` bytes: as large as asked, at no cost.
fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

/// Files for a test, and their names as arguments.
struct Files(tempfile::TempDir);

impl Files {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn fifo(&self, name: &str) -> String {
        mkfifo(&self.path(name));
        self.arg(name)
    }

    fn link_to_zero(&self, name: &str) -> String {
        std::os::unix::fs::symlink("/dev/zero", self.path(name)).unwrap();
        self.arg(name)
    }

    fn sparse(&self, name: &str, len: u64) -> String {
        sparse(&self.path(name), len);
        self.arg(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    fn cache(&self) -> PathBuf {
        self.path("cache")
    }
}

/// The run failed with exit code 2 and an error that says `said`.
fn assert_refused(run: &Run, said: &str) {
    assert_eq!(run.code, Some(2), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(said),
        "wanted {said:?} in: {}",
        run.stderr
    );
}

fn not_a_file(path: &str) -> String {
    format!("{path}: not a regular file")
}

fn openai_vectors() -> String {
    format!(
        "{}/../plugins/openai/vectors.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Review of issue 12, item 8: `audit verify LOG --key /dev/zero` reached 16 GB in 20 s,
/// and a fifo as the key hung.
#[test]
fn an_audit_key_that_is_a_device_a_fifo_or_too_large_is_refused_at_once() {
    let f = Files::new();
    std::fs::write(f.path("log"), "").unwrap();
    let log = f.arg("log");
    let fifo = f.fifo("key.fifo");
    let large = f.sparse("large.pub", sluice::audit::MAX_KEY_FILE_BYTES + 1);
    for key in ["/dev/zero", "/dev/urandom", &fifo] {
        let run = sluice(&f.cache(), &["audit", "verify", &log, "--key", key]);
        assert_refused(&run, &format!("the key file {}", not_a_file(key)));
    }
    let run = sluice(&f.cache(), &["audit", "verify", &log, "--key", &large]);
    assert_refused(&run, &format!("the key file {large}: larger than 4 KiB"));
}

/// Review of issue 12, item 8: a fifo as the log or the witness hung `audit verify`.
#[test]
fn an_audit_log_or_witness_that_is_a_fifo_or_a_device_is_refused_at_once() {
    use sluice::audit::{AuditLog, AuditSettings, Event, EventKind};
    let f = Files::new();
    let signer = sluice::audit::generate(&f.path("secret"), &f.path("public")).unwrap();
    let key = f.arg("public");
    let log_fifo = f.fifo("log.fifo");
    for log in [log_fifo.as_str(), "/dev/zero"] {
        let run = sluice(&f.cache(), &["audit", "verify", log, "--key", &key]);
        assert_refused(&run, &format!("the log {}", not_a_file(log)));
    }
    // A closed log that verifies, so that the witness is opened.
    let settings = AuditSettings {
        checkpoint_every: std::num::NonZeroU32::new(16).unwrap(),
        retention: None,
        witness: None,
        new_witness_epoch: false,
    };
    let t0 = 1_700_000_000_000;
    let log = AuditLog::open(&f.path("log"), signer, settings, t0).unwrap();
    log.append(&Event::new(EventKind::ActionRequested, t0).task("t"))
        .unwrap();
    log.close(t0 + 1).unwrap();
    let run = sluice(
        &f.cache(),
        &["audit", "verify", &f.arg("log"), "--key", &key],
    );
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let witness = f.fifo("witness.fifo");
    let args = ["audit", "verify", &f.arg("log"), "--key", &key, "--witness"];
    let run = sluice(&f.cache(), &[&args[..], &[witness.as_str()]].concat());
    assert_refused(&run, &format!("the witness {}", not_a_file(&witness)));
}

/// Review of issue 12, item 8: `plugin test openai /dev/zero` reached 19.6 GB in 15 s; a
/// fifo as the vector file hung.
#[test]
fn a_vector_file_that_is_a_device_a_fifo_or_too_large_is_refused_at_once() {
    let f = Files::new();
    let fifo = f.fifo("vectors.fifo");
    let link = f.link_to_zero("zero.json");
    let large = f.sparse("large.json", sluice::vectors::MAX_FILE_BYTES + 1);
    for vectors in ["/dev/zero", &fifo, &link] {
        let run = sluice(&f.cache(), &["plugin", "test", "ietf", vectors]);
        assert_refused(&run, &not_a_file(vectors));
        assert!(run.stdout.is_empty(), "no case ran: {}", run.stdout);
    }
    let run = sluice(&f.cache(), &["plugin", "test", "ietf", &large]);
    assert_refused(&run, &format!("{large}: larger than 16 MiB"));
}

/// Review of issue 12, item 8: a `.wasm` symlinked to `/dev/zero` reached 16 GB in
/// `plugin test` and `plugin inspect`; a fifo hung them.
#[test]
fn a_plugin_file_that_is_a_device_a_fifo_or_too_large_is_refused_at_once() {
    let f = Files::new();
    let link = f.link_to_zero("zero.wasm");
    let fifo = f.fifo("fifo.wasm");
    let large = f.sparse("large.wasm", sluice::plugin::MAX_PLUGIN_BYTES + 1);
    let vectors = openai_vectors();
    for wasm in [&link, &fifo] {
        let said = format!("the plugin file {}", not_a_file(wasm));
        assert_refused(
            &sluice(&f.cache(), &["plugin", "test", wasm, &vectors]),
            &said,
        );
        assert_refused(&sluice(&f.cache(), &["plugin", "inspect", wasm]), &said);
    }
    let run = sluice(&f.cache(), &["plugin", "inspect", &large]);
    assert_refused(
        &run,
        &format!("the plugin file {large}: larger than 64 MiB"),
    );
}

/// Runs `plugin test openai` on its bundled vectors with the cache in `cache`; it must pass.
fn plugin_test_passes(cache: &Path) -> Run {
    let run = sluice(cache, &["plugin", "test", "openai", &openai_vectors()]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.ends_with(" passed, 0 failed\n"),
        "{}",
        run.stdout
    );
    run
}

/// The one cached artifact under `cache`.
fn the_artifact(cache: &Path) -> PathBuf {
    let dir = cache.join("sluice").join("components");
    let found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    let [artifact] = found.try_into().expect("one cached artifact");
    artifact
}

/// Plants `plant` under the artifact's name, then checks that `plugin test` ignores it with
/// one warning that names the file once, says `why` and that it was replaced, and replaces
/// it with an artifact that loads cleanly.
fn planted_artifact_is_replaced(plant: impl Fn(&Path), why: &str) {
    let f = Files::new();
    let cache = f.cache();
    plugin_test_passes(&cache);
    let artifact = the_artifact(&cache);
    std::fs::remove_file(&artifact).unwrap();
    plant(&artifact);

    let run = plugin_test_passes(&cache);
    let name = artifact.display().to_string();
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "one warning: {}", run.stderr);
    assert_eq!(warnings[0].matches(&name).count(), 1, "{}", run.stderr);
    assert!(
        warnings[0].contains(&format!(
            "did not load the cached component {name}: {why}; recompiled it and replaced the \
             file"
        )),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("chmod"), "{}", run.stderr);
    let meta = std::fs::symlink_metadata(&artifact).unwrap();
    assert!(meta.is_file(), "replaced by a regular file: {meta:?}");

    let again = plugin_test_passes(&cache);
    assert_eq!(again.stderr, "", "the replaced artifact loads cleanly");
}

/// Review of issue 12, item 8: a fifo (0600) planted in the cache under an artifact's name
/// hung `plugin test`: the cache opened it before checking what it was.
#[test]
fn a_fifo_under_an_artifacts_name_is_replaced_not_waited_on() {
    planted_artifact_is_replaced(
        mkfifo,
        "it is not a regular file (a fifo, a device, a directory, or a symlink to one)",
    );
}

#[test]
fn a_symlink_to_dev_zero_under_an_artifacts_name_is_replaced_not_read() {
    planted_artifact_is_replaced(
        |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
        "it is not a regular file (a fifo, a device, a directory, or a symlink to one)",
    );
}

#[test]
fn an_artifact_far_larger_than_any_compiled_plugin_is_replaced_not_read() {
    planted_artifact_is_replaced(
        |p| {
            sparse(p, (256 << 20) + 1);
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
        },
        "it is larger than 256 MiB, more than this cache writes",
    );
}

/// Review of issue 12: for an artifact others may write, the warning advised `chmod go-w`
/// on the file and named it twice; the cache replaces it, and says so.
#[test]
fn an_artifact_others_can_write_is_named_once_and_said_to_be_replaced() {
    planted_artifact_is_replaced(
        |p| {
            std::fs::write(p, b"planted").unwrap();
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o666))
                .unwrap();
        },
        "it can be written by its group and other users (mode 0666)",
    );
}
