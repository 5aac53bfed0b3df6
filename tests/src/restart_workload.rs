//! The usage-correction workload on a group of hosts that share the account's quota through
//! Redis, with Redis killed mid-run and restarted empty (no persistence), as a Redis whose
//! machine went away comes back: what share of the output-token limit the group used over
//! the run, window by window, and what the provider refused.
//!
//! Real time (Redis keeps its own clock): each host is a [`sluice::Sluice`] in this process
//! with its own connection to the store, its own agents and its own state directory.

use std::sync::Arc;
use std::time::Duration;

use sluice::clock::{Clock, TokioClock};
use sluice::contract::RequestClass;
use sluice::execute::Call;
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};

use crate::redis_server::RedisServer;
use crate::stack::{builder, transport};
use crate::usage_workload::request_body;

const PATH: &str = "/v1/messages";

/// The run's shape.
#[derive(Debug, Clone, Copy)]
pub struct GroupRun {
    /// Hosts sharing the quota.
    pub hosts: u32,
    /// Agents sending at once on each host.
    pub agents_per_host: usize,
    /// The account's output tokens per minute.
    pub otpm: u64,
    /// How long the agents send.
    pub duration: Duration,
    /// When Redis is killed (`None`: never), and for how long it stays away before it is
    /// started again, empty.
    pub restart: Option<(Duration, Duration)>,
    /// The seed of the agents' prompts and `max_tokens`.
    pub seed: u64,
    /// `[store] slice_ms`: how long each host's slices of the quota last (0: every call
    /// asks the store).
    pub slice_ms: u32,
}

impl Default for GroupRun {
    fn default() -> Self {
        Self {
            hosts: 4,
            agents_per_host: 6,
            otpm: 80_000,
            duration: Duration::from_secs(60),
            restart: Some((Duration::from_secs(20), Duration::from_secs(3))),
            seed: 1,
            slice_ms: 250,
        }
    }
}

/// What the provider saw.
#[derive(Debug, Clone)]
pub struct GroupFigures {
    /// Output tokens produced by attempts that began within the run, over the account's
    /// output tokens per minute times the run's minutes.
    pub utilization: f64,
    /// The same for each window of [`WINDOW`] from the run's start.
    pub windows: Vec<f64>,
    /// Attempts received.
    pub attempts: usize,
    /// Attempts answered 429.
    pub limited: usize,
}

impl GroupFigures {
    /// 429s as a share of attempts.
    #[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
    pub fn limited_share(&self) -> f64 {
        self.limited as f64 / self.attempts.max(1) as f64
    }

    /// The windows as percentages, for a log line.
    pub fn windows_shown(&self) -> String {
        self.windows
            .iter()
            .map(|w| format!("{:.0}", w * 100.0))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How long past the run the agents go on sending.
const TAIL: Duration = Duration::from_secs(10);

/// The windows [`GroupFigures::windows`] counts by.
pub const WINDOW: Duration = Duration::from_secs(10);

/// Runs `run`: the hosts, their agents, and Redis's restart if it has one.
///
/// # Panics
/// When a part does not start (`redis-server` missing included).
pub async fn through_a_group(run: GroupRun) -> GroupFigures {
    let mut redis = RedisServer::start();
    let fake = FakeProvider::start(FakeConfig::new(Style::Anthropic).otpm(run.otpm))
        .await
        .expect("the fake provider starts");
    // The provider times its attempts from its own start.
    let fake_started = TokioClock.now();
    let dir = tempfile::tempdir().expect("a state directory");
    let mut hosts = Vec::new();
    for h in 0..run.hosts {
        let config = format!(
            "margin = 0.95\n[queue]\nmax_wait_ms = 3600000\n\
             [store]\nurl = \"{}\"\nhosts = {}\nhost_id = \"host-{h}\"\n\
             lease_ttl_ms = 1500\ntimeout_ms = 200\nslice_ms = {}\n\
             [providers.anthropic.limits]\noutput_tokens_per_minute = {}\n",
            redis.url(),
            run.hosts,
            run.slice_ms,
            run.otpm
        );
        let retry = RetryConfig {
            backoff_base_ms: 50,
            backoff_cap_ms: 200,
            ..RetryConfig::default()
        };
        let sluice = builder(
            "anthropic",
            &config,
            retry,
            transport(Duration::from_secs(30)),
        )
        .state_dir(dir.path().join(format!("host-{h}")))
        .build()
        .expect("a host");
        hosts.push(Arc::new(sluice));
    }
    let start = TokioClock.now();
    let mut agents = tokio::task::JoinSet::new();
    for (h, sluice) in hosts.iter().enumerate() {
        for a in 0..run.agents_per_host {
            let (sluice, url) = (sluice.clone(), fake.url(PATH));
            let agent = h * run.agents_per_host + a;
            let mut rng = fastrand::Rng::with_seed(run.seed.wrapping_mul(1_000) + agent as u64);
            // The agents go on a little past the run, so that the run's last seconds are
            // as busy as the rest (a call is counted when it began within the run).
            let until = run.duration + TAIL;
            agents.spawn(async move {
                while let Some(left) = until.checked_sub(TokioClock.now() - start) {
                    let call = Call::post("anthropic", url.clone(), request_body(&mut rng))
                        .credential("org-key")
                        .tenant(format!("agent-{agent}"))
                        .class(RequestClass::Read)
                        .header("content-type", "application/json")
                        .deadline(left);
                    let _ = sluice.executor().execute(&call).await;
                }
            });
        }
    }
    let offset = start - fake_started;
    let _redis = match run.restart {
        Some((at, down)) => {
            tokio::time::sleep(at).await;
            redis.kill();
            tokio::time::sleep(down).await;
            tokio::task::spawn_blocking(move || {
                redis.restart();
                redis
            })
            .await
            .expect("redis restarts")
        }
        None => redis,
    };
    agents.join_all().await;
    figures(&fake, &run, offset)
}

#[allow(clippy::cast_precision_loss, reason = "token counts far below 2^52")]
fn figures(fake: &FakeProvider, run: &GroupRun, offset: Duration) -> GroupFigures {
    let attempts = fake.attempts();
    let produced_in = |from: Duration, to: Duration| -> u64 {
        let (from, to) = (from + offset, to + offset);
        attempts
            .iter()
            .filter(|a| a.at >= from && a.at < to && a.status == Some(200))
            .map(|a| a.output_tokens)
            .sum()
    };
    let per_second = run.otpm as f64 / 60.0;
    let share = |from: Duration, to: Duration| {
        produced_in(from, to) as f64 / (per_second * (to - from).as_secs_f64())
    };
    let mut windows = Vec::new();
    let mut from = Duration::ZERO;
    while from < run.duration {
        let to = (from + WINDOW).min(run.duration);
        windows.push(share(from, to));
        from = to;
    }
    GroupFigures {
        utilization: share(Duration::ZERO, run.duration),
        windows,
        attempts: attempts.len(),
        limited: fake.answered(429),
    }
}
