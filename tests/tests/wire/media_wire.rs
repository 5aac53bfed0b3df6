//! Requests as agents make them, at the wire: an image is charged as the provider counts it
//! (its pixels, not its base64), and a 20 MB body is planned by the plugin from its digest —
//! no fallback, no quarantine — then sent or refused as its cost allows. Counted at a fake
//! provider that counts images by its own published rule.

use std::time::Duration;

use sluice::contract::{Request, RequestClass};
use sluice::execute::{Call, Outcome, Reason};
use sluice::guard::AnsweredBy;
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_plugin_sdk::test::{base64, data_url, png};
use sluice_tests::stack::{executor_with, transport};

fn call(provider: &str, url: String, body: &serde_json::Value, tenant: &str) -> Call {
    Call::post(provider, url, body.to_string())
        .credential("team-key")
        .tenant(tenant)
        .class(RequestClass::Read)
        .header("content-type", "application/json")
}

/// The request the host plans for `call`, as its executor builds it.
fn request(call: &Call) -> Request {
    Request::new(
        call.method.clone(),
        call.url.clone(),
        call.class,
        "content-type:application/json\n".into(),
        call.body.clone(),
        0,
    )
}

/// What the plan charges in `dimension`.
fn planned(ex: &sluice::execute::Executor, provider: &str, req: &Request, dimension: &str) -> u64 {
    let answer = ex.policy(provider).unwrap().plan_request(req);
    assert!(matches!(answer.by, AnsweredBy::Plugin), "{:?}", answer.by);
    answer
        .value
        .cost
        .iter()
        .find(|c| format!("{:?}", c.dimension) == dimension)
        .map_or(0, |c| c.amount)
}

fn within_twice(ours: u64, theirs: u64) {
    assert!(
        ours <= theirs * 2 && theirs <= ours * 2,
        "sluice charged {ours}, the provider counted {theirs}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_openai_chat_with_an_image_is_admitted_and_charged_as_the_provider_counts_it() {
    // 60 000 tokens a minute: the image's 200 KB of base64 alone read as text would be
    // 66 000 tokens, over the whole limit.
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).tpm(60_000))
        .await
        .unwrap();
    let config = "[providers.openai.limits]\ntokens_per_minute = 60000\n";
    let ex = executor_with(
        "openai",
        config,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    );
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {
                "url": data_url("image/png", &png(1024, 1024, 200_000)), "detail": "high"}},
        ]}],
        "model": "gpt-4o",
        "max_tokens": 50,
    });
    let chat = call("openai", fake.url("/v1/chat/completions"), &body, "acme");
    let o = ex.execute(&chat).await;
    assert!(matches!(o, Outcome::Succeeded { .. }), "{o:?}");
    let counted = fake.attempts()[0].tokens;
    within_twice(planned(&ex, "openai", &request(&chat), "Tokens"), counted);
    assert_eq!(
        counted,
        765 + 6 + 50,
        "the provider's own count: tiles, text, output"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_anthropic_message_with_an_image_is_admitted_and_charged_as_the_provider_counts_it() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Anthropic).itpm(40_000))
        .await
        .unwrap();
    let config = "[providers.anthropic.limits]\ninput_tokens_per_minute = 40000\n";
    let ex = executor_with(
        "anthropic",
        config,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    );
    let body = serde_json::json!({
        "model": "claude-sonnet-4",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                "data": base64(&png(1200, 900, 600_000))}},
            {"type": "text", "text": "describe it"},
        ]}],
    });
    let message = call("anthropic", fake.url("/v1/messages"), &body, "acme");
    let o = ex.execute(&message).await;
    assert!(matches!(o, Outcome::Succeeded { .. }), "{o:?}");
    let counted = fake.attempts()[0].tokens - 64;
    within_twice(
        planned(&ex, "anthropic", &request(&message), "InputTokens"),
        counted,
    );
}

#[tokio::test(flavor = "current_thread")]
async fn twenty_megabyte_bodies_are_planned_by_the_plugin_and_never_quarantine_it() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).tpm(200_000))
        .await
        .unwrap();
    let config = "[providers.openai.limits]\ntokens_per_minute = 200000\n";
    let ex = executor_with(
        "openai",
        config,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    );
    let chat = fake.url("/v1/chat/completions");
    // A 20 MB picture: a few hundred tokens to the provider.
    let picture = serde_json::json!({
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {
                "url": data_url("image/png", &png(4000, 3000, 15 << 20))}},
        ]}],
        "model": "gpt-4o",
        "max_tokens": 16,
    });
    // 20 MB of text: five million tokens, more than the whole limit.
    let text = serde_json::json!({
        "messages": [{"role": "user", "content": "a".repeat(20 << 20)}],
        "model": "gpt-4o",
        "max_tokens": 16,
    });
    for round in 0..3 {
        let big = call("openai", chat.clone(), &picture, "noisy");
        assert!(big.body.len() > 20_000_000);
        let o = ex.execute(&big).await;
        assert!(
            matches!(o, Outcome::Succeeded { .. }),
            "round {round}: {o:?}"
        );
        let refused = ex
            .execute(&call("openai", chat.clone(), &text, "noisy"))
            .await;
        let Outcome::Ended(t) = refused else {
            panic!("round {round}: the text is over the limit: {refused:?}")
        };
        assert!(matches!(t.reason, Reason::Refused(_)), "{:?}", t.reason);
        assert!(!t.sent);
        // Another tenant's ordinary call is planned and charged by the plugin throughout.
        let small = serde_json::json!({"model": "gpt-4o", "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}]});
        let steady = call("openai", chat.clone(), &small, "steady");
        assert_eq!(planned(&ex, "openai", &request(&steady), "Tokens"), 2 + 8);
        let o = ex.execute(&steady).await;
        assert!(
            matches!(o, Outcome::Succeeded { .. }),
            "round {round}: {o:?}"
        );
    }
    let health = ex.policy("openai").unwrap().health();
    assert_eq!(
        (
            health.total_failures,
            health.input_failures,
            health.quarantines
        ),
        (0, 0, 0),
        "{health:?}"
    );
    // Sent: three pictures and three ordinary calls; never the text.
    assert_eq!(fake.attempts().len(), 6);
    let picture_tokens = fake.attempts()[0].tokens;
    within_twice(
        planned(
            &ex,
            "openai",
            &request(&call("openai", chat, &picture, "noisy")),
            "Tokens",
        ),
        picture_tokens,
    );
}
