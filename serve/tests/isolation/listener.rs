//! A listener that defends itself, at the wire with raw connections: paths that would leave
//! the provider's base URL, stalled bodies and headers, a cap on connections that leaves the
//! admin API answering, and wrong tokens counted per address — nothing sent to the provider
//! where nothing should be.

use std::time::Duration;

use sluice::clock::{Clock, SystemClock};
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{AGENT_TOKEN, Side, client, sha256_hex, start};
use crate::{agent, fake, provider};

const ADMIN_TOKEN: &str = "admin-token-for-the-listener-tests";

/// A sidecar whose provider's base URL has a path of its own (`/gw/openai`), with `extra`
/// lines in `[serve]`.
async fn sidecar(fake: &FakeProvider, extra: &str) -> Side {
    let text = format!(
        "{}[serve]\n{extra}\n[serve.admin]\ntoken = {{ sha256 = \"{}\" }}\n{}",
        provider("openai", &fake.url("/gw/openai"), ""),
        sha256_hex(ADMIN_TOKEN),
        agent("bot", AGENT_TOKEN, "acme", ""),
    );
    start(&text).await
}

/// Sends `raw` on a new connection to `addr` and reads until the server closes it or
/// `patience` passes: what came back.
async fn raw(addr: &str, bytes: &[u8], patience: Duration) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(patience, s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn addr(side: &Side) -> String {
    side.url.trim_start_matches("http://").to_owned()
}

/// Issue 27: with a base URL ending in `/gw/openai`, `/openai/../../secret` reached the
/// provider as `/secret` with the provider key attached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_that_would_leave_the_base_url_is_refused_in_every_spelling() {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    let side = sidecar(&fake, "").await;
    for path in [
        "/openai/../../secret",
        "/openai/%2e%2e/%2E%2E/secret",
        "/openai/v1/..%2f..%2fsecret",
        "/openai/.%2e/secret",
    ] {
        let request = format!(
            "GET {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {AGENT_TOKEN}\r\n\
             connection: close\r\n\r\n"
        );
        let answer = raw(&addr(&side), request.as_bytes(), Duration::from_secs(5)).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{path}: {answer}");
        assert!(answer.contains("path_not_allowed"), "{path}: {answer}");
    }
    assert!(fake.attempts().is_empty(), "nothing reached the provider");
    // A path as it is goes, under the base URL's.
    let r = client()
        .get(format!("{}/openai/v1/models", side.url))
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(fake.attempts()[0].path, "/gw/openai/v1/models");
}

/// Issue 27: an agent that stalled its body kept its connection (still open at 600 s).
/// Past the read timeout a stalled body is answered 408 and a stalled header (or an idle
/// connection) is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_or_header_does_not_keep_its_connection() {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    let side = sidecar(&fake, "read_timeout_ms = 400").await;
    let started = SystemClock.now();
    let body = format!(
        "POST /openai/v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer \
         {AGENT_TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"mo"
    );
    let answer = raw(&addr(&side), body.as_bytes(), Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let header = "GET /openai/v1/models HTTP/1.1\r\nhost: x\r\n";
    let answer = raw(&addr(&side), header.as_bytes(), Duration::from_secs(10)).await;
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    let idle = raw(&addr(&side), b"", Duration::from_secs(10)).await;
    assert!(idle.is_empty() || idle.contains("408"), "{idle}");
    assert!(
        SystemClock.now() - started < Duration::from_secs(8),
        "each closed near its read timeout"
    );
    assert!(fake.attempts().is_empty());
}

/// Issue 27: 400 stalled connections against a 300-file limit made every request time
/// out, the admin API included. Connections that have not presented a token hold no seat:
/// beside them an agent is answered at once. Seated connections are capped: past the cap
/// the next is answered 503 `too_many_connections` (with Retry-After, and closed), and the
/// admin listener, with places of its own, answers meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_a_connection_is_refused_and_the_admin_api_still_answers() {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    let side = sidecar(&fake, "max_connections = 4\nread_timeout_ms = 30000").await;
    let mut stalled = Vec::new();
    for _ in 0..8 {
        let mut s = TcpStream::connect(addr(&side)).await.unwrap();
        s.write_all(b"GET /openai/v1/models HTTP/1.1\r\n")
            .await
            .unwrap();
        stalled.push(s);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let models = || {
        client()
            .get(format!("{}/openai/v1/models", side.url))
            .bearer_auth(AGENT_TOKEN)
            .timeout(Duration::from_secs(10))
            .send()
    };
    let sent = SystemClock.now();
    let r = models().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        SystemClock.now() - sent < Duration::from_secs(1),
        "unauthenticated connections hold no seat"
    );
    // Four seated connections, each stalled in its body.
    let head = format!(
        "POST /openai/v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer \
         {AGENT_TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{"
    );
    let mut seated = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(addr(&side)).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        seated.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let admin = format!("http://{}", side.running.admin_addr().unwrap());
    let health = client()
        .get(format!("{admin}/healthz"))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "the admin API answers beside the cap");
    // The four are seated once the listener has read their heads, which on a loaded machine
    // can take longer than the pause above: until then a call is answered, and after, refused.
    let deadline = SystemClock.now() + Duration::from_secs(20);
    let r = loop {
        let r = models().await.unwrap();
        if r.status() != 200 || SystemClock.now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(r.status(), 503, "a fifth seat past max_connections = 4");
    assert_eq!(r.headers()["retry-after"], "1");
    assert!(r.text().await.unwrap().contains("too_many_connections"));
    drop((stalled, seated));
}

