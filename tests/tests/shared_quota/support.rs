//! What the shared-quota tests share: host processes and hosts in this process, the load
//! they keep up, and the measures of what the provider saw.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use sluice::admission::shared::ClaimError;
use sluice::contract::RequestClass;
use sluice::execute::Call;
use sluice::retry::RetryConfig;
use sluice::writes::{Step, Write, WriteError, WriteOutcome};
use sluice::{Sluice, SluiceBuilder};
use sluice_fake_provider::{Attempt, FakeConfig, FakeProvider, Style};
use sluice_tests::redis_server::{RedisServer, TestRedis};
use sluice_tests::stack::{builder, transport, write};

pub const CHAT: &str = "/v1/chat/completions";

/// 300 requests a minute, paced at 90%: 270 a minute, one every 222 ms.
pub const RPM: u64 = 300;
pub const PACED_PER_SEC: f64 = 270.0 / 60.0;

/// A host process, and its stdout.
pub struct Host {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Host {
    /// Waits for the line that starts with `prefix`, and returns it.
    pub fn line(&mut self, prefix: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.out.read_line(&mut line).expect("the host's output");
            assert!(n > 0, "the host exited before printing {prefix:?}");
            if line.starts_with(prefix) {
                return line.trim().to_owned();
            }
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits for `f` on a blocking thread.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f)
        .await
        .expect("the blocking part")
}

pub fn seconds(a: &Attempt) -> f64 {
    a.at.as_secs_f64()
}

/// The most attempts that arrived in any stretch, beyond what a steady pace of one every
/// `interval` seconds admits in it (one, plus one per interval).
pub fn worst_excess(times: &[f64], interval: f64) -> f64 {
    let mut worst = f64::MIN;
    for i in 0..times.len() {
        for j in i..times.len() {
            #[allow(clippy::cast_precision_loss, reason = "a few hundred attempts")]
            let count = (j - i + 1) as f64;
            worst = worst.max(count - 1.0 - (times[j] - times[i]) / interval);
        }
    }
    worst
}

/// The most attempts that arrived within any 60 s.
pub fn most_in_a_minute(times: &[f64]) -> usize {
    (0..times.len())
        .map(|i| {
            times[i..]
                .iter()
                .take_while(|t| **t - times[i] < 60.0)
                .count()
        })
        .max()
        .unwrap_or(0)
}

pub async fn four_hosts(
    redis: &RedisServer,
    fake: &FakeProvider,
    dir: &Path,
    ms: u64,
) -> Vec<Host> {
    let mut hosts = Vec::new();
    for i in 0..4 {
        let (url, fake_addr) = (redis.url(), fake.addr());
        let dir = dir.to_owned();
        let limits = format!("requests_per_minute = {RPM}");
        let host = blocking(move || {
            let fake_url = format!("http://{fake_addr}");
            let mut h = Host::start_at(
                &url,
                4,
                &format!("host-{i}"),
                &fake_url,
                &dir,
                4,
                ms,
                &limits,
            );
            h.line("ready");
            h
        })
        .await;
        hosts.push(host);
    }
    hosts
}

impl Host {
    #[allow(clippy::too_many_arguments, reason = "the process's own arguments")]
    pub fn start_at(
        redis: &str,
        hosts: u32,
        id: &str,
        fake_url: &str,
        dir: &Path,
        workers: u32,
        duration_ms: u64,
        limits: &str,
    ) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shared_host"))
            .args([redis, &hosts.to_string(), id, fake_url])
            .arg(dir.join(id))
            .args([&workers.to_string(), &duration_ms.to_string(), limits])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the shared_host binary");
        let out = BufReader::new(child.stdout.take().expect("its stdout"));
        Self { child, out }
    }
}

pub async fn finish(hosts: Vec<Host>) -> Vec<String> {
    blocking(move || {
        hosts
            .into_iter()
            .map(|mut h| h.line("done"))
            .collect::<Vec<_>>()
    })
    .await
}

