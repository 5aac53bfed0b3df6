//! The PostgreSQL database of the tests of a group's journal: `SLUICE_TEST_POSTGRES_URL`
//! (`.ci/run` starts one with `tests/postgres/start.sh`). Each test takes a schema of its
//! own in it ([`fresh_schema`]), so tests never see each other's rows; a test that stops
//! and starts its database owns a cluster ([`OwnCluster`]).

use std::process::Command;

pub use sluice_fake_provider::services::postgres_schema as fresh_schema;

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
        Self::start_with(&[])
    }

    /// As [`Self::start`], the server speaking TLS with `pki`'s server certificate (for
    /// `localhost`) and refusing every connection that is not encrypted.
    ///
    /// # Panics
    /// As [`Self::start`].
    pub fn start_tls(pki: &crate::pki::Pki) -> Option<Self> {
        let (cert, key) = (pki.path("server.pem"), pki.path("server.key"));
        Self::start_with(&["--ssl".as_ref(), cert.as_os_str(), key.as_os_str()])
    }

    fn start_with(options: &[&std::ffi::OsStr]) -> Option<Self> {
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
            .args(options)
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