/// Issue 27: 300 wrong tokens in 2.6 s on the console, the admin API and the agent port,
/// with no delay, and failed console and admin attempts left no log line or metric. Past
/// the limit a token's admin and console attempts from one address are refused before it is
/// compared — while an operator with another token behind the same address goes on — and
/// past ten times the limit the address's, whatever it presents; on the agent port its wrong
/// tokens are answered 429, and an agent with a right token on the same address goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_are_limited_per_token_and_address_without_locking_out_a_good_agent() {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    let side = sidecar(&fake, "failed_tokens_per_minute = 5").await;
    let admin = format!("http://{}", side.running.admin_addr().unwrap());
    let http = client();
    let scopes = |token: String| {
        http.get(format!("{admin}/scopes"))
            .bearer_auth(token)
            .send()
    };
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(scopes("wrong".into()).await.unwrap().status().as_u16());
    }
    assert_eq!(statuses, [401; 5]);
    let locked = scopes("wrong".into()).await.unwrap();
    assert_eq!(locked.status(), 429, "refused before the token is compared");
    assert!(locked.headers().contains_key("retry-after"));
    assert_eq!(
        scopes(ADMIN_TOKEN.into()).await.unwrap().status(),
        200,
        "an operator behind the same address goes on"
    );
    let sign_in = http
        .post(format!("{admin}/console/sign-in"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("token=wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(sign_in.status(), 429, "the console too");
    // Guesses of every shape: the address's own count holds them.
    for i in 0..50 {
        let _ = scopes(format!("{i:08}-guess")).await.unwrap();
    }
    assert_eq!(
        scopes(ADMIN_TOKEN.into()).await.unwrap().status(),
        429,
        "past ten times the limit, the address waits"
    );

    let chat = |token: &'static str| {
        http.post(format!("{}/openai/v1/chat/completions", side.url))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(
                r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":8}"#,
            )
            .send()
    };
    // The agents' door counts apart: its own five wrong tokens, then 429.
    let mut agents = Vec::new();
    for _ in 0..5 {
        agents.push(chat("wrong").await.unwrap().status().as_u16());
    }
    assert_eq!(agents[0], 401, "{agents:?}");
    assert_eq!(agents[4], 429, "{agents:?}");
    assert_eq!(
        chat(AGENT_TOKEN).await.unwrap().status(),
        200,
        "a good agent goes on"
    );
    assert_eq!(fake.attempts().len(), 1, "only the good agent's call");
}

/// Issue 54: 12 wrong agent tokens from one address (behind a proxy, every operator's too)
/// made `/readyz`, `/metrics` and the console's sign-in answer 429 for a minute. An agent's
/// wrong tokens count at the agents' door only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_wrong_tokens_never_lock_the_operators_out() {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    let side = sidecar(&fake, "failed_tokens_per_minute = 5").await;
    let admin = format!("http://{}", side.running.admin_addr().unwrap());
    let http = client();
    for _ in 0..12 {
        let r = http
            .post(format!("{}/openai/v1/chat/completions", side.url))
            .bearer_auth("wrong")
            .header("content-type", "application/json")
            .body(r#"{"model":"gpt-4o","messages":[],"max_tokens":8}"#)
            .send()
            .await
            .unwrap();
        assert!(matches!(r.status().as_u16(), 401 | 429), "{}", r.status());
    }
    for route in ["/readyz", "/scopes"] {
        let r = http
            .get(format!("{admin}{route}"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{route}");
    }
    let sign_in = http
        .post(format!("{admin}/console/sign-in"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={ADMIN_TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_ne!(sign_in.status(), 429, "the console's sign-in stays open");
    assert!(fake.attempts().is_empty(), "nothing was sent");
}

/// Behind a trusted proxy (`serve.trusted_proxies`), wrong tokens count against the client
/// `X-Forwarded-For` names, not the proxy every client shares; from any other peer the header
/// is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_wrong_tokens_count_against_the_client_it_names() {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    let http = client();
    let wrong = |side: &Side, client: &'static str, i: usize| {
        http.get(format!("{}/openai/v1/models", side.url))
            .bearer_auth(format!("{i:08}-guess"))
            .header("x-forwarded-for", client)
            .send()
    };
    for (trusted, other_client) in [(true, 401), (false, 429)] {
        let extra = if trusted {
            "failed_tokens_per_minute = 2\ntrusted_proxies = [\"127.0.0.1\"]"
        } else {
            "failed_tokens_per_minute = 2"
        };
        let side = sidecar(&fake, extra).await;
        // Past ten times the limit for the address, whatever it presents.
        for i in 0..25 {
            let _ = wrong(&side, "203.0.113.5", i).await.unwrap();
        }
        assert_eq!(wrong(&side, "203.0.113.5", 99).await.unwrap().status(), 429);
        assert_eq!(
            wrong(&side, "203.0.113.6", 100).await.unwrap().status(),
            other_client,
            "another client behind the proxy (trusted: {trusted})"
        );
    }
}
