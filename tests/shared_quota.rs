//! Several hosts, one quota, judged at the provider: host processes (`shared_host`) share
//! one account's quotas through a real `redis-server`, and the fake provider's ledger says
//! what they sent — how many, when, and whether it had to refuse any.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use sluice::admission::shared::ClaimError;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice::writes::{WriteError, WriteOutcome};
use sluice_fake_provider::{Attempt, FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::redis_server::{RedisServer, TestRedis};
use sluice_tests::stack::{builder, transport, write};

const CHAT: &str = "/v1/chat/completions";

/// 300 requests a minute, paced at 90%: 270 a minute, one every 222 ms.
const RPM: u64 = 300;
const PACED_PER_SEC: f64 = 270.0 / 60.0;

/// A host process, and its stdout.
struct Host {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl Host {
    /// Waits for the line that starts with `prefix`, and returns it.
    fn line(&mut self, prefix: &str) -> String {
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

    fn kill(&mut self) {
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
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f)
        .await
        .expect("the blocking part")
}

fn seconds(a: &Attempt) -> f64 {
    a.at.as_secs_f64()
}

/// The most attempts that arrived in any stretch, beyond what a steady pace of one every
/// `interval` seconds admits in it (one, plus one per interval).
fn worst_excess(times: &[f64], interval: f64) -> f64 {
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
fn most_in_a_minute(times: &[f64]) -> usize {
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

async fn four_hosts(redis: &RedisServer, fake: &FakeProvider, dir: &Path, ms: u64) -> Vec<Host> {
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
    fn start_at(
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

async fn finish(hosts: Vec<Host>) -> Vec<String> {
    blocking(move || {
        hosts
            .into_iter()
            .map(|mut h| h.line("done"))
            .collect::<Vec<_>>()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hosts_on_one_quota_never_over_admit_and_use_at_least_95_percent_of_the_pace() {
    let redis = RedisServer::start();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(RPM))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let hosts = four_hosts(&redis, &fake, dir.path(), 20_000).await;
    let done = finish(hosts).await;

    let attempts = fake.attempts();
    let times: Vec<f64> = attempts.iter().map(seconds).collect();
    assert_eq!(fake.answered(429), 0, "the provider refused some: {done:?}");
    assert!(most_in_a_minute(&times) <= RPM as usize);
    // Four hosts, sixteen workers, one pace: never more than it, beyond network jitter (a
    // tenth of the pace more over the run would be nine attempts).
    let excess = worst_excess(&times, 1.0 / PACED_PER_SEC);
    assert!(
        excess <= 1.5,
        "{excess:.1} attempts beyond the pace; {done:?}"
    );
    // Utilization, from 2 s after the first attempt to 1 s before the first host stopped.
    let start = times[0] + 2.0;
    let end = times[0] + 17.0;
    let within = times.iter().filter(|t| **t >= start && **t < end).count();
    #[allow(clippy::cast_precision_loss, reason = "a few hundred attempts")]
    let utilization = within as f64 / ((end - start) * PACED_PER_SEC);
    println!(
        "attempts {}, utilization {utilization:.3}, worst excess {excess:.2}; {done:?}",
        times.len()
    );
    assert!(
        utilization >= 0.95,
        "utilization {utilization:.3}; {done:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_run_admits_no_more_than_the_pace() {
    let mut redis = RedisServer::start();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(RPM))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let hosts = four_hosts(&redis, &fake, dir.path(), 16_000).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let before = fake.attempts().len();
    redis.kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = fake.attempts().len() - before;
    redis.restart(); // empty: every quota's state is gone
    let done = finish(hosts).await;

    let times: Vec<f64> = fake.attempts().iter().map(seconds).collect();
    assert_eq!(fake.answered(429), 0, "the provider refused some: {done:?}");
    let excess = worst_excess(&times, 1.0 / PACED_PER_SEC);
    println!(
        "attempts {}, {during} while Redis was down, worst excess {excess:.2}; {done:?}",
        times.len()
    );
    // Hosts that fell back together start their local paces at random phases: at worst one
    // call from each host at once, never a burst beyond that.
    assert!(
        excess <= 3.0,
        "{excess:.1} attempts beyond the pace; {done:?}"
    );
    // The hosts went on, paced locally, while Redis was down.
    assert!(during >= 5, "only {during} attempts in 3 s without Redis");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_hosts_concurrency_slots_come_back_when_its_leases_expire() {
    let redis = RedisServer::start();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    // The first two calls never get an answer: host A holds both slots until it dies.
    fake.script(CHAT, [Fault::Hang, Fault::Hang]);
    let dir = tempfile::tempdir().expect("dir");
    let limits = "requests_per_minute = 6000; concurrent_requests = 2";
    let fake_url = format!("http://{}", fake.addr());
    let (url, d, f) = (redis.url(), dir.path().to_owned(), fake_url.clone());
    let mut a = blocking(move || {
        let mut a = Host::start_at(&url, 2, "host-a", &f, &d, 2, 60_000, limits);
        a.line("ready");
        a
    })
    .await;
    while fake.attempts().len() < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (url, d) = (redis.url(), dir.path().to_owned());
    let b = blocking(move || {
        let mut b = Host::start_at(&url, 2, "host-b", &fake_url, &d, 2, 30_000, limits);
        b.line("ready");
        b
    })
    .await;
    // Host B waits: both slots are leased by host A, renewed while it lives.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(fake.attempts().len(), 2, "host B went past host A's leases");

    #[allow(clippy::disallowed_methods, reason = "a test's stopwatch")]
    let kill = tokio::time::Instant::now();
    blocking(move || a.kill()).await;
    while fake.attempts().len() < 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            kill.elapsed() < Duration::from_secs(10),
            "the slots never came back"
        );
    }
    let back = kill.elapsed();
    drop(b);
    println!("the slots came back {back:?} after the kill");
    // The leases last 1.5 s and are renewed every 0.5 s: they expire 1–1.5 s after death.
    assert!(
        back >= Duration::from_millis(900),
        "back after {back:?}: before the leases expired"
    );
    assert!(back <= Duration::from_millis(3_000), "back after {back:?}");
}

/// A host in this process sharing quotas through `redis` as `id`, under the key prefix
/// `prefix`, with `limits` for the provider (after top-level keys and a `---` line, if
/// any).
fn host(
    (redis, prefix): (&str, &str),
    id: &str,
    plugin: &str,
    dir: &Path,
    limits: &str,
) -> sluice::Sluice {
    // Top-level keys (a margin) come first, before any table.
    let (top, limits) = limits.split_once("\n---\n").unwrap_or(("", limits));
    let config = format!(
        "{top}\n[store]\nurl = \"{redis}\"\nhosts = 2\nhost_id = \"{id}\"\nkey_prefix = \"{prefix}\"\n\n\
         [providers.{plugin}.limits]\n{limits}\n"
    );
    let retry = RetryConfig {
        backoff_base_ms: 50,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    };
    builder(plugin, &config, retry, transport(Duration::from_secs(5)))
        .state_dir(dir.join(id))
        .build()
        .expect("a host")
}

fn chat(fake: &FakeProvider) -> Call {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_seen_by_one_host_holds_the_scope_for_the_other() {
    let redis = TestRedis::get();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    fake.script(
        CHAT,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(2)),
        }],
    );
    let dir = tempfile::tempdir().expect("dir");
    let limits = "requests_per_minute = 6000";
    let (url, prefix) = (redis.url(), TestRedis::prefix());
    let a = Arc::new(host((&url, &prefix), "a", "openai", dir.path(), limits));
    let b = host((&url, &prefix), "b", "openai", dir.path(), limits);
    let call = chat(&fake);
    let first = {
        let (a, call) = (a.clone(), call.clone());
        tokio::spawn(async move { a.executor().execute(&call).await })
    };
    while fake.answered(429) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Give host A the moment it takes to read the 429 and share the hold.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(matches!(
        b.executor().execute(&call).await,
        Outcome::Succeeded { .. }
    ));
    assert!(matches!(
        first.await.expect("a's call"),
        Outcome::Succeeded { .. }
    ));
    let attempts = fake.attempts();
    let refused_at = attempts[0].at;
    assert_eq!(attempts[0].status, Some(429));
    for later in &attempts[1..] {
        let after = later.at.saturating_sub(refused_at);
        assert!(
            after >= Duration::from_millis(1_900),
            "an attempt {after:?} after the 429"
        );
    }
    assert_eq!(attempts.len(), 3, "one 429, then one call from each host");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_given_the_same_action_refuses_it_naming_its_owner() {
    let redis = TestRedis::get();
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let limits = "requests_per_minute = 6000";
    let (url, prefix) = (redis.url(), TestRedis::prefix());
    let a = host((&url, &prefix), "host-a", "stripe", dir.path(), limits);
    let b = host((&url, &prefix), "host-b", "stripe", dir.path(), limits);
    let pay = write(
        "stripe",
        "invoice-42",
        "pay",
        &fake.url("/v1/payment_intents"),
        RequestClass::UncertainWrite,
        "amount=100&currency=usd",
    );
    let done = a.write(&pay).await.expect("host A's write");
    assert!(matches!(done, WriteOutcome::Succeeded { .. }), "{done:?}");
    match b.write(&pay).await {
        Err(WriteError::Claim(ClaimError::Elsewhere { owner, .. })) => assert_eq!(owner, "host-a"),
        other => panic!("host B took the action: {other:?}"),
    }
    // Host A may write it again (it is its own): answered from its journal, not resent.
    assert!(matches!(
        a.write(&pay).await,
        Ok(WriteOutcome::Succeeded { .. })
    ));
    assert_eq!(fake.stored().len(), 1);
    assert_eq!(fake.attempts().len(), 1);
    assert!(b.journal().all().expect("journal").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_a_host_paces_at_its_share_of_the_limit() {
    // A port nothing listens on: the store is unreachable from the start.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    // 600 a minute paced at 540: 9 a second; two hosts, so 4.5 a second for this one.
    let sluice = Arc::new(host(
        (&format!("redis://127.0.0.1:{port}"), "sluice"),
        "alone",
        "openai",
        dir.path(),
        "requests_per_minute = 600",
    ));
    let call = chat(&fake);
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (s, call) = (sluice.clone(), call.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let _ = s.executor().execute(&call).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(8)).await;
    for w in &workers {
        w.abort();
    }
    let times: Vec<f64> = fake.attempts().iter().map(seconds).collect();
    let span = times[times.len() - 1] - times[0];
    #[allow(clippy::cast_precision_loss, reason = "a few dozen attempts")]
    let rate = (times.len() - 1) as f64 / span;
    println!("{} attempts at {rate:.2}/s", times.len());
    assert!(
        (3.8..=4.6).contains(&rate),
        "{rate:.2}/s: not half of the 9/s pace"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_own_quota_holds_across_hosts() {
    let redis = TestRedis::get();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    // The account allows far more; tenant acme's tier allows 120 a minute, paced at 108:
    // 1.8 a second across both hosts, not 1.8 from each.
    let limits = "requests_per_minute = 60000\n\n[tiers.small.limits]\nrequests_per_minute = 120\n\n\
                  [tenants.assign]\nacme = \"small\"";
    let (url, prefix) = (redis.url(), TestRedis::prefix());
    let a = Arc::new(host((&url, &prefix), "a", "openai", dir.path(), limits));
    let b = Arc::new(host((&url, &prefix), "b", "openai", dir.path(), limits));
    let call = chat(&fake);
    let mut workers = Vec::new();
    for sluice in [a, b] {
        for _ in 0..4 {
            let (s, call) = (sluice.clone(), call.clone());
            workers.push(tokio::spawn(async move {
                loop {
                    let _ = s.executor().execute(&call).await;
                }
            }));
        }
    }
    tokio::time::sleep(Duration::from_secs(8)).await;
    for w in &workers {
        w.abort();
    }
    let times: Vec<f64> = fake.attempts().iter().map(seconds).collect();
    let excess = worst_excess(&times, 60.0 / 108.0);
    let span = times[times.len() - 1] - times[0];
    #[allow(clippy::cast_precision_loss, reason = "a few dozen attempts")]
    let rate = (times.len() - 1) as f64 / span;
    println!(
        "{} attempts at {rate:.2}/s, worst excess {excess:.2}",
        times.len()
    );
    assert!(
        excess <= 2.0,
        "{excess:.1} attempts beyond the tenant's pace"
    );
    assert!(rate >= 1.6, "{rate:.2}/s: the tenant's quota was not used");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_costing_more_than_the_burst_goes_once_the_shared_quota_was_idle_long_enough() {
    let redis = TestRedis::get();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    // 100 000 tokens a minute paced at 99%: a burst of 1 001 tokens. The call plans about
    // 1 500 (its max_tokens and its prompt): more than the burst, less than the limit.
    let limits = "margin = 0.99\n---\ntokens_per_minute = 100000";
    let (url, prefix) = (redis.url(), TestRedis::prefix());
    let a = host((&url, &prefix), "a", "openai", dir.path(), limits);
    let call = Call::post(
        "openai",
        fake.url(CHAT),
        r#"{"model":"gpt-4o","max_tokens":1500,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .credential("team-key")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json")
    .deadline(Duration::from_secs(10));
    let outcome = tokio::time::timeout(Duration::from_secs(10), a.executor().execute(&call))
        .await
        .expect("admitted: a cost above the burst fits after an idle stretch");
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    assert_eq!(fake.attempts().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_slot_is_taken_again_soon_after_it_frees_not_when_its_lease_expires() {
    let redis = TestRedis::get();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    fake.script(
        CHAT,
        std::iter::repeat_n(Fault::Slow(Duration::from_millis(200)), 12),
    );
    let dir = tempfile::tempdir().expect("dir");
    // One slot for both hosts; leases of 10 s (the default).
    let limits = "requests_per_minute = 60000\nconcurrent_requests = 1";
    let (url, prefix) = (redis.url(), TestRedis::prefix());
    let hosts = [
        Arc::new(host((&url, &prefix), "a", "openai", dir.path(), limits)),
        Arc::new(host((&url, &prefix), "b", "openai", dir.path(), limits)),
    ];
    let call = chat(&fake);
    #[allow(clippy::disallowed_methods, reason = "a test's stopwatch")]
    let started = tokio::time::Instant::now();
    let mut calls = Vec::new();
    for sluice in &hosts {
        for _ in 0..2 {
            let (s, call) = (sluice.clone(), call.clone());
            calls.push(tokio::spawn(async move {
                for _ in 0..3 {
                    assert!(matches!(
                        s.executor().execute(&call).await,
                        Outcome::Succeeded { .. }
                    ));
                }
            }));
        }
    }
    for c in calls {
        c.await.expect("a caller");
    }
    let took = started.elapsed();
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 12);
    // One at a time: each arrived after the one before had its 200 ms.
    for pair in attempts.windows(2) {
        let gap = pair[1].at.saturating_sub(pair[0].at);
        assert!(gap >= Duration::from_millis(190), "two calls {gap:?} apart");
    }
    println!("12 calls of 200 ms through one shared slot in {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "{took:?}: waited for leases to expire"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_live_process_with_the_same_host_id_refuses_writes() {
    let redis = TestRedis::get();
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let limits = "requests_per_minute = 6000";
    let (url, prefix) = (redis.url(), TestRedis::prefix());
    let first = host((&url, &prefix), "api-1", "stripe", dir.path(), limits);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Another process given the same id (its own state directory).
    let second = host(
        (&url, &prefix),
        "api-1",
        "stripe",
        &dir.path().join("copy"),
        limits,
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pay = |action: &str| {
        write(
            "stripe",
            "invoice-7",
            action,
            &fake.url("/v1/payment_intents"),
            RequestClass::UncertainWrite,
            "amount=100&currency=usd",
        )
    };
    match second.write(&pay("pay")).await {
        Err(WriteError::Claim(ClaimError::HostIdInUse { host, .. })) => assert_eq!(host, "api-1"),
        other => panic!("two owners of one host id: {other:?}"),
    }
    assert!(matches!(
        first.write(&pay("pay")).await,
        Ok(WriteOutcome::Succeeded { .. })
    ));
    assert_eq!(fake.stored().len(), 1);
    assert!(second.journal().all().expect("journal").is_empty());
}
