//! Services some end-to-end tests need beside Rust — a real `redis-server`, a headless
//! browser, the providers' Python and TypeScript SDKs — for the suites in `tests/`,
//! `serve/tests/` and `cli/tests/` that use this crate. On a machine without one, `cargo
//! test --workspace` skips those tests, each saying so on its standard error; with
//! `SLUICE_REQUIRE_SERVICES` set (`.ci/run` sets it, after installing them), a missing
//! service fails them instead.
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

/// A new, empty schema of the test PostgreSQL (`SLUICE_TEST_POSTGRES_URL`; `.ci/run` starts
/// one with `tests/postgres/start.sh`), and the URL that uses it (its `search_path`):
/// `None` when no database is given (the test skips, saying so), a failure instead when
/// `SLUICE_REQUIRE_SERVICES` is set.
///
/// # Panics
/// When the database does not answer `psql`.
pub fn postgres_schema() -> Option<String> {
    let url = std::env::var("SLUICE_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if missing(
        "PostgreSQL (SLUICE_TEST_POSTGRES_URL)",
        url.is_some(),
        "start one with `eval \"$(tests/postgres/start.sh DIR)\"`",
    ) {
        return None;
    }
    let url = url?;
    // A name no other test, process or earlier run takes: the standard library's random
    // hash keys, over a count of this process's schemas.
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let random =
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), n);
    let name = format!("t_{random:016x}");
    let out = std::process::Command::new("psql")
        .args([url.as_str(), "-qAtc", &format!("CREATE SCHEMA {name}")])
        .output()
        .expect("psql runs (Debian's postgresql-client)");
    assert!(
        out.status.success(),
        "psql could not make a schema in {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sep = if url.contains('?') { '&' } else { '?' };
    Some(format!("{url}{sep}options=-csearch_path%3D{name}"))
}
