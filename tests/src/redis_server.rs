//! A real `redis-server` on a loopback port, owned by one test: started empty, with the
//! append-only file a host requires before it claims writes there (see
//! `sluice::admission::shared::Vanishing`), killed with the test, and restartable on the
//! same port, empty again, as a Redis that lost its disk comes back. [`RedisServer::start_with`]
//! starts one configured otherwise (evicting, without persistence). A new server holds the
//! ownership epoch of the group under the default key prefix, as `sluice store init` makes
//! it ([`init_group`] for another prefix); one restarted has lost it.
//! [`RedisServer::start_tls`] starts one that speaks TLS only (`rediss://`).
//!
//! The binary is `$SLUICE_REDIS_SERVER` or `redis-server` on the `PATH` (Debian's
//! `redis-server` package; `.ci/run` installs it when missing).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    settings: Vec<String>,
    /// It speaks TLS only.
    tls: bool,
}

impl RedisServer {
    /// Starts one on a free loopback port.
    ///
    /// # Panics
    /// When `redis-server` is not installed (the message says how to install it) or does
    /// not answer within 10 s.
    pub fn start() -> Self {
        Self::start_with(&["--appendonly", "yes"])
    }

    /// Starts one on a free loopback port with `settings` (`redis-server` arguments, such
    /// as `["--appendonly", "no"]`) instead of the default append-only file.
    ///
    /// # Panics
    /// As [`Self::start`].
    pub fn start_with(settings: &[&str]) -> Self {
        let port = free_port();
        let settings = settings.iter().map(|s| (*s).to_owned()).collect();
        let server = Self::spawned(port, settings, false);
        init_group(&server.url(), "sluice");
        server
    }

    /// Starts one with the append-only file on a free loopback port that speaks TLS only,
    /// with `pki`'s server certificate (for `localhost`) and key; with `auth_clients`, it
    /// refuses a client that shows no certificate signed by `pki`'s CA. It holds no
    /// ownership epoch: a test makes one through the store it reaches it by.
    ///
    /// # Panics
    /// As [`Self::start`].
    pub fn start_tls(pki: &crate::pki::Pki, auth_clients: bool) -> Self {
        let port = free_port();
        let file = |name: &str| pki.path(name).display().to_string();
        let settings = [
            "--appendonly",
            "yes",
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-cert-file",
            &file("server.pem"),
            "--tls-key-file",
            &file("server.key"),
            "--tls-ca-cert-file",
            &file("ca.pem"),
            "--tls-auth-clients",
            if auth_clients { "yes" } else { "no" },
        ];
        Self::spawned(port, settings.map(str::to_owned).to_vec(), true)
    }

    fn spawned(port: u16, settings: Vec<String>, tls: bool) -> Self {
        let mut server = Self {
            child: None,
            port,
            dir: tempfile::tempdir().expect("a directory for redis"),
            settings,
            tls,
        };
        server.spawn();
        server
    }

