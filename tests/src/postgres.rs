//! The PostgreSQL database of the tests of a group's journal: `SLUICE_TEST_POSTGRES_URL`
//! (`.ci/run` starts one with `tests/postgres/start.sh`). Each test takes a schema of its
//! own in it ([`fresh_schema`]), so tests never see each other's rows.

use std::process::Command;

/// A new, empty schema of the test database, and the URL that uses it (its `search_path`):
/// `None` when no database is given (the test skips, saying so), a failure instead when
/// `SLUICE_REQUIRE_SERVICES` is set.
///
/// # Panics
/// When the database does not answer `psql`.
pub fn fresh_schema() -> Option<String> {
    let url = std::env::var("SLUICE_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if sluice_fake_provider::services::missing(
        "PostgreSQL (SLUICE_TEST_POSTGRES_URL)",
        url.is_some(),
        "start one with `eval \"$(tests/postgres/start.sh DIR)\"`",
    ) {
        return None;
    }
    let url = url?;
    let name = format!("t_{:016x}", fastrand::u64(..));
    let out = Command::new("psql")
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
