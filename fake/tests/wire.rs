//! The fake provider, driven over real HTTP on loopback.

use std::time::Duration;

use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};

const CHAT: &str = "/v1/chat/completions";

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn post(
    fake: &FakeProvider,
    path: &str,
    key: Option<&str>,
) -> reqwest::Result<reqwest::Response> {
    let mut req = client()
        .post(fake.url(path))
        .body(r#"{"model":"m","max_tokens":100}"#);
    if let Some(key) = key {
        req = req.header("idempotency-key", key);
    }
    req.send().await
}

#[tokio::test]
async fn its_own_limit_answers_429_with_retry_after_and_quota_headers() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(3))
        .await
        .unwrap();
    for left in [2, 1, 0] {
        let r = post(&fake, CHAT, None).await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-ratelimit-limit-requests"], "3");
        assert_eq!(
            r.headers()["x-ratelimit-remaining-requests"],
            left.to_string().as_str()
        );
    }
    let r = post(&fake, CHAT, None).await.unwrap();
    assert_eq!(r.status(), 429);
    let after: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((59..=60).contains(&after), "retry-after {after}");
    assert!(r.headers().contains_key("retry-after-ms"));
    let body = r.text().await.unwrap();
    assert!(body.contains("rate_limit_exceeded"), "{body}");
    assert_eq!(fake.attempts_on(CHAT), 4);
    assert_eq!(fake.answered(429), 1);
}

#[tokio::test]
async fn each_style_speaks_its_dialect() {
    for (style, header) in [
        (Style::OpenAi, "x-ratelimit-reset-tokens"),
        (Style::Anthropic, "anthropic-ratelimit-tokens-reset"),
        (Style::GitHub, "x-ratelimit-resource"),
        (Style::Ietf, "ratelimit-policy"),
    ] {
        let fake = FakeProvider::start(FakeConfig::new(style).rpm(100).tpm(100_000))
            .await
            .unwrap();
        let r = post(&fake, CHAT, None).await.unwrap();
        // GitHub creates: 201.
        assert!(r.status().is_success(), "{style:?}: {}", r.status());
        assert!(
            r.headers().contains_key(header),
            "{style:?}: {:?}",
            r.headers()
        );
    }
    let fake = FakeProvider::start(FakeConfig::new(Style::Anthropic))
        .await
        .unwrap();
    fake.script(CHAT, [Fault::Unavailable { retry_after: None }]);
    assert_eq!(post(&fake, CHAT, None).await.unwrap().status(), 529);
}

#[tokio::test]
async fn scripted_faults_play_once_each_in_order() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    fake.script(
        CHAT,
        [
            Fault::RateLimited {
                retry_after: Some(RetryAfter::Seconds(10)),
            },
            Fault::RateLimited {
                retry_after: Some(RetryAfter::Date(-30)),
            },
            Fault::RateLimited {
                retry_after: Some(RetryAfter::Millis(1500)),
            },
            Fault::Unavailable {
                retry_after: Some(RetryAfter::Raw("soon")),
            },
            Fault::Status {
                status: 401,
                code: "invalid_api_key",
            },
        ],
    );
    let r = post(&fake, CHAT, None).await.unwrap();
    assert_eq!(
        (
            r.status().as_u16(),
            r.headers()["retry-after"].to_str().unwrap()
        ),
        (429, "10")
    );
    let r = post(&fake, CHAT, None).await.unwrap();
    let date = r.headers()["retry-after"].to_str().unwrap().to_owned();
    assert!(httpdate::parse_http_date(&date).is_ok(), "{date}");
    let r = post(&fake, CHAT, None).await.unwrap();
    assert_eq!(r.headers()["retry-after-ms"], "1500");
    let r = post(&fake, CHAT, None).await.unwrap();
    assert_eq!(
        (
            r.status().as_u16(),
            r.headers()["retry-after"].to_str().unwrap()
        ),
        (503, "soon")
    );
    let r = post(&fake, CHAT, None).await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.text().await.unwrap().contains("invalid_api_key"));
    assert_eq!(
        post(&fake, CHAT, None).await.unwrap().status(),
        200,
        "the script is spent"
    );
    assert_eq!(fake.attempts_on(CHAT), 6);
}

