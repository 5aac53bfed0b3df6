//! Gemini at the wire, through the bundled plugin and a fake that answers as Google does: no
//! quota headers, the spent quota and the delay in a 429's body, the model in the path, and
//! streams whose events end with `\r\n\r\n` and repeat the usage so far.

use std::time::Duration;

use sluice::clock::{Clock, TokioClock};
use sluice::contract::RequestClass;
use sluice::execute::{Call, NextAction, Outcome, Reason};
use sluice::retry::{RetryConfig, Stop};
use sluice::transport::Transport;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_plugin_sdk::midnight::{Zone, until_local_midnight};
use sluice_tests::stack::{executor_with, long_stream};

const MODEL: &str = "gemini-2.0-flash";

fn transport() -> Transport {
    sluice_tests::stack::transport(Duration::from_secs(30))
}

/// A generation of `MODEL`, streamed or not, that may write `max_output` tokens.
fn generate(fake: &FakeProvider, stream: bool, max_output: u64) -> Call {
    let path = if stream {
        format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse")
    } else {
        format!("/v1beta/models/{MODEL}:generateContent")
    };
    let body = serde_json::json!({
        "contents": [{"role": "user", "parts": [{"text": "Write a long story about a lighthouse."}]}],
        "generationConfig": {"maxOutputTokens": max_output},
    });
    Call::post("gemini", fake.url(&path), body.to_string())
        .credential("team-key")
        .tenant("acme")
        .class(RequestClass::Read)
        .header("content-type", "application/json")
}

// On the real clock: a paused one would jump past the idle limit whenever the runtime
// waited on a plugin's call off its thread.
#[tokio::test(flavor = "current_thread")]
async fn a_gemini_stream_over_64_kib_ended_by_crlf_is_charged_its_last_reported_usage() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Gemini))
        .await
        .unwrap();
    let config = "[providers.gemini.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with("gemini", config, RetryConfig::default(), transport());

    // Longer than the first and last bytes the host keeps of it: the last bytes were joined
    // at a `\r\n\r\n`.
    let (body, usage) = long_stream(&ex, &generate(&fake, true, 200_000)).await;
    assert!(body.ends_with(b"\r\n\r\n"));
    assert!(
        !body.windows(2).any(|w| w == b"\n\n"),
        "no LF-only boundary"
    );

    // Charged what the last chunk reported: each chunk repeats the usage so far, so a sum
    // would be many times the output, and the estimate was 200 000. A quarter of the output
    // was thinking, billed but never streamed: a stream whose last usage was lost would be
    // charged only the text counted as it passed, three quarters of it.
    let attempt = &fake.attempts()[0];
    assert!(attempt.output_tokens > 16_000, "{attempt:?}");
    assert_eq!(usage.output_tokens, attempt.output_tokens, "{usage:?}");
    assert_eq!(usage.input_tokens, attempt.input_tokens, "{usage:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_spent_daily_quota_holds_the_model_until_midnight_pacific_though_it_says_22s() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Gemini))
        .await
        .unwrap();
    fake.limit_model_per_day(MODEL, 1);
    let config = "[providers.gemini.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with("gemini", config, RetryConfig::default(), transport());

    let first = ex.execute(&generate(&fake, false, 100)).await;
    assert!(matches!(first, Outcome::Succeeded { .. }), "{first:?}");
    let Outcome::Ended(t) = ex.execute(&generate(&fake, false, 100)).await else {
        panic!("the day's quota is spent");
    };
    assert!(
        matches!(t.reason, Reason::Stopped(Stop::QuotaExhausted { .. })),
        "{:?}",
        t.reason
    );
    let midnight = until_local_midnight(TokioClock.wall_ms(), Zone::UsPacific);
    let NextAction::WaitForQuota(Some(wait)) = t.next_action else {
        panic!("{:?}", t.next_action);
    };
    let wait = u64::try_from(wait.as_millis()).unwrap();
    assert!(
        wait.abs_diff(midnight) <= 2_000,
        "held {wait} ms, midnight Pacific is {midnight} ms away"
    );
    assert_eq!(fake.attempts().len(), 2);

    // Well past the 22 s the error asked for, the model's scope is still held: nothing more
    // reaches the provider.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let mut call = generate(&fake, false, 100);
    call.deadline = Some(Duration::from_secs(5));
    let Outcome::Ended(t) = ex.execute(&call).await else {
        panic!("the model is held");
    };
    assert!(!t.sent, "{:?}", t.reason);
    assert_eq!(fake.attempts().len(), 2);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_spent_minute_waits_the_delay_in_the_body_and_no_longer() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Gemini).rpm(1))
        .await
        .unwrap();
    let config = "[providers.gemini.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with("gemini", config, RetryConfig::default(), transport());
    let first = ex.execute(&generate(&fake, false, 100)).await;
    assert!(matches!(first, Outcome::Succeeded { .. }), "{first:?}");
    // The provider allows one a minute: the second is refused, with the delay in its body
    // only, and sent again once the delay has passed.
    let started = TokioClock.now();
    let second = ex.execute(&generate(&fake, false, 100)).await;
    assert!(matches!(second, Outcome::Succeeded { .. }), "{second:?}");
    let waited = TokioClock.now() - started;
    assert!(
        (Duration::from_secs(50)..=Duration::from_secs(70)).contains(&waited),
        "waited {waited:?}"
    );
    assert_eq!(fake.answered(429), 1);
    assert_eq!(fake.attempts().len(), 3);
}
