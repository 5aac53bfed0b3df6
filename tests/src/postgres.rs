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

/// A PostgreSQL cluster a test owns (`tests/postgres/start.sh`), to stop and start again:
/// the database of a group that goes away and comes back. Removed when dropped.
#[derive(Debug)]
pub struct OwnCluster {
    dir: tempfile::TempDir,
    url: String,
    bin: String,
}

impl OwnCluster {
    /// A new cluster on a free loopback port: `None` when no PostgreSQL server is installed
    /// (the test skips, saying so), a failure instead when `SLUICE_REQUIRE_SERVICES` is set.
    ///
    /// # Panics
    /// When the server is installed but does not start.
    pub fn start() -> Option<Self> {
        let installed = std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
            versions
                .flatten()
                .any(|v| v.path().join("bin/initdb").exists())
        });
        if sluice_fake_provider::services::missing(
            "a PostgreSQL server (initdb)",
            installed,
            "install Debian's postgresql package",
        ) {
            return None;
        }
        let dir = tempfile::tempdir().expect("a directory for the cluster");
        // The cluster runs as `postgres` when this is root: it must reach its directory.
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("the cluster's directory opened to its server");
        let out = Command::new(crate::workspace().join("tests/postgres/start.sh"))
            .arg(dir.path().join("pg"))
            .output()
            .expect("tests/postgres/start.sh runs");
        assert!(
            out.status.success(),
            "the cluster did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        let value = |name: &str| {
            said.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap_or_else(|| panic!("start.sh said no {name}: {said}"))
                .to_owned()
        };
        Some(Self {
            url: value("SLUICE_TEST_POSTGRES_URL"),
            bin: value("SLUICE_TEST_POSTGRES_BIN"),
            dir,
        })
    }

    /// Its URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops it at once (`pg_ctl stop -m immediate`: as a crash, or a machine gone).
    pub fn stop(&self) {
        self.pg_ctl(&["-m", "immediate", "stop"]);
    }

    /// Starts it again on the same port, with what it held.
    pub fn start_again(&self) {
        let log = self.dir.path().join("pg/server.log");
        self.pg_ctl(&["-w", "-l", &log.display().to_string(), "start"]);
    }

    fn pg_ctl(&self, args: &[&str]) {
        let data = self.dir.path().join("pg/data");
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]);
            c.arg(format!("{}/pg_ctl", self.bin));
            c
        } else {
            Command::new(format!("{}/pg_ctl", self.bin))
        };
        let status = cmd
            .arg("-D")
            .arg(&data)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("pg_ctl runs");
        assert!(status.success(), "pg_ctl {args:?} failed");
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = Command::new(crate::workspace().join("tests/postgres/stop.sh"))
            .arg(self.dir.path().join("pg"))
            .status();
    }
}

/// Whether this process runs as root (PostgreSQL's programs then run as `postgres`).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}