#[tokio::test]
async fn a_write_stored_then_dropped_is_replayed_not_stored_twice() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .unwrap();
    fake.script("/v1/charges", [Fault::StoreThenDrop]);
    let e = post(&fake, "/v1/charges", Some("key-1")).await.unwrap_err();
    assert!(!e.is_timeout(), "{e}");
    assert_eq!(
        fake.stored().len(),
        1,
        "the write happened although the client saw an error"
    );

    let r = post(&fake, "/v1/charges", Some("key-1")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["idempotent-replayed"], "true");
    assert!(r.text().await.unwrap().contains(&fake.stored()[0].id));
    assert_eq!(fake.stored().len(), 1);
    assert_eq!(fake.attempts_with_key("key-1"), 2);

    // Lookups for reconciliation.
    let found = client()
        .get(fake.url("/v1/objects?idempotency_key=key-1"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(found.contains(&fake.stored()[0].id), "{found}");
    let missing = client()
        .get(fake.url("/v1/objects/obj_999999"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    // Without a key, every write is a new object.
    post(&fake, "/v1/charges", None).await.unwrap();
    post(&fake, "/v1/charges", None).await.unwrap();
    assert_eq!(fake.stored().len(), 3);
}

#[tokio::test]
async fn the_github_style_ignores_the_key_and_counts_a_resend_as_a_duplicate() {
    const ISSUES: &str = "/repos/o/r/issues";
    let fake = FakeProvider::start(FakeConfig::new(Style::GitHub))
        .await
        .unwrap();
    // For writes only: the list below, on the same path, is answered normally.
    fake.script_writes(ISSUES, [Fault::StoreThenDrop, Fault::StoreThenDrop]);
    assert_eq!(
        client()
            .get(fake.url(ISSUES))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "[]"
    );
    let issue = r#"{"title":"t","body":"pay <!-- sluice-0a1b2c -->"}"#;
    let send = || {
        client()
            .post(fake.url(ISSUES))
            .header("idempotency-key", "key-1")
            .body(issue)
            .send()
    };
    assert!(send().await.is_err(), "dropped after storing");
    assert!(send().await.is_err(), "dropped after storing");
    let r = send().await.unwrap();
    assert_eq!(r.status(), 201);
    assert!(!r.headers().contains_key("idempotent-replayed"));
    let stored = fake.stored();
    assert_eq!(
        stored.len(),
        3,
        "the same key created a second and third issue"
    );
    assert!(stored.iter().all(|s| s.idempotency_key.is_none()));
    assert_eq!(stored[2].reference.as_deref(), Some("sluice-0a1b2c"));
    assert_eq!(fake.duplicates(), 2);

    // The list shows both, newest first; a page of one names the next.
    let r = client()
        .get(fake.url(&format!("{ISSUES}?state=all&per_page=1")))
        .send()
        .await
        .unwrap();
    let link = r.headers()["link"].to_str().unwrap().to_owned();
    assert!(link.contains("page=2>; rel=\"next\""), "{link}");
    let page: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(page[0]["number"], 3);
    assert_eq!(page[0]["body"], "pay <!-- sluice-0a1b2c -->");
    assert_eq!(page[0]["id"].as_u64().unwrap().to_string(), stored[2].id);
    let one = client()
        .get(fake.url("/repos/o/r/issues/1"))
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), 200);
    let none = client()
        .get(fake.url("/repos/o/r/issues/4"))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 404);
}

#[tokio::test]
async fn a_slow_write_is_stored_even_after_its_client_gave_up() {
    let fake = FakeProvider::start(FakeConfig::new(Style::GitHub))
        .await
        .unwrap();
    fake.script(
        "/repos/o/r/issues",
        [Fault::Slow(Duration::from_millis(300))],
    );
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let e = impatient
        .post(fake.url("/repos/o/r/issues"))
        .body(r#"{"title":"t"}"#)
        .send()
        .await
        .unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert!(fake.stored().is_empty(), "still at work");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        fake.stored().len(),
        1,
        "the provider finished what it received"
    );
}

#[tokio::test]
async fn a_hang_is_an_attempt_without_an_answer() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Ietf))
        .await
        .unwrap();
    fake.script("/slow", [Fault::Slow(Duration::from_millis(150))]);
    fake.script("/hang", [Fault::Hang]);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    assert_eq!(
        client.get(fake.url("/slow")).send().await.unwrap().status(),
        200
    );
    let e = client.get(fake.url("/hang")).send().await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].status, Some(200));
    assert_eq!(attempts[1].status, None);
    assert_eq!(attempts[1].path, "/hang");
}

#[tokio::test]
async fn a_bounded_record_keeps_the_last_attempts_and_counts_the_rest() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(4).keep_attempts(3))
        .await
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(post(&fake, CHAT, None).await.unwrap().status().as_u16());
    }
    // Its limit still counts every attempt, kept or not: the fifth is refused.
    assert_eq!(statuses, [200, 200, 200, 200, 429]);
    let kept = fake.attempts();
    assert_eq!(kept.len(), 3);
    assert_eq!(fake.attempts_forgotten(), 2);
    // The last three, each with what was learnt of it after it was recorded.
    let answered: Vec<_> = kept.iter().map(|a| a.status).collect();
    assert_eq!(answered, [Some(200), Some(200), Some(429)]);
    assert!(kept.iter().all(|a| a.path == CHAT));
    assert!(kept[0].tokens > 0, "{:?}", kept[0]);
}
