//! The load: open-loop requests over a fixed number of keep-alive connections, each latency
//! counted from the request's *scheduled* send time, and the figures drawn from them.
//!
//! `connections` workers each own one connection (a client with a pool of one). Request `i`
//! is scheduled at `start + i / rate`; at its time a pacing thread hands it to a free worker,
//! which sends it. When every worker is busy the schedule runs on without them, and the
//! request that starts late pays for it: a closed loop (send, wait, send) would slow down
//! with the server and hide the queueing a slow server causes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice::clock::{Clock, SystemClock};
use sluice::{Call, Outcome, RequestClass, Sluice};

/// Where it is sent: the provider's chat completions.
pub const PATH: &str = "/v1/chat/completions";
/// The provider key's label in the host's configuration, that the embedded host's calls name.
pub const CREDENTIAL: &str = "bench-key";
/// What an SDK sends for a short chat completion.
pub const BODY: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one word."}],"max_tokens":16,"temperature":0}"#;

/// Where requests go, and what they carry there.
pub struct Target {
    pub name: &'static str,
    pub via: Via,
    /// The process serving it, when it is a process of its own: its CPU time is its cost.
    pub pid: Option<u32>,
    /// Its admin API's `/metrics` and the token to read it, when it serves one: how long
    /// its plugin calls took, as the server timed them.
    pub metrics: Option<(String, String)>,
}

/// Each plugin function's calls and the seconds they took in all, as `/metrics` counts them.
pub type PluginTimes = std::collections::BTreeMap<String, (f64, f64)>;

/// The plugin calls `target` has timed so far (`sluice_plugin_call_seconds`), by function;
/// empty when it serves no metrics.
pub async fn plugin_times(target: &Target) -> Result<PluginTimes, String> {
    let Some((url, token)) = &target.metrics else {
        return Ok(PluginTimes::new());
    };
    let text = client()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("{}: /metrics: {e}", target.name))?
        .text()
        .await
        .map_err(|e| e.to_string())?;
    let mut times = PluginTimes::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("sluice_plugin_call_seconds_") else {
            continue;
        };
        let (series, value) = rest.rsplit_once(' ').unwrap_or_default();
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let function = series
            .split("function=\"")
            .nth(1)
            .and_then(|f| f.split('"').next())
            .unwrap_or("?")
            .to_owned();
        let entry = times.entry(function).or_default();
        if series.starts_with("count") {
            entry.0 += value;
        } else if series.starts_with("sum") {
            entry.1 += value;
        }
    }
    Ok(times)
}

/// How a target is called.
#[derive(Clone)]
pub enum Via {
    /// An HTTP server: the request goes to `url` with `authorization`.
    Http { url: String, authorization: String },
    /// A host embedded in this process: the request is a [`Call`] it executes.
    Embedded(Arc<Sluice>),
}

/// What one target's requests came to.
#[derive(Default)]
pub struct Tally {
    /// Latencies of successful requests, from their scheduled send time to the body's end.
    pub latencies: Vec<Duration>,
    /// How late each request started: the generator's share, and the wait for a connection.
    pub start_lag: Vec<Duration>,
    pub errors: usize,
    /// The first failure, for the report.
    pub first_error: Option<String>,
    pub sent: usize,
    /// CPU time the target's own process spent meanwhile (this whole process when the
    /// target runs in it).
    pub cpu: Duration,
    /// Context switches the target's threads made meanwhile, voluntary or not (this whole
    /// process's when the target runs in it): how often a request's work waited for, or
    /// handed over to, another thread.
    pub switches: u64,
}

impl Tally {
    pub fn add(&mut self, other: Self) {
        self.latencies.extend(other.latencies);
        self.start_lag.extend(other.start_lag);
        self.errors += other.errors;
        self.first_error = self.first_error.take().or(other.first_error);
        self.sent += other.sent;
        self.cpu += other.cpu;
        self.switches += other.switches;
    }

    /// What the target's process used meanwhile ([`Used::since`]).
    pub fn record(&mut self, used: Used) {
        self.cpu = used.cpu;
        self.switches = used.switches;
    }

    /// Sorts the samples, for [`quantile`].
    pub fn sort(&mut self) {
        self.latencies.sort_unstable();
        self.start_lag.sort_unstable();
    }
}

/// The value below which `q` of `sorted` lies (nearest rank).
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a rank among at most millions of samples"
    )]
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// What a process has used so far: its CPU time and its threads' context switches.
#[derive(Debug, Clone, Copy)]
pub struct Used {
    cpu: Duration,
    switches: u64,
}

impl Used {
    /// Process `pid`'s use so far (this process's when `None`); zero where there is no
    /// `/proc`.
    pub fn of(pid: Option<u32>) -> Self {
        let proc = pid.map_or_else(|| "/proc/self".to_owned(), |p| format!("/proc/{p}"));
        Self {
            cpu: cpu_used(&proc),
            switches: switches_made(&proc),
        }
    }

