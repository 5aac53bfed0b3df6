//! The world of one test: fake providers in this process (OpenAI, Anthropic, and a Stripe-
//! style payments API), a configuration naming them, and `sluice serve` run as a user runs
//! it — a child process, stopped by a signal.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};

/// The token the agent passes as its SDK's api_key.
pub const AGENT_TOKEN: &str = "agent-token-of-the-sdk-tests";
/// The admin API's token.
const ADMIN_TOKEN: &str = "admin-token-of-the-sdk-tests";
/// The keys the fake providers demand: the sidecar holds them, from its environment.
pub const OPENAI_KEY: &str = "sk-fake-openai";
const ANTHROPIC_KEY: &str = "sk-ant-fake";
const PAYMENTS_KEY: &str = "sk_test_fake";
/// The longest a sidecar may take to start, or to stop.
const PATIENCE: Duration = Duration::from_secs(60);

/// Fake providers, and the runtime they run on.
pub struct World {
    pub openai: FakeProvider,
    pub anthropic: FakeProvider,
    pub payments: FakeProvider,
    /// The configuration file and the state directory.
    pub dir: tempfile::TempDir,
    // Dropped last: the providers' tasks run on it.
    _runtime: tokio::runtime::Runtime,
}

impl World {
    /// Starts the providers, each demanding its key, and writes the configuration.
    pub fn new() -> Self {
        Self::with_openai(FakeConfig::new(Style::OpenAi), "requests_per_minute = 6000")
    }

    /// [`Self::new`], with the OpenAI-style provider's own limits (`openai`) and the body of
    /// its `[providers.openai.limits]` table in the configuration (`limits`).
    pub fn with_openai(openai: FakeConfig, limits: &str) -> Self {
        Self::with_providers(openai, FakeConfig::new(Style::Anthropic), limits)
    }

    /// [`Self::with_openai`], with the Anthropic-style provider's own configuration too.
    pub fn with_providers(openai: FakeConfig, anthropic: FakeConfig, limits: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the fake providers");
        let start = |config| {
            runtime
                .block_on(FakeProvider::start(config))
                .expect("start a fake provider")
        };
        let openai = start(openai);
        openai.require_credential("authorization", &format!("Bearer {OPENAI_KEY}"));
        let anthropic = start(anthropic);
        anthropic.require_credential("x-api-key", ANTHROPIC_KEY);
        let payments = start(FakeConfig::new(Style::Stripe));
        payments.require_credential("authorization", &format!("Bearer {PAYMENTS_KEY}"));
        let dir = tempfile::tempdir().expect("a temporary directory");
        // The signing key apart from the state, as docs/sidecar.md asks of a sidecar.
        std::fs::create_dir(dir.path().join("keys")).expect("a key directory");
        sluice::audit::generate(
            &dir.path().join("keys/audit.key"),
            &dir.path().join("keys/audit.pub"),
        )
        .expect("an audit key");
        let world = Self {
            openai,
            anthropic,
            payments,
            dir,
            _runtime: runtime,
        };
        std::fs::write(world.config(), world.config_text(limits)).expect("write the configuration");
        world
    }

    /// The configuration file.
    pub fn config(&self) -> PathBuf {
        self.dir.path().join("sluice.toml")
    }

    /// Rewrites the configuration: `edit` of its text.
    pub fn configure(&self, edit: impl FnOnce(String) -> String) {
        let text = std::fs::read_to_string(self.config()).expect("the configuration");
        std::fs::write(self.config(), edit(text)).expect("write the configuration");
    }

    /// Adds agent `name`, with `token`, billing `tenant`, to the configuration.
    pub fn add_agent(&self, name: &str, token: &str, tenant: &str) {
        let digest: String = Sha256::digest(token)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        self.configure(|text| {
            text + &format!(
                "[serve.agents.{name}]\ntoken = {{ sha256 = \"{digest}\" }}\ntenant = \"{tenant}\"\n"
            )
        });
    }