/// One test's parts: a Redis, a fake provider, state directories, and a key prefix no
/// other test uses.
pub struct Stage {
    pub fake: FakeProvider,
    redis: TestRedis,
    prefix: String,
    store: String,
    dir: tempfile::TempDir,
}

impl Stage {
    pub async fn start(style: Style) -> Self {
        Self::with(TestRedis::get(), style).await
    }

    /// As [`Stage::start`], with a `redis-server` of its own, for a test that stalls it.
    pub async fn alone(style: Style) -> Self {
        Self::with(TestRedis::Own(RedisServer::start()), style).await
    }

    /// As [`Stage::alone`], its `redis-server` started with `settings` (see
    /// [`RedisServer::start_with`]).
    pub async fn alone_with(settings: &[&str], style: Style) -> Self {
        Self::with(TestRedis::Own(RedisServer::start_with(settings)), style).await
    }

    async fn with(redis: TestRedis, style: Style) -> Self {
        let fake = FakeProvider::start(FakeConfig::new(style))
            .await
            .expect("fake");
        let prefix = TestRedis::prefix();
        sluice_tests::redis_server::init_group(&redis.url(), &prefix);
        Self {
            fake,
            redis,
            prefix,
            store: String::new(),
            dir: tempfile::tempdir().expect("dir"),
        }
    }

    /// A host in this process sharing quotas as `id` (see [`host`]).
    pub fn host(&self, id: &str, plugin: &str, limits: &str) -> Sluice {
        self.host_in(id, plugin, self.dir.path(), limits)
    }

    /// The stage's hosts with the `[store]` keys `keys` too.
    #[must_use]
    pub fn store_keys(mut self, keys: &str) -> Self {
        keys.clone_into(&mut self.store);
        self
    }

    /// The `redis-server` of a stage started [`Stage::alone`].
    pub fn server(&self) -> &RedisServer {
        match &self.redis {
            TestRedis::Own(server) => server,
            TestRedis::Given(_) => panic!("a stage started alone has its own redis-server"),
        }
    }

    /// Restarts the stage's own `redis-server` (see [`Stage::alone`]) without persistence:
    /// everything it held is gone.
    pub fn restart_redis(&mut self) {
        match &mut self.redis {
            TestRedis::Own(server) => server.restart(),
            TestRedis::Given(_) => panic!("a stage started alone has its own redis-server"),
        }
    }

    /// The store as an operator's command reaches it (`sluice store recover`).
    pub fn operator_store(&self) -> sluice::admission::shared::RedisStore {
        let mut config = sluice::admission::shared::SharedConfig::new(
            self.redis.url(),
            std::num::NonZeroU32::new(2).expect("two hosts"),
        );
        config.key_prefix.clone_from(&self.prefix);
        sluice::admission::shared::RedisStore::new(&config).expect("a store client")
    }

    /// As [`Stage::host`], its state under a directory of another name: a second process
    /// given an id already in use.
    pub fn another_process(&self, id: &str, plugin: &str, limits: &str) -> Sluice {
        self.host_in(id, plugin, &self.dir.path().join("another"), limits)
    }

    fn host_in(&self, id: &str, plugin: &str, dir: &Path, limits: &str) -> Sluice {
        let store = (self.redis.url(), &self.prefix, &self.store);
        host((&store.0, store.1, store.2), id, plugin, dir, limits)
    }

    /// As [`Stage::host`], telling `listener` each step of its writes.
    pub fn host_with_steps(
        &self,
        id: &str,
        plugin: &str,
        limits: &str,
        listener: impl Fn(Step) + Send + Sync + 'static,
    ) -> Sluice {
        let store = (self.redis.url(), &self.prefix, &self.store);
        host_builder(
            (&store.0, store.1, store.2),
            id,
            plugin,
            self.dir.path(),
            limits,
        )
        .on_write_step(listener)
        .build()
        .expect("a host")
    }

    /// The URL of the stage's Redis.
    pub fn redis_url(&self) -> String {
        self.redis.url()
    }
}

