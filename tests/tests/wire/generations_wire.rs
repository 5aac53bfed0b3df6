//! Long generations at the wire: a non-streamed answer begins only when the provider is done
//! writing it, so it is given the generation limit, not the first-byte limit; and a
//! generation that got no answer after it was sent (it may have been generated and billed)
//! is sent again at most once, and only when the configuration allows — counted at the fake
//! provider, on virtual time.

use std::time::Duration;

use sluice::contract::RequestClass;
use sluice::execute::{Call, NextAction, Outcome, Reason, Terminal};
use sluice::retry::{RetryConfig, Stop};
use sluice::transport::{Timeouts, Transport};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::executor_with;

const CHAT: &str = "/v1/chat/completions";
const LIMITS: &str = "[providers.openai.limits]\nrequests_per_minute = 600\n";

/// Streams must begin within 3 s; an answer read whole may take `generation`.
fn transport(generation: Duration) -> Transport {
    Transport::new(Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(3),
        generation,
        idle: Duration::from_secs(3),
    })
    .expect("a transport")
}

fn generation(fake: &FakeProvider) -> Call {
    let body = serde_json::json!({
        "model": "o3",
        "max_tokens": 4000,
        "messages": [{"role": "user", "content": "think hard"}],
    });
    Call::post("openai", fake.url(CHAT), body.to_string())
        .credential("team-key")
        .tenant("acme")
        .class(RequestClass::Read)
        .header("content-type", "application/json")
}

async fn slow_provider(answers_after: Duration) -> FakeProvider {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    fake.script(CHAT, std::iter::repeat_n(Fault::Slow(answers_after), 8));
    fake
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_generation_slower_than_the_first_byte_limit_is_answered_after_one_attempt() {
    let fake = slow_provider(Duration::from_secs(5)).await;
    let ex = executor_with(
        "openai",
        LIMITS,
        RetryConfig::default(),
        transport(Timeouts::default().generation),
    );
    let o = ex.execute(&generation(&fake)).await;
    assert!(matches!(o, Outcome::Succeeded { attempts: 1, .. }), "{o:?}");
    assert_eq!(fake.attempts_on(CHAT), 1);
}

/// A generation that takes 5 s against a 3 s generation limit, under `retry`: how it ended,
/// and how many attempts the provider received once it finished what it was asked.
async fn past_its_limit(retry: RetryConfig) -> (Terminal, usize) {
    let fake = slow_provider(Duration::from_secs(5)).await;
    let ex = executor_with("openai", LIMITS, retry, transport(Duration::from_secs(3)));
    let Outcome::Ended(t) = ex.execute(&generation(&fake)).await else {
        panic!("the generation should end unanswered");
    };
    assert_eq!(t.reason, Reason::Stopped(Stop::GenerationUnanswered));
    assert!(t.sent && !t.response_received);
    assert_eq!(t.next_action, NextAction::RetryLater(None));
    tokio::time::sleep(Duration::from_secs(10)).await;
    (*t, fake.attempts_on(CHAT))
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_generation_past_its_limit_is_not_sent_again() {
    let (t, received) = past_its_limit(RetryConfig::default()).await;
    assert_eq!(
        (t.attempts, received),
        (1, 1),
        "one paid generation, never four"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_generation_past_its_limit_is_sent_once_more_when_the_configuration_allows() {
    let retry = RetryConfig {
        resend_unanswered_generation: true,
        ..RetryConfig::default()
    };
    let (t, received) = past_its_limit(retry).await;
    assert_eq!((t.attempts, received), (2, 2));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_read_that_charges_no_tokens_is_still_retried_after_a_timeout() {
    // A plain read (no tokens: a GET) costs nothing to repeat: its class budget decides.
    let fake = slow_provider(Duration::from_secs(5)).await;
    let ex = executor_with(
        "openai",
        LIMITS,
        RetryConfig::default(),
        transport(Duration::from_secs(3)),
    );
    let call = Call::get("openai", fake.url(CHAT))
        .credential("team-key")
        .tenant("acme");
    let o = ex.execute(&call).await;
    assert!(matches!(o, Outcome::Ended(_)), "{o:?}");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(fake.attempts_on(CHAT) > 2, "{}", fake.attempts_on(CHAT));
}

/// A model's own settings (`[providers.openai.generations."o3"]`) over the transport's.
const O3_SETTINGS: &str = "[providers.openai.limits]\nrequests_per_minute = 600\n\
    tokens_per_minute = 20000\n\
    [providers.openai.generations.\"o3\"]\ntimeout_ms = 8000\ndefault_max_output = 30000\n";

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_model_s_own_generation_timeout_outlasts_the_transport_s() {
    let fake = slow_provider(Duration::from_secs(5)).await;
    let ex = executor_with(
        "openai",
        O3_SETTINGS,
        RetryConfig::default(),
        transport(Duration::from_secs(3)),
    );
    let o = ex.execute(&generation(&fake)).await;
    assert!(
        matches!(o, Outcome::Succeeded { attempts: 1, .. }),
        "o3 may take 8 s: {o:?}"
    );
    // Another model keeps the transport's 3 s.
    let body = serde_json::json!({
        "model": "gpt-4o", "max_tokens": 100,
        "messages": [{"role": "user", "content": "think hard"}],
    });
    let other = Call::post("openai", fake.url(CHAT), body.to_string())
        .credential("team-key")
        .tenant("acme")
        .class(RequestClass::Read)
        .header("content-type", "application/json");
    let Outcome::Ended(t) = ex.execute(&other).await else {
        panic!("gpt-4o has the transport's 3 s");
    };
    assert_eq!(t.reason, Reason::Stopped(Stop::GenerationUnanswered));
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(fake.attempts_on(CHAT), 2, "one attempt each");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_generation_naming_no_maximum_is_counted_at_its_model_s_configured_default() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    let ex = executor_with(
        "openai",
        O3_SETTINGS,
        RetryConfig::default(),
        transport(Timeouts::default().generation),
    );
    let chat = |model: &str, max: Option<u32>| {
        let mut body = serde_json::json!({
            "model": model, "messages": [{"role": "user", "content": "plan the migration"}],
        });
        if let Some(m) = max {
            body["max_tokens"] = m.into();
        }
        Call::post("openai", fake.url(CHAT), body.to_string())
            .credential("team-key")
            .tenant("acme")
            .class(RequestClass::Read)
            .header("content-type", "application/json")
    };
    // o3 without a maximum is counted at 30 000 output tokens: more than the 20 000 a
    // minute allows, so it is refused before it is sent.
    let Outcome::Ended(t) = ex.execute(&chat("o3", None)).await else {
        panic!("o3 without a maximum needs 30 000 tokens");
    };
    assert!(!t.sent, "{t:?}");
    assert_eq!(fake.attempts_on(CHAT), 0);
    // With its own maximum, or another model (the plugin's 1 024), it goes.
    for call in [chat("o3", Some(500)), chat("gpt-4o", None)] {
        let o = ex.execute(&call).await;
        assert!(matches!(o, Outcome::Succeeded { attempts: 1, .. }), "{o:?}");
    }
    assert_eq!(fake.attempts_on(CHAT), 2);
}
