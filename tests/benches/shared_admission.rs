//! What sharing quotas on Redis costs, on loopback: one admission (acquire and complete)
//! with admission in memory, with the shared store asked for every call, and with slices
//! of the quota (`[store] slice_ms`), measured side by side in one run; the admissions per
//! second of one host and of four hosts sharing one store, both ways; four hosts at the
//! pace of one quota against a provider that counts it, both ways; and how tenants share
//! one quota when their calls come from different hosts (four hosts in this process, each
//! its own host with its own connection, on one fake provider).
//!
//! Run: `cargo bench -p sluice-tests --bench shared_admission` (starts its own
//! `redis-server`; Debian: `apt-get install redis-server`).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sluice::admission::shared::{Gate, SharedConfig};
use sluice::admission::{Acquire, Admission, Config};
use sluice::clock::{Clock, SystemClock};
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_tests::redis_server::RedisServer;
use sluice_tests::stack::{builder, transport};

/// Limits no run reaches: what is measured is the admission's own cost, never a wait. No
/// concurrency limit: a scope with one is admitted call by call (a slot is leased for each
/// call), slices or not.
const LIMITS: &str = "[providers.openai.limits]\nrequests_per_minute = 60000000\n";

/// `[store] slice_ms` of each way of sharing: every call asks the store, or slices.
const PER_CALL: Duration = Duration::ZERO;
const SLICES: Duration = Duration::from_millis(250);

fn config() -> Config {
    Config::from_toml(LIMITS).expect("a configuration")
}

fn shared(url: &str, host: &str, prefix: &str, slice: Duration) -> Admission {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut store = SharedConfig::new(url, NonZeroU32::new(4).expect("4"));
    store.key_prefix = prefix.into();
    store.slice = slice;
    let gate = Gate::new(store, host.into(), clock.clone(), None).expect("a gate");
    Admission::with_gate(config(), clock, gate).expect("admission")
}

#[allow(clippy::disallowed_methods, reason = "a benchmark's stopwatch")]
fn now() -> Instant {
    Instant::now()
}

