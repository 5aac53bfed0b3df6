//! The fake provider speaks each provider's dialect well enough that the bundled plugins read
//! its answers as they read the real ones: a 429 from its own limit is `rate-limited` with
//! the wait it named, and its quota headers become observations.

use sluice::clock::{Clock, SystemClock};
use sluice::contract::{
    ProviderPolicy, ReportedDimension, RequestClass, Response, ResponsePart, Verdict, WireOutcome,
};
use sluice::transport::{Timeouts, Transport};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::{request, runtime};

/// Sends `n` calls to `path` through the host's own transport; returns the answers.
async fn answers(fake: &FakeProvider, path: &str, n: usize) -> Vec<Response> {
    let transport = Transport::new(Timeouts::default()).expect("a transport");
    let req = request("POST", &fake.url(path), RequestClass::Read)
        .with_body(br#"{"model":"m","max_tokens":50}"#.to_vec());
    let mut all = Vec::new();
    for _ in 0..n {
        match transport.send(&req, &[]).await {
            WireOutcome::Response(r) => all.push(r),
            WireOutcome::Transport(f) => panic!("the fake did not answer: {f:?}"),
        }
    }
    all
}

#[tokio::test(flavor = "current_thread")]
async fn bundled_plugins_read_the_fakes_429s_and_quota_headers() {
    let rt = runtime();
    for (style, plugin, path) in [
        (Style::OpenAi, "openai", "/v1/chat/completions"),
        (Style::Anthropic, "anthropic", "/v1/messages"),
        (Style::GitHub, "github", "/repos/o/r/issues"),
        (Style::Ietf, "ietf", "/v1/things"),
    ] {
        let fake = FakeProvider::start(FakeConfig::new(style).rpm(1))
            .await
            .unwrap();
        // The provider allows one a minute: the second is refused by its own limit.
        let resp = answers(&fake, path, 2).await.remove(1);
        assert_eq!(resp.status, 429, "{plugin}");
        let p = rt.load_bundled(plugin).expect("a bundled plugin");
        let mut req = request("POST", &fake.url(path), RequestClass::Read);
        // The fake's dates are on the real clock.
        req.now_ms = SystemClock.wall_ms();
        let reading = p
            .read_response(&req, &WireOutcome::Response(resp), ResponsePart::Complete)
            .expect("read-response");
        let c = reading.classification;
        assert_eq!(c.verdict, Verdict::RateLimited, "{plugin}");
        let wait = c.retry_after_ms.expect("the 429 names a wait");
        assert!((55_000..=61_000).contains(&wait), "{plugin}: {wait} ms");
        let obs = reading.observations;
        let requests = obs
            .iter()
            .find(|o| o.dimension == ReportedDimension::Requests)
            .unwrap_or_else(|| panic!("{plugin}: no request quota in {obs:?}"));
        assert_eq!(requests.limit, Some(1), "{plugin}");
        assert_eq!(requests.remaining, Some(0), "{plugin}");
        assert_eq!(fake.attempts_on(path), 2);
    }

    // Stripe sends no quota headers: a scripted 429, then a normal answer.
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .unwrap();
    fake.script(
        "/v1/charges",
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(2)),
        }],
    );
    let mut two = answers(&fake, "/v1/charges", 2).await;
    let p = rt.load_bundled("stripe").unwrap();
    let req = request(
        "POST",
        &fake.url("/v1/charges"),
        RequestClass::IdempotentWrite,
    );
    let second = two.remove(1);
    let classify = |resp: Response| {
        p.read_response(&req, &WireOutcome::Response(resp), ResponsePart::Complete)
            .unwrap()
            .classification
    };
    let c = classify(two.remove(0));
    assert_eq!(
        (c.verdict, c.retry_after_ms),
        (Verdict::RateLimited, Some(2_000))
    );
    let c = classify(second);
    assert_eq!(c.verdict, Verdict::Success);
}

#[tokio::test(flavor = "current_thread")]
async fn bundled_plugins_read_the_usage_in_the_fakes_answers() {
    let rt = runtime();
    let transport = Transport::new(Timeouts::default()).expect("a transport");
    // 40 characters of prompt (10 tokens as the fake counts) and up to 50 output tokens, of
    // which the fake's answers use part: the usage read is the answer's, not the estimate.
    let body = br#"{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"0123456789012345678901234567890123456789"}]}"#;
    for (style, plugin, path) in [
        (Style::OpenAi, "openai", "/v1/chat/completions"),
        (Style::Anthropic, "anthropic", "/v1/messages"),
    ] {
        let fake = FakeProvider::start(FakeConfig::new(style)).await.unwrap();
        let req = request("POST", &fake.url(path), RequestClass::Read).with_body(body.to_vec());
        let outcome = transport.send(&req, &[]).await;
        let p = rt.load_bundled(plugin).expect("a bundled plugin");
        let reading = p
            .read_response(&req, &outcome, ResponsePart::Complete)
            .expect("read-response");
        assert_eq!(reading.classification.verdict, Verdict::Success, "{plugin}");
        let used = |d: ReportedDimension| {
            reading
                .usage
                .iter()
                .find(|c| c.dimension == d)
                .map(|c| c.amount)
        };
        assert_eq!(used(ReportedDimension::InputTokens), Some(10), "{plugin}");
        let produced = fake.attempts()[0].output_tokens;
        assert!(
            produced < 50,
            "{plugin}: the answer is shorter than its maximum"
        );
        assert_eq!(
            used(ReportedDimension::OutputTokens),
            Some(produced),
            "{plugin}"
        );
        // OpenAI counts the prompt and the whole max_tokens when it admits a request, and
        // gives nothing back: the tokens never fall below the plugin's admission estimate
        // (the 40 characters and the role's 4: 11 tokens, and 50). Anthropic counts what
        // the answer produced.
        let counted = if plugin == "openai" {
            11 + 50
        } else {
            10 + produced
        };
        assert_eq!(used(ReportedDimension::Tokens), Some(counted), "{plugin}");
        assert_eq!(fake.attempts_on(path), 1, "{plugin}");
    }
}