/// Empties the Redis at `url` (`redis://127.0.0.1:PORT`) at once, as a restart without
/// persistence leaves it: from anywhere, a write's step listener included.
pub fn flush_all(url: &str) {
    use std::io::{Read as _, Write as _};
    let addr = url.trim_start_matches("redis://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect to redis");
    s.write_all(b"*1\r\n$8\r\nFLUSHALL\r\n").expect("FLUSHALL");
    let mut reply = [0; 5];
    s.read_exact(&mut reply).expect("its answer");
    assert_eq!(&reply, b"+OK\r\n", "FLUSHALL");
}

/// A host in this process sharing quotas through `redis` as `id`, under the key prefix
/// `prefix` and with the `[store]` keys `store`, with `limits` for the provider (after
/// top-level keys and a `---` line, if any).
pub fn host(redis: (&str, &str, &str), id: &str, plugin: &str, dir: &Path, limits: &str) -> Sluice {
    host_builder(redis, id, plugin, dir, limits)
        .build()
        .expect("a host")
}

/// The builder of [`host`].
fn host_builder(
    (redis, prefix, store): (&str, &str, &str),
    id: &str,
    plugin: &str,
    dir: &Path,
    limits: &str,
) -> SluiceBuilder {
    // Top-level keys (a margin) come first, before any table.
    let (top, limits) = limits.split_once("\n---\n").unwrap_or(("", limits));
    let config = format!(
        "{top}\n[store]\nurl = \"{redis}\"\nhosts = 2\nhost_id = \"{id}\"\nkey_prefix = \"{prefix}\"\n{store}\n\n\
         [providers.{plugin}.limits]\n{limits}\n"
    );
    let retry = RetryConfig {
        backoff_base_ms: 50,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    };
    builder(plugin, &config, retry, transport(Duration::from_secs(5))).state_dir(dir.join(id))
}

/// A payment in task `task` to the fake's payment intents: a write that one host of a group
/// sends, and no other.
pub fn payment(fake: &FakeProvider, task: &str) -> Write {
    write(
        "stripe",
        task,
        "pay",
        &fake.url("/v1/payment_intents"),
        RequestClass::UncertainWrite,
        "amount=100&currency=usd",
    )
}

/// Host `a` (`host-a`) sends `pay`; host `b`, given it after, refuses it, naming `a` as its
/// owner.
pub async fn only_the_first_host_sends(a: &Sluice, b: &Sluice, pay: &Write) {
    let done = a.write(pay).await.expect("host A's write");
    assert!(matches!(done, WriteOutcome::Succeeded { .. }), "{done:?}");
    match b.write(pay).await {
        Err(WriteError::Claim(ClaimError::Elsewhere { owner, .. })) => assert_eq!(owner, "host-a"),
        other => panic!("host B took the action: {other:?}"),
    }
}

pub fn chat(fake: &FakeProvider) -> Call {
    Call::post(
        "openai",
        fake.url(CHAT),
        r#"{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .credential("team-key")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json")
}

/// Keeps `workers` callers per host sending `call` through `hosts` for `run`, then stops
/// them; returns when each attempt the provider saw arrived, in seconds.
pub async fn load(
    hosts: &[Arc<Sluice>],
    workers: usize,
    call: &Call,
    fake: &FakeProvider,
    run: Duration,
) -> Vec<f64> {
    let mut callers = Vec::new();
    for sluice in hosts {
        for _ in 0..workers {
            let (s, call) = (sluice.clone(), call.clone());
            callers.push(tokio::spawn(async move {
                loop {
                    let _ = s.executor().execute(&call).await;
                }
            }));
        }
    }
    tokio::time::sleep(run).await;
    for c in &callers {
        c.abort();
    }
    fake.attempts().iter().map(seconds).collect()
}

/// Attempts per second from the first to the last of `times`.
pub fn rate(times: &[f64]) -> f64 {
    let span = times[times.len() - 1] - times[0];
    #[allow(clippy::cast_precision_loss, reason = "a few dozen attempts")]
    let n = (times.len() - 1) as f64;
    n / span
}