/// `n` admissions one after another; each one's latency in nanoseconds.
async fn latencies(admission: &Admission, n: usize, out: &mut Vec<u64>) {
    for _ in 0..n {
        let started = now();
        let permit = admission
            .acquire(Acquire::new("openai", "team-key"))
            .await
            .expect("admitted");
        permit.complete(None);
        out.push(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
}

fn mean(v: &[u64]) -> f64 {
    #[allow(clippy::cast_precision_loss, reason = "nanoseconds to microseconds")]
    let mean = v.iter().sum::<u64>() as f64 / v.len().max(1) as f64 / 1_000.0;
    mean
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "an index into a few thousand samples"
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    #[allow(clippy::cast_precision_loss, reason = "nanoseconds to microseconds")]
    let us = sorted[i] as f64 / 1_000.0;
    us
}

/// Admissions per second of `hosts`, each with `tasks` callers, for `run`.
async fn throughput(hosts: &[Admission], tasks: usize, run: Duration) -> f64 {
    let admitted = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for admission in hosts {
        for _ in 0..tasks {
            let (admission, admitted, stop) = (admission.clone(), admitted.clone(), stop.clone());
            handles.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let permit = admission
                        .acquire(Acquire::new("openai", "team-key"))
                        .await
                        .expect("admitted");
                    permit.complete(None);
                    admitted.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
    }
    let started = now();
    tokio::time::sleep(run).await;
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.await.expect("a caller");
    }
    #[allow(clippy::cast_precision_loss, reason = "a count of admissions")]
    let rate = admitted.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    rate
}

/// A host of the OpenAI plugin with `config`, its state in `dir`.
fn openai_host(config: &str, dir: &std::path::Path) -> Arc<sluice::Sluice> {
    Arc::new(
        builder(
            "openai",
            config,
            RetryConfig::default(),
            transport(Duration::from_secs(5)),
        )
        .state_dir(dir)
        .build()
        .expect("a host"),
    )
}

/// Four hosts on one quota of 300 requests a minute (paced at 4.5 a second) for `run`;
/// `tenants[h]` lists the tenants host `h` sends for, with 8 callers each. Returns each
/// tenant's calls that succeeded.
async fn shares(
    redis: &str,
    prefix: &str,
    tenants: [&[&'static str]; 4],
    slice: Duration,
    run: Duration,
) -> Vec<(&'static str, u64)> {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(300))
        .await
        .expect("fake");
    let counts: Arc<std::sync::Mutex<std::collections::BTreeMap<&str, u64>>> = Arc::default();
    let mut hosts = Vec::new();
    let mut handles = Vec::new();
    let dir = tempfile::tempdir().expect("dir");
    for (h, names) in tenants.iter().enumerate() {
        let config = format!(
            "[store]\nurl = \"{redis}\"\nhosts = 4\nhost_id = \"h{h}\"\nkey_prefix = \"{prefix}\"\n\
             slice_ms = {}\n\n[providers.openai.limits]\nrequests_per_minute = 300\n",
            slice.as_millis()
        );
        let sluice = openai_host(&config, &dir.path().join(format!("h{h}")));
        for &tenant in *names {
            for _ in 0..8 {
                let (sluice, counts, url) = (
                    sluice.clone(),
                    counts.clone(),
                    fake.url("/v1/chat/completions"),
                );
                handles.push(tokio::spawn(async move {
                    loop {
                        let call = Call::post(
                            "openai",
                            &url,
                            r#"{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#,
                        )
                        .credential("team-key")
                        .tenant(tenant)
                        .class(RequestClass::Read)
                        .header("content-type", "application/json");
                        if let Outcome::Succeeded { .. } = sluice.executor().execute(&call).await {
                            *counts.lock().expect("counts").entry(tenant).or_default() += 1;
                        }
                    }
                }));
            }
        }
        hosts.push(sluice);
    }
    tokio::time::sleep(run).await;
    for h in handles {
        h.abort();
    }
    let counts = counts.lock().expect("counts");
    counts.iter().map(|(t, n)| (*t, *n)).collect()
}

/// Four hosts, 16 callers each, on one quota of 60 000 requests a minute (margin 0.95:
/// paced at 950 a second) that the provider counts too, for `run`, with slices of `slice`; with
/// `restart`, Redis is killed a third of the way in and started again, empty, 3 s later.
/// The calls that succeeded a second, and the provider's 429s.
async fn paced(
    server: &mut RedisServer,
    prefix: &str,
    slice: Duration,
    run: Duration,
    restart: bool,
) -> (f64, usize) {
    let redis = server.url();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(60_000))
        .await
        .expect("fake");
    let done = Arc::new(AtomicU64::new(0));
    let counting = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    let dir = tempfile::tempdir().expect("dir");
    let mut hosts = Vec::new();
    for h in 0..4 {
        let config = format!(
            "margin = 0.95\n[store]\nurl = \"{redis}\"\nhosts = 4\nhost_id = \"p{h}\"\n\
             key_prefix = \"{prefix}\"\nslice_ms = {}\n\n\
             [providers.openai.limits]\nrequests_per_minute = 60000\n",
            slice.as_millis()
        );
        let sluice = openai_host(&config, &dir.path().join(format!("p{h}")));
        for _ in 0..16 {
            let (sluice, done, counting, url) = (
                sluice.clone(),
                done.clone(),
                counting.clone(),
                fake.url("/v1/chat/completions"),
            );
            handles.push(tokio::spawn(async move {
                loop {
                    let call = Call::post("openai", &url, r#"{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#)
                        .credential("team-key")
                        .class(RequestClass::Read)
                        .header("content-type", "application/json");
                    if let Outcome::Succeeded { .. } = sluice.executor().execute(&call).await
                        && counting.load(Ordering::Relaxed)
                    {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        hosts.push(sluice);
    }
    // The first seconds spend the store's empty burst and learn each host's demand.
    tokio::time::sleep(Duration::from_secs(2).min(run / 2)).await;
    counting.store(true, Ordering::Relaxed);
    let started = now();
    if restart {
        tokio::time::sleep(run / 3).await;
        server.kill();
        tokio::time::sleep(Duration::from_secs(3)).await;
        tokio::task::block_in_place(|| server.restart());
    }
    tokio::time::sleep(run.saturating_sub(started.elapsed())).await;
    let elapsed = started.elapsed().as_secs_f64();
    counting.store(false, Ordering::Relaxed);
    for h in handles {
        h.abort();
    }
    #[allow(clippy::cast_precision_loss, reason = "a count of calls")]
    let rate = done.load(Ordering::Relaxed) as f64 / elapsed;
    (rate, fake.answered(429))
}

fn print_shares(case: &str, shares: &[(&str, u64)]) {
    let total: u64 = shares.iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = shares
        .iter()
        .map(|(t, n)| {
            #[allow(clippy::cast_precision_loss, reason = "a few hundred calls")]
            let share = *n as f64 * 100.0 / total.max(1) as f64;
            format!("{t} {n} ({share:.0}%)")
        })
        .collect();
    println!("  {case:<48} {}", parts.join(", "));
}

/// How much of each part runs: all of it with `--bench`; without it (as `cargo test
/// --benches` runs it), a brief check that every part still runs — a fiftieth of the
/// admissions and a second per timed run.
struct Scale {
    rounds: usize,
    per_round: usize,
    throughput: Duration,
    paced: Duration,
    shares: Duration,
}

impl Scale {
    fn of_this_run() -> Self {
        if std::env::args().any(|a| a == "--bench") {
            Self {
                rounds: 10,
                per_round: 1_000,
                throughput: Duration::from_secs(5),
                paced: Duration::from_secs(20),
                shares: Duration::from_secs(30),
            }
        } else {
            Self {
                rounds: 2,
                per_round: 100,
                throughput: Duration::from_secs(1),
                paced: Duration::from_secs(1),
                shares: Duration::from_secs(1),
            }
        }
    }
}

fn main() {
    let scale = Scale::of_this_run();
    let mut redis = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let mut sliced_scripts = 0;
        let local = Admission::new(config(), Arc::new(SystemClock)).expect("admission");
        let per_call = shared(&redis.url(), "bench-1", "bench-latency", PER_CALL);
        let sliced = shared(&redis.url(), "bench-2", "bench-latency-sliced", SLICES);
        // Warm all three (connection, script cache, the slices' demand), then alternate
        // rounds so that all see the same machine.
        let (mut l, mut r, mut c) = (Vec::new(), Vec::new(), Vec::new());
        latencies(&local, 500, &mut Vec::new()).await;
        latencies(&per_call, 500, &mut Vec::new()).await;
        latencies(&sliced, 500, &mut Vec::new()).await;
        for _ in 0..scale.rounds {
            latencies(&local, scale.per_round, &mut l).await;
            latencies(&per_call, scale.per_round, &mut r).await;
            let before = redis.script_calls();
            latencies(&sliced, scale.per_round, &mut c).await;
            sliced_scripts += redis.script_calls() - before;
        }
        l.sort_unstable();
        r.sort_unstable();
        c.sort_unstable();
        println!(
            "one admission (acquire + complete), {} each, alternating rounds:",
            l.len()
        );
        println!("  admission                 p50 µs   p99 µs   mean µs");
        for (name, v) in [
            ("in memory", &l),
            ("Redis, every call", &r),
            ("Redis, slices", &c),
        ] {
            println!(
                "  {name:<22} {:>9.1} {:>8.1} {:>9.1}",
                percentile(v, 0.5),
                percentile(v, 0.99),
                mean(v)
            );
        }
        println!(
            "  store calls with slices: {sliced_scripts} for {} admissions",
            c.len()
        );
        // What Redis itself spent running the scripts (its own count, in µs).
        if let Some(stats) = redis.command_stats("evalsha") {
            println!("  inside Redis: {stats}");
        }

        let run = scale.throughput;
        let one = throughput(
            &[shared(&redis.url(), "t-1", "bench-one", PER_CALL)],
            32,
            run,
        )
        .await;
        let four: Vec<Admission> = (0..4)
            .map(|i| shared(&redis.url(), &format!("t4-{i}"), "bench-four", PER_CALL))
            .collect();
        let four = throughput(&four, 32, run).await;
        let four_sliced: Vec<Admission> = (0..4)
            .map(|i| {
                shared(
                    &redis.url(),
                    &format!("s4-{i}"),
                    "bench-four-sliced",
                    SLICES,
                )
            })
            .collect();
        let four_sliced = throughput(&four_sliced, 32, run).await;
        let memory = throughput(&[local], 32, run).await;
        println!("admissions per second, 32 callers per host, {run:?}:");
        println!("  one host, in memory             {memory:>9.0}");
        println!("  one host, Redis every call      {one:>9.0}");
        println!("  four hosts, Redis every call    {four:>9.0}");
        println!("  four hosts, Redis slices        {four_sliced:>9.0}");

        let run = scale.paced;
        println!(
            "four hosts on 60 000 requests a minute (paced at 950/s), 16 callers each, {run:?}:"
        );
        for (name, slice, restart) in [
            ("every call", PER_CALL, false),
            ("slices", SLICES, false),
            ("every call, Redis restarted", PER_CALL, true),
            ("slices, Redis restarted", SLICES, true),
        ] {
            let prefix = format!("bench-paced-{}-{restart}", slice.as_millis());
            let (rate, limited) = paced(&mut redis, &prefix, slice, run, restart).await;
            println!(
                "  {name:<28} {rate:>7.1} calls/s ({:.1}% of the pace, {:.1}% of the limit), \
                 {limited} 429s",
                rate * 100.0 / 950.0,
                rate * 100.0 / 1_000.0
            );
        }

        let run = scale.shares;
        println!("tenants of equal weight on one quota (4.5/s) from four hosts, {run:?}:");
        let cases: [(&str, [&[&'static str]; 4]); 3] = [
            (
                "both tenants on every host",
                [&["a", "b"], &["a", "b"], &["a", "b"], &["a", "b"]],
            ),
            (
                "a on three hosts, b on one",
                [&["a"], &["a"], &["a"], &["b"]],
            ),
            (
                "a on four hosts, b on one of them",
                [&["a", "b"], &["a"], &["a"], &["a"]],
            ),
        ];
        for (i, (case, tenants)) in cases.into_iter().enumerate() {
            for (way, slice) in [("every call", PER_CALL), ("slices", SLICES)] {
                let prefix = format!("bench-shares-{i}-{}", slice.as_millis());
                let got = shares(&redis.url(), &prefix, tenants, slice, run).await;
                print_shares(&format!("{case}, {way}"), &got);
            }
        }
    });
}
