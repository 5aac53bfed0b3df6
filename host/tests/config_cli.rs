//! `sluice config check` given what a careless or hostile user gives it: a fifo, a huge
//! file, numbers no one means, a file that is not there.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Runs `sluice config check path`, killed after 30 s if it has not answered.
fn check(path: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["config", "check"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sluice");
    // Polled every 20 ms, 1 500 times: 30 s.
    for _ in 0..1_500 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    panic!("`config check {}` hangs", path.display());
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Issue: `config check` on a fifo hung, waiting for a writer that never comes.
#[cfg(target_os = "linux")]
#[test]
fn a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("admission.toml");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
    let o = check(&fifo);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a regular file"), "{err}");
    assert!(err.contains(fifo.to_str().unwrap()), "{err}");
}

/// Issue: a 33 MB configuration took 1.8 GB to check.
#[test]
fn a_file_over_a_mebibyte_is_refused_before_it_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("admission.toml");
    let line = "# a comment that makes the file large, and nothing else\n";
    std::fs::write(&big, line.repeat(33 * 1024 * 1024 / line.len())).unwrap();
    let o = check(&big);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("at most 1 MiB"), "{err}");
}

/// Issue: `max_wait_ms = 18446744073709551615` and `margin = 1e-300` were accepted.
#[test]
fn numbers_no_one_means_are_refused_naming_the_key_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.toml");
    for (text, key, range) in [
        (
            "[queue]\nmax_wait_ms = 18446744073709551615\n",
            "`queue.max_wait_ms`",
            "at most 86400000",
        ),
        ("margin = 1e-300\n", "`margin`", "between 0.01 and 1"),
    ] {
        std::fs::write(&file, text).unwrap();
        let o = check(&file);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(key) && err.contains(range), "{text}: {err}");
    }
}

/// Issue: "No such file or directory ...: No such file or directory ..." said it twice.
#[test]
fn a_missing_file_is_reported_once() {
    let o = check(Path::new("/nonexistent/admission.toml"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert!(err.contains("/nonexistent/admission.toml"), "{err}");
}

/// Issue: "No such file or directory … : No such file or directory …": an error that shows its
/// cause in its message and returns it as its source too was printed with both. Every
/// command's error line says each cause once.
#[test]
fn every_command_says_a_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("journal.sqlite");
    std::fs::write(
        &text,
        "not a database, only text long enough for a header\n",
    )
    .unwrap();
    for args in [
        vec!["config", "check", "/nonexistent/admission.toml"],
        vec!["escalations", "list", "--journal", text.to_str().unwrap()],
        vec!["plugin", "test", "openai", "/nonexistent/vectors.json"],
        vec!["plugin", "inspect", "/nonexistent/plugin.wasm"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(&args)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let parts: Vec<&str> = err.trim().split(": ").collect();
        for (i, part) in parts.iter().enumerate() {
            assert!(
                !parts[i + 1..].contains(part),
                "{args:?}: `{part}` twice in: {err}"
            );
        }
    }
}
