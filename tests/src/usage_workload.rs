//! The usage-correction workload: agents writing answers through an Anthropic-style account
//! whose output-token limit is charged by what each answer actually produced (it reserves
//! `max_tokens` when a request starts and gives the unused part back when it ends).
//!
//! The same agents run through sluice or through a naive client (SDK-style: two retries,
//! `retry-after` honoured, nothing shared), each against a fresh provider, on tokio's
//! clock: on a paused runtime the whole run takes virtual time. The provider's ledger is the
//! referee: what it produced, and what it answered 429.

use std::time::Duration;

use sluice::clock::{Clock, TokioClock};
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice::transport::{Timeouts, Transport};
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};

use crate::stack::executor_with;

const PATH: &str = "/v1/messages";

/// The run's shape.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Agents sending at once.
    pub agents: usize,
    /// The account's output tokens per minute.
    pub otpm: u64,
    /// How long the agents send.
    pub duration: Duration,
    /// The seed of the agents' prompts and `max_tokens`.
    pub seed: u64,
    /// The share of the limit sluice paces at.
    pub margin: f64,
    /// How sluice is told the provider refills (`window` or `continuous`); `None`: not told,
    /// so the plugin's declaration stands (the `anthropic` plugin's is `continuous`).
    pub refill: Option<&'static str>,
}

impl Default for Workload {
    fn default() -> Self {
        Self {
            agents: 24,
            otpm: 80_000,
            duration: Duration::from_secs(120),
            seed: 1,
            margin: 0.95,
            refill: None,
        }
    }
}

/// What the provider saw.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    /// Output tokens produced by attempts that began within the run, over the account's
    /// output tokens per minute times the run's minutes.
    pub utilization: f64,
    /// The same over the run's second half alone: the steady pace, once a token bucket's
    /// first fill (the provider's and sluice's own start full) is spent.
    pub steady: f64,
    /// Attempts received.
    pub attempts: usize,
    /// Attempts answered 429.
    pub limited: usize,
    /// Answers delivered.
    pub answered: usize,
}

impl Figures {
    /// 429s as a share of attempts.
    #[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
    pub fn limited_share(&self) -> f64 {
        self.limited as f64 / self.attempts.max(1) as f64
    }
}

/// An agent's next request: a prompt of 200 to 1 000 characters and a `max_tokens` of
/// 1 000 to 4 000.
pub fn request_body(rng: &mut fastrand::Rng) -> Vec<u8> {
    let prompt = "lorem ipsum ".repeat(rng.usize(17..=83));
    serde_json::json!({
        "model": "claude-sonnet",
        "max_tokens": rng.u64(1_000..=4_000),
        "messages": [{"role": "user", "content": prompt}],
    })
    .to_string()
    .into_bytes()
}

#[allow(clippy::cast_precision_loss, reason = "token counts far below 2^52")]
fn figures(fake: &FakeProvider, w: &Workload) -> Figures {
    let attempts = fake.attempts();
    let produced: u64 = attempts
        .iter()
        .filter(|a| a.at < w.duration && a.status == Some(200))
        .map(|a| a.output_tokens)
        .sum();
    let minutes = w.duration.as_secs_f64() / 60.0;
    let half = w.duration / 2;
    let late: u64 = attempts
        .iter()
        .filter(|a| a.at >= half && a.at < w.duration && a.status == Some(200))
        .map(|a| a.output_tokens)
        .sum();
    Figures {
        utilization: produced as f64 / (w.otpm as f64 * minutes),
        steady: late as f64 / (w.otpm as f64 * minutes / 2.0),
        attempts: attempts.len(),
        limited: fake.answered(429),
        answered: fake.answered(200),
    }
}

async fn provider(w: &Workload) -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::Anthropic).otpm(w.otpm))
        .await
        .expect("the fake provider starts")
}

/// The agents through sluice: the `anthropic` plugin, the account's output tokens per minute
/// configured, paced at the workload's margin and refilled as it says.
///
/// # Panics
/// When a part does not start.
pub async fn through_sluice(w: Workload) -> Figures {
    let fake = provider(&w).await;
    let refill = w
        .refill
        .map_or_else(String::new, |r| format!("refill = \"{r}\"\n"));
    let config = format!(
        "margin = {}\n[queue]\nmax_wait_ms = 3600000\n\
         [providers.anthropic.limits]\noutput_tokens_per_minute = {}\n{refill}",
        w.margin, w.otpm
    );
    let transport = Transport::new(Timeouts::default()).expect("a transport");
    let ex = executor_with("anthropic", &config, RetryConfig::default(), transport);
    let start = TokioClock.now();
    let mut agents = tokio::task::JoinSet::new();
    for a in 0..w.agents {
        let (ex, url) = (ex.clone(), fake.url(PATH));
        let mut rng = fastrand::Rng::with_seed(w.seed.wrapping_mul(1_000) + a as u64);
        agents.spawn(async move {
            loop {
                let left = w.duration.saturating_sub(TokioClock.now() - start);
                if left.is_zero() {
                    break;
                }
                let call = Call::post("anthropic", url.clone(), request_body(&mut rng))
                    .credential("org-key")
                    .tenant(format!("agent-{a}"))
                    .class(RequestClass::Read)
                    .header("content-type", "application/json")
                    .deadline(left);
                if let Outcome::Ended(t) = ex.execute(&call).await
                    && t.out_of_time()
                {
                    break;
                }
            }
        });
    }
    agents.join_all().await;
    figures(&fake, &w)
}

/// The agents through a naive client: an SDK's two retries after `retry-after` (at most a
/// minute), else 0.5 s doubling; nothing shared between agents.
///
/// # Panics
/// When the provider does not start.
pub async fn naive(w: Workload) -> Figures {
    let fake = provider(&w).await;
    let start = TokioClock.now();
    let mut agents = tokio::task::JoinSet::new();
    for a in 0..w.agents {
        let url = fake.url(PATH);
        let mut rng = fastrand::Rng::with_seed(w.seed.wrapping_mul(1_000) + a as u64);
        agents.spawn(async move {
            let client = reqwest::Client::new();
            while TokioClock.now() - start < w.duration {
                let body = request_body(&mut rng);
                for retry in 0..=2u32 {
                    let sent = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await;
                    let Ok(resp) = sent else { break };
                    if resp.status().is_success() {
                        break;
                    }
                    let asked = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .filter(|s| *s <= 60)
                        .map(Duration::from_secs);
                    let backoff = Duration::from_millis(500 << retry);
                    tokio::time::sleep(asked.unwrap_or(backoff)).await;
                }
            }
        });
    }
    agents.join_all().await;
    figures(&fake, &w)
}