    /// Its URL: `redis://127.0.0.1:PORT`, or `rediss://localhost:PORT` (the name its
    /// certificate is for) for one started [`Self::start_tls`].
    pub fn url(&self) -> String {
        if self.tls {
            format!("rediss://localhost:{}", self.port)
        } else {
            format!("redis://127.0.0.1:{}", self.port)
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills it (SIGKILL): its state is gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty: its files are gone too.
    pub fn restart(&mut self) {
        self.kill();
        if let Ok(entries) = std::fs::read_dir(self.dir.path()) {
            for entry in entries.flatten() {
                let path = entry.path();
                let _ = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
        self.spawn();
    }

    fn spawn(&mut self) {
        let binary =
            std::env::var("SLUICE_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
        let child = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(self.port.to_string())
            .args(["--save", ""])
            .args(&self.settings)
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {binary:?} ({e}): install Redis (Debian: apt-get install \
                     redis-server) or set SLUICE_REDIS_SERVER to its path"
                )
            });
        self.child = Some(child);
        for _ in 0..1_000 {
            // One that speaks TLS only is up once it listens.
            let up = if self.tls {
                TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            } else {
                self.pong()
            };
            if up {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server on port {} did not answer PING", self.port);
    }

    /// The scripts the server ran so far: `EVALSHA` calls, and `EVAL` for each script's
    /// first call.
    pub fn script_calls(&self) -> u64 {
        ["evalsha", "eval"]
            .iter()
            .filter_map(|c| self.command_stats(c))
            .filter_map(|line| {
                let calls = line.split("calls=").nth(1)?;
                calls.split(',').next()?.parse::<u64>().ok()
            })
            .sum()
    }

    /// The `cmdstat_<command>` line of `INFO commandstats` (calls, µs in all, µs per call),
    /// if the server ran the command.
    pub fn command_stats(&self, command: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        s.write_all(b"INFO commandstats\r\n").ok()?;
        let mut text = Vec::new();
        let mut buf = [0; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.extend_from_slice(&buf[..n]);
            if text.ends_with(b"\r\n\r\n") || text.len() > 1 << 20 {
                break;
            }
        }
        let text = String::from_utf8_lossy(&text);
        let wanted = format!("cmdstat_{command}:");
        text.lines()
            .find(|l| l.starts_with(&wanted))
            .map(|l| l.trim().to_owned())
    }

    /// Holds every client's commands for `pause` (`CLIENT PAUSE … ALL`): they queue, and
    /// run once it ends, as on a server that stalls.
    pub fn pause_clients(&self, pause: Duration) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to redis-server");
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let command = format!("CLIENT PAUSE {} ALL\r\n", pause.as_millis());
        s.write_all(command.as_bytes()).expect("CLIENT PAUSE sent");
        let mut buf = [0; 5];
        s.read_exact(&mut buf).expect("CLIENT PAUSE answered");
        assert_eq!(&buf, b"+OK\r\n", "CLIENT PAUSE refused");
    }

    fn pong(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let mut buf = [0; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The Redis of a test that never stops it: the one `.ci/run` starts for the tests
/// (`$SLUICE_TEST_REDIS_URL`), else one of its own. Tests that share one keep apart by
/// their key prefix ([`TestRedis::prefix`]).
#[derive(Debug)]
pub enum TestRedis {
    /// The server named by `$SLUICE_TEST_REDIS_URL`.
    Given(String),
    /// One started for this test.
    Own(RedisServer),
}

impl TestRedis {
    /// The server named by `$SLUICE_TEST_REDIS_URL`, else a new one.
    pub fn get() -> Self {
        match std::env::var("SLUICE_TEST_REDIS_URL") {
            Ok(url) if !url.is_empty() => Self::Given(url),
            _ => Self::Own(RedisServer::start()),
        }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        match self {
            Self::Given(url) => url.clone(),
            Self::Own(server) => server.url(),
        }
    }

    /// A key prefix no other test uses.
    pub fn prefix() -> String {
        format!("sluice-test-{:016x}", fastrand::u64(..))
    }
}

/// Makes the ownership epoch of the group whose keys start with `prefix` in the Redis at
/// `url` (`redis://HOST:PORT`), as `sluice store init` does once for a new group: hosts
/// never make it. Changes nothing when there is one.
///
/// # Panics
/// When the server does not answer.
pub fn init_group(url: &str, prefix: &str) {
    let addr = url
        .strip_prefix("redis://")
        .and_then(|rest| rest.split('/').next())
        .expect("a redis://HOST:PORT URL");
    let mut s = TcpStream::connect(addr).expect("connect to redis-server");
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let key = format!("{prefix}:epoch");
    let token = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
    let command = format!(
        "*4\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{token}\r\n$2\r\nNX\r\n",
        key.len(),
        token.len()
    );
    s.write_all(command.as_bytes()).expect("SET sent");
    let mut buf = [0; 1];
    s.read_exact(&mut buf).expect("SET answered");
    assert!(matches!(&buf, b"+" | b"$"), "SET refused");
}

/// Whether a test that needs Redis must stop here: no `$SLUICE_TEST_REDIS_URL` and no
/// `redis-server` to start (see `sluice_fake_provider::services`).
///
/// # Panics
/// When Redis is missing and `SLUICE_REQUIRE_SERVICES` is set.
pub fn without_redis() -> bool {
    let given = std::env::var("SLUICE_TEST_REDIS_URL").is_ok_and(|u| !u.is_empty());
    let binary = std::env::var("SLUICE_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned());
    sluice_fake_provider::services::missing(
        "redis-server",
        given || sluice_fake_provider::services::runs(&binary),
        "Debian: apt-get install redis-server, or set SLUICE_REDIS_SERVER to its path",
    )
}
