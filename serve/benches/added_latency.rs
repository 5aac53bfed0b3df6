//! The latency `sluice serve` adds to a call: the same chat completion sent to the fake
//! provider directly and through an in-process sidecar (admission, the OpenAI plugin, the
//! retry engine and the transport), side by side in one run.
//!
//! The load is open-loop: requests are sent at fixed intervals whatever the answers do, and
//! each latency is counted from the request's *scheduled* send time. A closed loop (send,
//! wait, send) slows down with the server and hides the queueing a slow server causes; here
//! a request that could not start on time pays for the wait. The two targets alternate in
//! rounds (direct then sidecar, then sidecar then direct, ...) so both see the same machine
//! state, through one client with a keep-alive connection pool and the same body.
//!
//! Run: `cargo bench -p sluice-serve --bench added_latency` (about a minute). Options, by
//! environment variable:
//!
//! - `ADDED_LATENCY_RATES`: requests per second, comma-separated (default `500,2000`);
//! - `ADDED_LATENCY_SECS`: measured seconds per target and rate (default `12`);
//! - `ADDED_LATENCY_ROUNDS`: rounds those seconds are split into (default `4`);
//! - `ADDED_LATENCY_WARMUP_SECS`: unmeasured seconds per target before each rate (default `2`).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use sluice::Sluice;
use sluice::clock::{Clock, SystemClock};
use sluice::config::SluiceConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_serve::Sidecar;
use tokio::runtime::Handle;

const PATH: &str = "/v1/chat/completions";
/// What an SDK sends for a short chat completion.
const BODY: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one word."}],"max_tokens":16,"temperature":0}"#;
/// The provider key: sent by the direct client as an SDK would, and by the sidecar.
const PROVIDER_KEY: &str = "sk-bench-provider-key";
/// The agent's token, which the sidecar knows by its SHA-256.
const AGENT_TOKEN: &str = "agent-bench-token";

/// The run's options.
struct Options {
    rates: Vec<u32>,
    secs: f64,
    rounds: u32,
    warmup_secs: f64,
}

impl Options {
    fn from_env() -> Self {
        let number = |name: &str, default: f64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .unwrap_or(default)
        };
        let rates = std::env::var("ADDED_LATENCY_RATES")
            .ok()
            .map(|v| {
                v.split(',')
                    .filter_map(|r| r.trim().parse().ok())
                    .filter(|r| *r > 0)
                    .collect::<Vec<u32>>()
            })
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| vec![500, 2000]);
        Self {
            rates,
            secs: number("ADDED_LATENCY_SECS", 12.0).max(0.1),
            rounds: number("ADDED_LATENCY_ROUNDS", 4.0).max(1.0) as u32,
            warmup_secs: number("ADDED_LATENCY_WARMUP_SECS", 2.0),
        }
    }
}

/// Where requests go, and the key they carry there.
struct Target {
    name: &'static str,
    url: String,
    authorization: String,
}

/// What one target's requests at one rate came to.
#[derive(Default)]
struct Tally {
    /// Latencies of successful requests, from their scheduled send time to the body's end.
    latencies: Vec<Duration>,
    /// How late each request started (the generator's and the runtime's share).
    start_lag: Vec<Duration>,
    errors: usize,
    sent: usize,
    /// CPU time the whole process (client, fake provider and sidecar) spent meanwhile.
    cpu: Duration,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.start_lag.extend(other.start_lag);
        self.errors += other.errors;
        self.sent += other.sent;
        self.cpu += other.cpu;
    }
}

/// The value below which `q` of `sorted` lies (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The CPU time this process has used so far (user and system, all threads), from
/// `/proc/self/stat` in clock ticks of 10 ms; zero where there is no `/proc`.
fn cpu_used() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Sends `rate` requests per second to `target` for `secs`, each at its scheduled time from
/// this thread, and waits for every answer.
fn open_loop(
    rt: &Handle,
    client: &reqwest::Client,
    target: &Target,
    rate: u32,
    secs: f64,
) -> Tally {
    let count = (f64::from(rate) * secs).round() as usize;
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let samples = Arc::new(Mutex::new(Tally {
        sent: count,
        ..Tally::default()
    }));
    let mut tasks = Vec::with_capacity(count);
    let cpu_before = cpu_used();
    let clock = SystemClock;
    let start = clock.now() + Duration::from_millis(5);
    for i in 0..count {
        let scheduled = start + interval * u32::try_from(i).unwrap_or(u32::MAX);
        if let Some(ahead) = scheduled.checked_duration_since(clock.now()) {
            std::thread::sleep(ahead);
        }
        let request = client
            .post(&target.url)
            .header("authorization", &target.authorization)
            .header("content-type", "application/json")
            .body(BODY);
        let samples = samples.clone();
        tasks.push(rt.spawn(async move {
            let lag = clock.now().saturating_duration_since(scheduled);
            let ok = match request.send().await {
                Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
                _ => false,
            };
            let latency = clock.now().saturating_duration_since(scheduled);
            let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
            s.start_lag.push(lag);
            if ok {
                s.latencies.push(latency);
            } else {
                s.errors += 1;
            }
        }));
    }
    rt.block_on(async {
        for t in tasks {
            let _ = t.await;
        }
    });
    let cpu = cpu_used().saturating_sub(cpu_before);
    let mut guard = samples.lock().unwrap_or_else(|e| e.into_inner());
    guard.cpu = cpu;
    std::mem::take(&mut *guard)
}