    /// The journal of the sidecar's writes.
    pub fn journal(&self) -> PathBuf {
        self.dir.path().join("state/journal.sqlite")
    }

    fn config_text(&self, openai_limits: &str) -> String {
        let agent = agent_digest();
        format!(
            r#"
state_dir = "{state}"

[providers.openai]
base_url = "{openai}"
[providers.openai.credentials.team-key]
env = "SDK_TEST_OPENAI_KEY"
[providers.openai.limits]
{openai_limits}

[providers.anthropic]
base_url = "{anthropic}"
[providers.anthropic.credentials.team-key]
env = "SDK_TEST_ANTHROPIC_KEY"
header = "x-api-key"
[providers.anthropic.limits]
requests_per_minute = 6000

# A Stripe-style payments API: its plugin settles an uncertain write by a resend with the
# write's one idempotency key, which the provider answers with the first result.
[providers.payments]
plugin = "stripe"
base_url = "{payments}"
[providers.payments.credentials.live]
env = "SDK_TEST_PAYMENTS_KEY"
[providers.payments.limits]
requests_per_minute = 6000

[retry]
backoff_base_ms = 50
backoff_cap_ms = 500
breaker_threshold = 1000
# A 500 is left to the caller (the SDK-retry case); 429s are waited out, many times over.
[retry.classes.read]
max_attempts = 20
max_wait_ms = 60000
retry_statuses = [408, 429, 502, 503, 504, 529]

[audit]
key_file = "{keys}/audit.key"

[serve]
listen = "127.0.0.1:0"
shutdown_deadline_ms = 5000
[serve.admin]
listen = "127.0.0.1:0"
token = {{ env = "SDK_TEST_ADMIN_TOKEN" }}
[serve.agents.bot]
token = {{ sha256 = "{agent}" }}
tenant = "acme"
"#,
            state = self.dir.path().join("state").display(),
            keys = self.dir.path().join("keys").display(),
            openai = self.openai.url(""),
            anthropic = self.anthropic.url(""),
            payments = self.payments.url(""),
        )
    }

    /// Starts `sluice serve` on this world's configuration and waits until it is ready.
    pub fn serve(&self) -> Sidecar {
        self.serve_with(&[])
    }

    /// [`Self::serve`], with more arguments for `sluice serve`.
    pub fn serve_with(&self, args: &[&str]) -> Sidecar {
        Sidecar::start(&self.config(), args)
    }

    /// Runs `sluice serve` on this world's configuration, with `args`, expecting it to
    /// refuse to start: its exit status and what it printed.
    pub fn serve_refused(&self, args: &[&str]) -> (ExitStatus, String) {
        let mut child = Sidecar::command(&self.config())
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sluice serve");
        let status = exit_of(&mut child, || {
            "sluice serve started; it should have refused".into()
        });
        let mut log = String::new();
        child
            .stderr
            .take()
            .expect("its standard error")
            .read_to_string(&mut log)
            .expect("read its standard error");
        (status, log)
    }
}

/// The agent's token's SHA-256, hex: what a configuration names it by.
pub fn agent_digest() -> String {
    Sha256::digest(AGENT_TOKEN)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A deadline on the wall clock, for waiting on other processes: the sidecar and the
/// scripts run on real time, which no clock the test injects could move.
pub struct Deadline {
    started: Instant,
    at: Instant,
}

impl Deadline {
    /// `patience` from now.
    #[allow(
        clippy::disallowed_methods,
        reason = "other processes run on real time"
    )]
    pub fn after(patience: Duration) -> Self {
        let started = Instant::now();
        Self {
            started,
            at: started + patience,
        }
    }

    /// The time left.
    #[allow(
        clippy::disallowed_methods,
        reason = "other processes run on real time"
    )]
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether it has passed.
    pub fn passed(&self) -> bool {
        self.left().is_zero()
    }

    /// The time since it was set.
    #[allow(
        clippy::disallowed_methods,
        reason = "other processes run on real time"
    )]
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// The `sluice` binary a sidecar runs: this build's, or the one `$SLUICE_SDK_SIDECAR_BIN`
/// names (to measure another build of sluice against the same providers and agents).
fn binary() -> PathBuf {
    std::env::var_os("SLUICE_SDK_SIDECAR_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_sluice")),
        PathBuf::from,
    )
}

