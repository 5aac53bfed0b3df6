//! Services some end-to-end tests need beside Rust — a real `redis-server`, a headless
//! browser, the providers' Python SDKs — for the suites in `tests/`, `serve/tests/` and
//! `cli/tests/` that use this crate. On a machine without one, `cargo test --workspace`
//! skips those tests, each saying so on its standard error; with `SLUICE_REQUIRE_SERVICES`
//! set (`.ci/run` sets it, after installing them), a missing service fails them instead.
use std::io::Write as _;

/// Whether a test that needs `what` must stop here because it is missing (`found` false):
/// it says so and returns `true`, or, where the services are required, panics with `install`
/// (how to get it).
///
/// # Panics
/// When `what` is missing and `SLUICE_REQUIRE_SERVICES` is set.
pub fn missing(what: &str, found: bool, install: &str) -> bool {
    if found {
        return false;
    }
    if std::env::var_os("SLUICE_REQUIRE_SERVICES").is_some_and(|v| !v.is_empty()) {
        panic!(
            "{what} is needed here and SLUICE_REQUIRE_SERVICES is set, but it is missing: {install}"
        );
    }
    // Once per test binary and service, straight to the process's stderr: libtest captures
    // what `eprintln!` prints in a test that passes, and a skip must be seen.
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.iter().any(|w| w == what) {
        said.push(what.to_owned());
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {what} is missing ({install}); set SLUICE_REQUIRE_SERVICES=1 to make this \
             a failure"
        );
    }
    true
}

/// Whether `program` runs (`program --version` exits 0).
pub fn runs(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