    /// What process `pid` used from `self` until now.
    pub fn since(self, pid: Option<u32>) -> Self {
        let now = Self::of(pid);
        Self {
            cpu: now.cpu.saturating_sub(self.cpu),
            switches: now.switches.saturating_sub(self.switches),
        }
    }
}

/// CPU time, user and system, all threads, from `PROC/stat` in clock ticks of 10 ms.
fn cpu_used(proc: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("{proc}/stat")).unwrap_or_default();
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

/// Context switches, voluntary and not, summed over each thread's `PROC/task/TID/status`.
/// A thread that ended meanwhile takes its count with it.
fn switches_made(proc: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("{proc}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// One connection's client.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("a client")
}

/// Sends `count` requests to `target` on `connections` connections: at `rate` a second on
/// schedule, or, with no rate, each as soon as its connection is free (one connection: one
/// after the other). Waits for every answer.
pub async fn run(target: &Target, rate: Option<u32>, connections: usize, count: usize) -> Tally {
    let samples = Arc::new(Mutex::new(Tally {
        sent: count,
        ..Tally::default()
    }));
    let before = Used::of(target.pid);
    let clock = SystemClock;
    // The schedule: a thread of its own sleeps until each request's time and hands it to
    // whichever connection is free (tokio's timer would round every time up to a
    // millisecond). Without a rate, a connection takes the next request when it is free.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let pacer = rate.map(|r| {
        let every = Duration::from_secs_f64(1.0 / f64::from(r));
        std::thread::spawn(move || {
            let start = clock.now() + Duration::from_millis(5);
            for i in 0..count {
                let at = start + every * u32::try_from(i).unwrap_or(u32::MAX);
                if let Some(ahead) = at.checked_duration_since(clock.now()) {
                    std::thread::sleep(ahead);
                }
                if tx.send(at).is_err() {
                    break;
                }
            }
        })
    });
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::with_capacity(connections);
    for _ in 0..connections {
        let (next, samples, rx) = (next.clone(), samples.clone(), rx.clone());
        let via = target.via.clone();
        let paced = rate.is_some();
        workers.push(tokio::spawn(async move {
            let client = client();
            loop {
                let scheduled = if paced {
                    match rx.lock().await.recv().await {
                        Some(at) => at,
                        None => break,
                    }
                } else if next.fetch_add(1, Ordering::Relaxed) < count {
                    clock.now()
                } else {
                    break;
                };
                let lag = clock.now().saturating_duration_since(scheduled);
                let answer = send(&client, &via).await;
                let latency = clock.now().saturating_duration_since(scheduled);
                let mut s = samples.lock().unwrap_or_else(|e| e.into_inner());
                s.start_lag.push(lag);
                match answer {
                    Ok(()) => s.latencies.push(latency),
                    Err(why) => {
                        s.errors += 1;
                        s.first_error.get_or_insert(why);
                    }
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    if let Some(p) = pacer {
        let _ = p.join();
    }
    let used = before.since(target.pid);
    let mut guard = samples.lock().unwrap_or_else(|e| e.into_inner());
    guard.record(used);
    std::mem::take(&mut *guard)
}

/// One chat completion, read to its end; the failure in words.
async fn send(client: &reqwest::Client, via: &Via) -> Result<(), String> {
    let (url, authorization) = match via {
        Via::Http { url, authorization } => (url, authorization),
        Via::Embedded(sluice) => return execute(sluice).await,
    };
    let r = client
        .post(url)
        .header("authorization", authorization)
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = r.status();
    let body = r.bytes().await.map_err(|e| e.to_string())?;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("{status}: {}", String::from_utf8_lossy(&body)))
    }
}

/// One chat completion through an embedded host, as an embedder writes it: the call built
/// for the request, its answer read whole.
async fn execute(sluice: &Sluice) -> Result<(), String> {
    let call = Call::post("openai", PATH, BODY)
        .credential(CREDENTIAL)
        .tenant("bench")
        .class(RequestClass::Read)
        .header("content-type", "application/json");
    match sluice.execute(&call).await {
        Outcome::Succeeded { response, .. } if (200..300).contains(&response.status) => Ok(()),
        Outcome::Succeeded { response, .. } => Err(format!(
            "{}: {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )),
        Outcome::Ended(ended) => Err(ended.reason.to_string()),
    }
}

/// Waits until `target` answers a request, for at most `patience`.
pub async fn until_ready(target: &Target, patience: Duration) -> Result<(), String> {
    let client = client();
    let clock = SystemClock;
    let began = clock.now();
    loop {
        match send(&client, &target.via).await {
            Ok(()) => return Ok(()),
            Err(why) if clock.now().saturating_duration_since(began) > patience => {
                return Err(format!("{} never answered: {why}", target.name));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}
