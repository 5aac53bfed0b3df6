//! Holds at the wire: a 429 or a spent quota holds the scope the provider's answer is about
//! (a model, not the whole key), and only for as long as it says — counted at the fake
//! provider, on virtual time.

use std::time::Duration;

use sluice::clock::{Clock, TokioClock};
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{executor_with, transport};

const CHAT: &str = "/v1/chat/completions";

fn chat(fake: &FakeProvider, model: &str) -> Call {
    let body = serde_json::json!({
        "model": model,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hello"}],
    });
    let mut call = Call::post("openai", fake.url(CHAT), body.to_string())
        .credential("team-key")
        .tenant("acme")
        .class(RequestClass::Read)
        .header("content-type", "application/json");
    // Long enough for the minute's pace, far too short for a day's hold.
    call.deadline = Some(Duration::from_secs(30));
    call
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_model_whose_day_is_spent_is_held_while_the_keys_other_models_flow() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(600))
        .await
        .unwrap();
    fake.limit_model_per_day("gpt-4o", 2);
    let config = "[providers.openai.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with(
        "openai",
        config,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    );

    for _ in 0..2 {
        let o = ex.execute(&chat(&fake, "gpt-4o")).await;
        assert!(matches!(o, Outcome::Succeeded { .. }), "{o:?}");
    }
    // The third is refused for the rest of the provider's day: the answer's figures are the
    // model's, so the hold lands on the model.
    let spent = ex.execute(&chat(&fake, "gpt-4o")).await;
    assert!(matches!(spent, Outcome::Ended(_)), "{spent:?}");
    assert_eq!(fake.answered(429), 1);

    // The same key's other model goes on at once, at its own pace.
    let start = TokioClock.now();
    for _ in 0..5 {
        let o = ex.execute(&chat(&fake, "gpt-4o-mini")).await;
        assert!(matches!(o, Outcome::Succeeded { .. }), "{o:?}");
    }
    assert!(
        (TokioClock.now() - start) < Duration::from_secs(5),
        "{:?}",
        (TokioClock.now() - start)
    );
    // The spent model waits for its day: nothing more of it reaches the provider.
    let held = ex.execute(&chat(&fake, "gpt-4o")).await;
    let Outcome::Ended(t) = held else {
        panic!("the spent model's call should end unsent: {held:?}")
    };
    assert!(!t.sent, "{:?}", t.reason);
    assert_eq!(fake.attempts_on(CHAT), 3 + 5);
    assert_eq!(fake.answered(429), 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn after_a_one_second_429_the_next_calls_go_at_the_minutes_pace_not_the_days() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    fake.script(
        CHAT,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(1)),
        }],
    );
    // 540 a minute paced (one every 111 ms), and 9 000 a day paced (one every 9.6 s).
    let config = "[providers.openai.limits]\nrequests_per_minute = 600\n\
                  requests_per_day = 10000\n";
    let ex = executor_with(
        "openai",
        config,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    );

    let start = TokioClock.now();
    let first = ex.execute(&chat(&fake, "gpt-4o")).await;
    assert!(
        matches!(first, Outcome::Succeeded { attempts: 2, .. }),
        "{first:?}"
    );
    for _ in 0..20 {
        let o = ex.execute(&chat(&fake, "gpt-4o")).await;
        assert!(matches!(o, Outcome::Succeeded { .. }), "{o:?}");
    }
    // The hold's second, then 20 calls at the minute's pace: about 3.2 s. At the day's pace
    // (the daily bucket emptied by the hold) they would take over three minutes.
    let took = TokioClock.now() - start;
    assert!(took < Duration::from_secs(5), "21 calls took {took:?}");
    assert!(took >= Duration::from_secs(3), "the pace holds: {took:?}");
    assert_eq!(fake.attempts_on(CHAT), 22);
}