/// `sluice serve`, running.
pub struct Sidecar {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`: where agents connect.
    pub url: String,
    admin: SocketAddr,
    log: Arc<Mutex<String>>,
}

/// The address after `marker` in `line` (`... marker127.0.0.1:PORT/...`).
fn addr_after(line: &str, marker: &str) -> Option<SocketAddr> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let end = rest.find(['/', ' ']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

impl Sidecar {
    /// `sluice serve --config CONFIG` with the world's environment.
    fn command(config: &Path) -> Command {
        let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-cache");
        let mut command = Command::new(binary());
        command
            .args(["serve", "--config"])
            .arg(config)
            .env("XDG_CACHE_HOME", cache)
            .env("SDK_TEST_OPENAI_KEY", OPENAI_KEY)
            .env("SDK_TEST_ANTHROPIC_KEY", ANTHROPIC_KEY)
            .env("SDK_TEST_PAYMENTS_KEY", PAYMENTS_KEY)
            .env("SDK_TEST_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("RUST_LOG", "warn")
            // Telemetry only where a test's `[telemetry]` asks: never to a collector the
            // environment of the tests names.
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        command
    }

    /// `sluice serve` as the README starts it: `examples/serve.toml` on fake providers, the
    /// agent's token `agent_token` in `SLUICE_AGENT_TOKEN` — on free ports rather than the
    /// file's, so that it runs beside other tests.
    pub fn readme_example(agent_token: &str) -> Self {
        Self::readme_example_with(agent_token, &[])
    }

    /// [`Self::readme_example`] with more arguments: `--fake-faults SPEC`, say.
    pub fn readme_example_with(agent_token: &str, extra: &[&str]) -> Self {
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/serve.toml");
        let args = [
            "--fake-providers",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ];
        Self::start_with(
            Self::command(&config)
                .args(args)
                .args(extra)
                .env("SLUICE_AGENT_TOKEN", agent_token)
                .env("SLUICE_ADMIN_TOKEN", ADMIN_TOKEN),
        )
    }

    pub fn start(config: &Path, args: &[&str]) -> Self {
        Self::start_with(Self::command(config).args(args))
    }

    /// [`Self::start`] with the variables `env` set too.
    pub fn start_in(config: &Path, env: &[(&str, &str)]) -> Self {
        let mut command = Self::command(config);
        command.envs(env.iter().copied());
        Self::start_with(&mut command)
    }

    /// As [`Self::start`], without waiting for `/readyz`: for a sidecar that is not ready
    /// on purpose (it refuses writes, and says why).
    pub fn start_unready(config: &Path) -> Self {
        Self::listening(&mut Self::command(config))
    }

    /// The status of the admin API's answer to `GET path`, asked with its token.
    pub fn admin_get(&self, path: &str) -> Option<u16> {
        admin_get(self.admin, path)
    }

    fn start_with(command: &mut Command) -> Self {
        let sidecar = Self::listening(command);
        sidecar.wait_ready();
        sidecar
    }

    /// Starts `command` and waits until it says where it listens.
    fn listening(command: &mut Command) -> Self {
        let mut child = command
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sluice serve");
        let stderr = child.stderr.take().expect("its standard error");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx.send(line);
            }
        });
        let (mut agents, mut admin) = (None, None);
        let deadline = Deadline::after(PATIENCE);
        while agents.is_none() || admin.is_none() {
            let Ok(line) = rx.recv_timeout(deadline.left()) else {
                let _ = child.kill();
                panic!(
                    "sluice serve did not say where it listens:\n{}",
                    log.lock().unwrap()
                );
            };
            agents = agents.or_else(|| addr_after(&line, "agents connect to http://"));
            admin = admin.or_else(|| addr_after(&line, "admin API at http://"));
        }
        let (agents, admin) = (agents.unwrap(), admin.unwrap());
        Self {
            child: Some(child),
            url: format!("http://{agents}"),
            admin,
            log,
        }
    }

    /// Waits until `/readyz` answers 200: the writes a previous run left were carried on.
    fn wait_ready(&self) {
        let deadline = Deadline::after(PATIENCE);
        while admin_get(self.admin, "/readyz") != Some(200) {
            assert!(
                !deadline.passed(),
                "sluice serve never became ready:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The admin API's `/metrics`, as Prometheus text.
    pub fn metrics(&self) -> String {
        http(self.admin, "GET", "/metrics", ADMIN_TOKEN, "").expect("the admin API answers")
    }

    /// The JSON body of the admin API's `GET path`.
    pub fn admin_json(&self, path: &str) -> serde_json::Value {
        let answer = http(self.admin, "GET", path, ADMIN_TOKEN, "").expect("the admin API answers");
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {answer}"))
    }

    /// Its resident memory now, in bytes (`VmRSS`).
    pub fn rss(&self) -> u64 {
        let child = self.child.as_ref().expect("running");
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            .expect("its /proc status");
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in its status");
        kb * 1024
    }

    /// The address agents connect to.
    pub fn agents_addr(&self) -> SocketAddr {
        self.url
            .trim_start_matches("http://")
            .parse()
            .expect("the sidecar's address")
    }

    /// What it printed on standard error so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn signal(&mut self, signal: rustix::process::Signal) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        rustix::process::kill_process(rustix::process::Pid::from_child(&child), signal)
            .expect("signal sluice serve");
        let status = exit_of(&mut child, || {
            format!("sluice serve did not stop:\n{}", self.log())
        });
        // The reader thread gets the last lines once the pipe closes.
        std::thread::sleep(Duration::from_millis(100));
        (status, self.log())
    }

    /// Stops it with SIGTERM (a graceful stop); its exit status and what it printed.
    pub fn terminate(mut self) -> (ExitStatus, String) {
        self.signal(rustix::process::Signal::TERM)
    }

    /// Kills it with SIGKILL, as a crash would.
    pub fn kill(mut self) -> (ExitStatus, String) {
        self.signal(rustix::process::Signal::KILL)
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How `child` exited, within [`PATIENCE`]; past it, it is killed and the test fails saying
/// `why`.
fn exit_of(child: &mut Child, why: impl Fn() -> String) -> ExitStatus {
    let deadline = Deadline::after(PATIENCE);
    loop {
        if let Some(s) = child.try_wait().expect("wait for sluice serve") {
            return s;
        }
        if deadline.passed() {
            let _ = child.kill();
            panic!("{}", why());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The status of `GET path` on the admin API, with its token; `None` when it cannot be
/// asked.
fn admin_get(addr: SocketAddr, path: &str) -> Option<u16> {
    let answer = http(addr, "GET", path, ADMIN_TOKEN, "")?;
    answer.split(' ').nth(1)?.parse().ok()
}

/// The whole answer (status line, headers, body) to `METHOD path` at `addr` with `token`
/// and a JSON `body`, on a connection of its own; `None` when it cannot be asked.
pub fn http(addr: SocketAddr, method: &str, path: &str, token: &str, body: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// Lets this process open `n` files, as far as its hard limit allows: the tests below hold
/// more sockets than a default soft limit of 1 024.
pub fn open_files(n: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_some_and(|c| c < n) {
        let current = Some(limit.maximum.map_or(n, |m| m.min(n)));
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current,
                maximum: limit.maximum,
            },
        );
    }
}
