//! The same workload through a naive client, as agents commonly call APIs: each agent its own
//! HTTP client with SDK-style retries — two retries on 408, 409, 429, 5xx and connection
//! errors, after `Retry-After` when the answer gives one under a minute, else an exponential
//! backoff (0.5 s doubling to 8 s, less up to a quarter of jitter) — and nothing shared
//! with the other agents: no queue, no scope, no journal. A write carries no idempotency
//! key, so a retry after a dropped connection sends it again.

use std::time::Duration;

use sluice_fake_provider::FakeProvider;

use super::drive::drive;
use super::report::Raw;
use super::workload::{Agent, CHAT, Op, PAYMENTS};

const MAX_RETRIES: u32 = 2;

/// The wait before retry `n` (from 0), given the answer's headers.
fn backoff(
    n: u32,
    headers: Option<&reqwest::header::HeaderMap>,
    rng: &mut fastrand::Rng,
) -> Duration {
    let told = headers.and_then(|h| {
        let ms = h
            .get("retry-after-ms")
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            .map(Duration::from_millis);
        let secs = h
            .get("retry-after")
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            .map(Duration::from_secs);
        ms.or(secs)
    });
    match told {
        Some(d) if d <= Duration::from_secs(60) => d,
        _ => {
            let base = (0.5 * f64::from(1u32 << n.min(4))).min(8.0);
            Duration::from_secs_f64(base * (1.0 - 0.25 * rng.f64()))
        }
    }
}

/// One call with SDK-style retries; whether it succeeded.
async fn send(client: &reqwest::Client, url: &str, body: &str, rng: &mut fastrand::Rng) -> bool {
    for n in 0..=MAX_RETRIES {
        let sent = client
            .post(url)
            .header("content-type", "application/json")
            .header("authorization", "Bearer sk-demo")
            .body(body.to_owned())
            .send()
            .await;
        let wait = match sent {
            Ok(r) if r.status().is_success() => return true,
            Ok(r) => {
                let s = r.status().as_u16();
                if !matches!(s, 408 | 409 | 429) && s < 500 {
                    return false;
                }
                backoff(n, Some(r.headers()), rng)
            }
            Err(_) => backoff(n, None, rng),
        };
        if n < MAX_RETRIES {
            tokio::time::sleep(wait).await;
        }
    }
    false
}

/// Runs the workload through naive clients.
pub async fn run(
    agents: &[Agent],
    duration: Duration,
    chat: &FakeProvider,
    payments: &FakeProvider,
) -> Raw {
    let (chat_url, pay_url) = (chat.url(CHAT), payments.url(PAYMENTS));
    let records = drive("naive", agents, duration, move |agent, i, op| {
        let (chat_url, pay_url) = (chat_url.clone(), pay_url.clone());
        async move {
            // Each call gets a fresh client and stream, as a stateless agent step would. The
            // fakes are plain HTTP on loopback, and the client is built without TLS: it loads
            // no root certificates, which would cost every call milliseconds of CPU (seconds
            // over a run) and change nothing the run measures.
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap_or_default();
            let mut rng = fastrand::Rng::with_seed(agent.seed ^ (i as u64) << 20);
            match op {
                Op::Chat { body, .. } => send(&client, &chat_url, &body, &mut rng).await,
                Op::Pay { body } => send(&client, &pay_url, &body, &mut rng).await,
            }
        }
    })
    .await;
    Raw {
        records,
        chat_attempts: chat.attempts(),
        pay_attempts: payments.attempts(),
        stored: payments.stored(),
        writes: None,
        audit: None,
        budget: None,
    }
}