/// The host's configuration: one OpenAI-style provider at `base_url`, limits far above the
/// load, one agent known by its token's digest.
fn config_text(dir: &std::path::Path, base_url: &str) -> String {
    let digest: String = Sha256::digest(AGENT_TOKEN.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        r#"
        state_dir = "{dir}/state"
        [providers.openai]
        plugin = "openai"
        base_url = "{base_url}"
        [providers.openai.credentials.bench-key]
        file = "{dir}/openai.key"
        [providers.openai.limits]
        requests_per_minute = 6000000
        [serve.agents.bench]
        token = {{ sha256 = "{digest}" }}
        tenant = "bench"
        "#,
        dir = dir.display(),
    )
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!("{cpus} CPUs, load average {}", load.join(" "))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = Options::from_env();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let handle = rt.handle().clone();
    // As `sluice serve` does: its metrics go to a Prometheus recorder.
    metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;

    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("openai.key"), format!("{PROVIDER_KEY}\n"))?;
    let (fake, running) = rt.block_on(async {
        let fake =
            FakeProvider::start(FakeConfig::new(Style::OpenAi).stream_gap(Duration::ZERO)).await?;
        fake.require_credential("authorization", &format!("Bearer {PROVIDER_KEY}"));
        let text = config_text(dir.path(), &fake.url(""));
        let config = SluiceConfig::from_toml(&text, dir.path())?;
        let sluice = Arc::new(Sluice::builder().config(config.clone()).build()?);
        let any_port: SocketAddr = "127.0.0.1:0".parse()?;
        let running = Sidecar::new(sluice, &config)?
            .listen(any_port)
            .start()
            .await?;
        while !running.ready() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok::<_, Box<dyn std::error::Error>>((fake, running))
    })?;

    let direct = Target {
        name: "direct",
        url: fake.url(PATH),
        authorization: format!("Bearer {PROVIDER_KEY}"),
    };
    let governed = Target {
        name: "sluice",
        url: format!("http://{}/openai{PATH}", running.addr()),
        authorization: format!("Bearer {AGENT_TOKEN}"),
    };
    let client = rt.block_on(async {
        reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .timeout(Duration::from_secs(10))
            .build()
    })?;

    eprintln!(
        "added latency: rates {:?}/s, {} s per target and rate in {} rounds, {} s warm-up; {}",
        options.rates,
        options.secs,
        options.rounds,
        options.warmup_secs,
        machine()
    );
    let mut rows = Vec::new();
    for &rate in &options.rates {
        for target in [&direct, &governed] {
            open_loop(&handle, &client, target, rate, options.warmup_secs);
        }
        let mut tallies = [Tally::default(), Tally::default()];
        let per_round = options.secs / f64::from(options.rounds);
        for round in 0..options.rounds {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let target = [&direct, &governed][i];
                let t = open_loop(&handle, &client, target, rate, per_round);
                tallies[i].add(t);
            }
        }
        eprintln!("{rate}/s done; {}", machine());
        rows.push((rate, tallies));
    }

    println!(
        "\n| rate/s | target | sent | errors | p50 µs | p90 µs | p99 µs | max µs | start lag p50 / p99 µs | CPU µs/request |"
    );
    println!("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    let mut added = Vec::new();
    for (rate, tallies) in &mut rows {
        let mut p = [[Duration::ZERO; 2]; 2];
        for (i, t) in tallies.iter_mut().enumerate() {
            t.latencies.sort_unstable();
            t.start_lag.sort_unstable();
            let l = &t.latencies;
            p[i] = [quantile(l, 0.50), quantile(l, 0.99)];
            println!(
                "| {rate} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} / {:.0} | {:.0} |",
                [&direct, &governed][i].name,
                t.sent,
                t.errors,
                micros(quantile(l, 0.50)),
                micros(quantile(l, 0.90)),
                micros(quantile(l, 0.99)),
                micros(l.last().copied().unwrap_or_default()),
                micros(quantile(&t.start_lag, 0.50)),
                micros(quantile(&t.start_lag, 0.99)),
                micros(t.cpu) / t.sent.max(1) as f64,
            );
        }
        added.push((*rate, p));
    }
    println!("\n| rate/s | added p50 µs | added p99 µs |");
    println!("|--:|--:|--:|");
    for (rate, [d, g]) in added {
        println!(
            "| {rate} | {:.0} | {:.0} |",
            micros(g[0]) - micros(d[0]),
            micros(g[1]) - micros(d[1]),
        );
    }
    eprintln!("provider answered {} requests", fake.attempts().len());
    rt.block_on(running.shutdown());
    Ok(())
}
