//! Breakers that only stop the broken: a tenant's own bad requests stop that tenant, a
//! broken path is probed by one call, and a model's failures leave the key's other models
//! alone — counted at the provider.

use std::time::Duration;

use sluice::clock::{Clock, SystemClock};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use tokio::task::JoinSet;

use crate::support::{client, start};
use crate::{NOISY_TOKEN, STEADY_TOKEN, agent, fake, provider};

const CHAT: &str = "/v1/chat/completions";
const GOOD: &str =
    r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":16}"#;

/// An empty chat naming model `n`: a looping agent that names a new model each time does
/// not dodge its own breaker.
fn empty(n: usize) -> String {
    format!(r#"{{"model":"gpt-4o-{n}","messages":[],"max_tokens":16}}"#)
}

async fn openai() -> FakeProvider {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    fake.refuse_empty_chats();
    fake
}

/// Two agents of two tenants on one credential; breakers open after 3 failures, for
/// `open_ms`.
fn config(fake: &FakeProvider, open_ms: u64) -> String {
    format!(
        "{}[retry]\nbreaker_threshold = 3\nbreaker_open_ms = {open_ms}\n\
         [retry.classes.read]\nmax_attempts = 1\nmax_wait_ms = 1000\nretry_statuses = [429]\n{}{}",
        provider("openai", &fake.url(""), "requests_per_minute = 60000"),
        agent("steady", STEADY_TOKEN, "steady", ""),
        agent("noisy", NOISY_TOKEN, "noisy", ""),
    )
}

async fn chat(url: &str, token: &str, body: &str) -> (u16, String) {
    let r = client()
        .post(format!("{url}/openai{CHAT}"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Issue 27: while one agent looped on a 400, the other tenant's well-formed chats were
/// answered 2 times out of 95, the rest refused as `breaker open`. The 400s now open only
/// the looping tenant's own breaker: the provider sees its first few, and the other tenant
/// goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_looping_on_a_400_stops_itself_and_not_the_other_tenant() {
    let fake = openai().await;
    let side = start(&config(&fake, 30_000)).await;
    let until = SystemClock.now() + Duration::from_secs(3);
    let mut noisy = JoinSet::new();
    for _ in 0..4 {
        let url = side.url.clone();
        noisy.spawn(async move {
            let (mut sent, mut refused_here) = (0, 0);
            while SystemClock.now() < until {
                let (status, body) = chat(&url, NOISY_TOKEN, &empty(sent)).await;
                sent += 1;
                if status == 503 {
                    assert!(body.contains("tenant=noisy"), "{body}");
                    refused_here += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (sent, refused_here)
        });
    }
    let mut steady = Vec::new();
    while SystemClock.now() < until {
        steady.push(chat(&side.url, STEADY_TOKEN, GOOD).await.0);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (mut sent, mut refused) = (0, 0);
    while let Some(n) = noisy.join_next().await {
        let (s, r) = n.unwrap();
        sent += s;
        refused += r;
    }
    assert!(steady.iter().all(|s| *s == 200), "{steady:?}");
    assert!(steady.len() >= 10, "{}", steady.len());
    // The threshold's failures, and those already on their way when it opened.
    let sent_400s = fake.answered(400);
    assert!(
        (3..=3 + 8).contains(&sent_400s),
        "{sent_400s} 400s reached the provider"
    );
    // Every other call of the loop was refused here, however many a loaded machine let it
    // make.
    assert_eq!(
        refused,
        sent - sent_400s,
        "the rest were refused here: {refused} of {sent}"
    );
    assert!(refused >= 12, "the loop went on: {refused} of {sent}");
    let states = side.sluice.executor().breakers();
    let open: Vec<_> = states.iter().filter(|b| b.state == "open").collect();
    assert_eq!(open.len(), 1, "{states:?}");
    assert!(
        open[0]
            .route
            .ends_with("POST /v1/chat/completions tenant=noisy"),
        "{states:?}"
    );
}

/// A sidecar whose credential's chat path three 500s in a row have opened, for 400 ms.
async fn an_opened_path() -> (FakeProvider, crate::support::Side) {
    let fake = openai().await;
    let side = start(&config(&fake, 400)).await;
    fake.script(
        CHAT,
        [Fault::Status {
            status: 500,
            code: "server_error",
        }; 3],
    );
    for _ in 0..3 {
        assert_eq!(chat(&side.url, STEADY_TOKEN, GOOD).await.0, 500);
    }
    (fake, side)
}

/// A broken path half-open lets one probe through, not every waiting call: the others are
/// refused until it answers, and its success closes the path for everyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_open_path_is_probed_by_one_call() {
    let (fake, side) = an_opened_path().await;
    let (status, body) = chat(&side.url, NOISY_TOKEN, GOOD).await;
    assert_eq!(status, 503, "the path is open for every tenant: {body}");
    assert_eq!(fake.attempts_on(CHAT), 3);

    // Its time is up. The probe hangs a while at the provider; six calls arrive meanwhile,
    // once the provider holds it.
    tokio::time::sleep(Duration::from_millis(450)).await;
    fake.script(CHAT, [Fault::Slow(Duration::from_millis(2_000))]);
    let url = side.url.clone();
    let probe = tokio::spawn(async move { chat(&url, STEADY_TOKEN, GOOD).await });
    let out = SystemClock.now() + Duration::from_secs(10);
    while fake.attempts_on(CHAT) < 4 {
        assert!(
            SystemClock.now() < out,
            "the probe never reached the provider"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut others = JoinSet::new();
    for _ in 0..6 {
        let url = side.url.clone();
        others.spawn(async move { chat(&url, NOISY_TOKEN, GOOD).await.0 });
    }
    let mut statuses = Vec::new();
    while let Some(s) = others.join_next().await {
        statuses.push(s.unwrap());
    }
    assert_eq!(probe.await.unwrap().0, 200);
    assert_eq!(statuses, [503; 6], "refused while the probe was out");
    assert_eq!(fake.attempts_on(CHAT), 4, "one probe reached the provider");
    // Closed: everyone goes.
    assert_eq!(chat(&side.url, NOISY_TOKEN, GOOD).await.0, 200);
    assert_eq!(chat(&side.url, STEADY_TOKEN, GOOD).await.0, 200);
}

/// A half-open path probed by a call its own request fails (a 400) had no word on the path:
/// the next call probes it at once, rather than every tenant waiting another open time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_failed_by_its_own_request_leaves_the_path_to_the_next_call() {
    let (fake, side) = an_opened_path().await;
    assert_eq!(chat(&side.url, STEADY_TOKEN, GOOD).await.0, 503);
    tokio::time::sleep(Duration::from_millis(450)).await;
    let empty_on_the_path = r#"{"model":"gpt-4o","messages":[],"max_tokens":16}"#;
    assert_eq!(chat(&side.url, NOISY_TOKEN, empty_on_the_path).await.0, 400);
    let (status, body) = chat(&side.url, STEADY_TOKEN, GOOD).await;
    assert_eq!(status, 200, "the next call probed the path: {body}");
    assert_eq!(fake.attempts_on(CHAT), 5);
}

/// A model whose calls keep failing leaves the key's other models alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_leaves_the_key_s_other_models_alone() {
    let fake = openai().await;
    let side = start(&config(&fake, 30_000)).await;
    let mini =
        r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":16}"#;
    fake.script(
        CHAT,
        [Fault::Status {
            status: 503,
            code: "overloaded",
        }; 3],
    );
    for _ in 0..3 {
        assert_eq!(chat(&side.url, STEADY_TOKEN, mini).await.0, 503);
    }
    let (status, body) = chat(&side.url, STEADY_TOKEN, mini).await;
    assert_eq!(status, 503);
    assert!(body.contains("breaker open"), "{body}");
    assert_eq!(chat(&side.url, STEADY_TOKEN, GOOD).await.0, 200);
    assert_eq!(fake.attempts_on(CHAT), 4);
}
