//! Real provider traffic at the wire: streamed answers, breakers per credential, spent
//! quotas, shared reads — each judged by what the fake provider received.

use std::sync::Arc;
use std::time::Duration;

use sluice::clock::{Clock, TokioClock};
use sluice::contract::{RequestClass, TransportFailure};
use sluice::execute::{Call, NextAction, Outcome, Reason, StreamOutcome, Terminal};
use sluice::retry::{RetryConfig, Stop};
use sluice::transport::{Timeouts, Transport};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::executor_with;

const CHAT: &str = "/v1/chat/completions";

fn transport() -> Transport {
    Transport::new(Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(30),
        generation: Duration::from_secs(30),
        idle: Duration::from_secs(10),
    })
    .expect("a transport")
}

fn chat(fake: &FakeProvider, credential: &str, body: &serde_json::Value) -> Call {
    Call::post("openai", fake.url(CHAT), body.to_string())
        .credential(credential)
        .tenant("acme")
        .class(RequestClass::Read)
        .header("content-type", "application/json")
}

fn ended(o: Outcome) -> Terminal {
    match o {
        Outcome::Ended(t) => *t,
        Outcome::Succeeded { .. } => panic!("expected the call to end without success"),
    }
}

fn streamed_body(max_tokens: u64) -> serde_json::Value {
    serde_json::json!({
        "model": "gpt-4o",
        "max_tokens": max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "tell me a long story"}],
    })
}

/// A streamed Anthropic message: Anthropic counts output tokens by what an answer produced
/// (OpenAI counts `max_tokens` when a request is admitted, so its charge is not lowered).
fn message(fake: &FakeProvider, max_tokens: u64) -> Call {
    let body = serde_json::json!({
        "model": "claude-sonnet",
        "max_tokens": max_tokens,
        "stream": true,
        "messages": [{"role": "user", "content": "tell me a long story"}],
    });
    Call {
        provider: "anthropic".into(),
        url: fake.url("/v1/messages"),
        ..chat(fake, "team-key", &body)
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_stream_passes_through_chunk_by_chunk_and_its_usage_corrects_the_charge() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Anthropic))
        .await
        .unwrap();
    // 60 000 output tokens a minute paced at 90%: one token every 1.111 ms, and a burst of
    // 6 001 tokens, so a 6 000-token request fits an idle scope at once and the next waits
    // for what the first was charged.
    let config = "[providers.anthropic.limits]\noutput_tokens_per_minute = 60000\n";
    let ex = executor_with("anthropic", config, RetryConfig::default(), transport());

    let StreamOutcome::Streaming(mut stream) = ex.execute_stream(&message(&fake, 6_000)).await
    else {
        panic!("the stream should begin");
    };
    assert_eq!(stream.status, 200);
    let mut arrivals = Vec::new();
    let mut text = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("the stream is delivered whole");
        arrivals.push(TokioClock.now());
        text.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("event: message_stop"), "{text}");
    assert!(arrivals.len() >= 10, "{} chunks", arrivals.len());
    // The first chunk reached the caller long before the last left the provider.
    let spread = *arrivals.last().unwrap() - arrivals[0];
    assert!(spread >= Duration::from_millis(15 * 20), "{spread:?}");

    // The provider's usage corrected the charge: from 6 000 output tokens to what it produced.
    let attempt = &fake.attempts()[0];
    let usage = stream.usage().expect("the stream's end reports usage");
    assert_eq!(usage.output_tokens, attempt.output_tokens);
    assert!(usage.output_tokens < 4_000, "{usage:?}");

    // So the next request of the same size waits what was used, not what was estimated.
    let before = TokioClock.now();
    let StreamOutcome::Streaming(mut again) = ex.execute_stream(&message(&fake, 6_000)).await
    else {
        panic!("the second stream should begin");
    };
    let waited = TokioClock.now() - before;
    // Uncorrected, it would wait for all 6 000 tokens (6.7 s, less the first stream's time).
    assert!(
        waited <= Duration::from_micros(usage.output_tokens * 1_112) + Duration::from_millis(50),
        "waited {waited:?} after a charge of {} output tokens",
        usage.output_tokens
    );
    while again.next().await.is_some() {}
    assert_eq!(fake.attempts_on("/v1/messages"), 2);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_stream_cut_midway_is_a_partial_outcome_and_is_never_sent_again() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    fake.script(CHAT, [Fault::CutStream { after_events: 4 }]);
    let config = "[providers.openai.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with("openai", config, RetryConfig::default(), transport());

    let StreamOutcome::Streaming(mut stream) = ex
        .execute_stream(&chat(&fake, "team-key", &streamed_body(500)))
        .await
    else {
        panic!("the stream should begin");
    };
    let (mut chunks, mut delivered) = (0, Vec::new());
    let partial = loop {
        match stream.next().await {
            Some(Ok(chunk)) => {
                chunks += 1;
                delivered.extend_from_slice(&chunk);
            }
            Some(Err(partial)) => break partial,
            None => panic!("a cut stream must not end as if whole"),
        }
    };
    assert!(chunks >= 1, "bytes were delivered before the cut");
    assert_eq!(partial.delivered, stream.delivered());
    assert!(partial.delivered > 0);
    assert!(matches!(
        partial.failure,
        Some(TransportFailure::ResetAfterSend | TransportFailure::TimeoutAfterSend)
    ));
    assert!(stream.next().await.is_none(), "a partial stream ends there");
    // Charged what the plugin counted of it: the output of the events that came (the fake's
    // text is one `tok ` a token), and the prompt's estimate; OpenAI's token total, the
    // reservation its limit counts however a stream ends, stands. The provider produced as
    // much, or an event more that the cut kept from the wire.
    let came = String::from_utf8_lossy(&delivered).matches("tok ").count() as u64;
    let produced = fake.attempts()[0].output_tokens;
    let usage = stream
        .usage()
        .expect("a broken stream is charged what was counted");
    assert_eq!(usage.output_tokens, came, "{usage:?}");
    assert!(came > 0 && came <= produced, "{came} of {produced}");
    assert!(usage.input_tokens > 0, "{usage:?}");

    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(fake.attempts_on(CHAT), 1, "no second attempt, ever");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_breaker_opened_by_one_credential_leaves_another_credentials_calls_alone() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    fake.script(
        CHAT,
        [
            Fault::Status {
                status: 401,
                code: "invalid_api_key",
            },
            Fault::Status {
                status: 401,
                code: "invalid_api_key",
            },
        ],
    );
    let retry = RetryConfig {
        breaker_threshold: 2,
        ..RetryConfig::default()
    };
    let config = "[providers.openai.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with("openai", config, retry, transport());
    let body = serde_json::json!({"model": "gpt-4o", "max_tokens": 10, "messages": []});

    for _ in 0..2 {
        let t = ended(ex.execute(&chat(&fake, "revoked", &body)).await);
        assert_eq!(t.next_action, NextAction::Reauthenticate);
    }
    let t = ended(ex.execute(&chat(&fake, "revoked", &body)).await);
    assert!(matches!(t.reason, Reason::BreakerOpen(_)), "{:?}", t.reason);
    assert!(!t.sent);
    assert_eq!(fake.attempts_on(CHAT), 2, "the open breaker sent nothing");

    let other = ex.execute(&chat(&fake, "healthy", &body)).await;
    assert!(matches!(other, Outcome::Succeeded { .. }), "{other:?}");
    assert_eq!(fake.attempts_on(CHAT), 3);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_spent_quota_holds_its_scope_until_the_configured_time() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    fake.script(
        CHAT,
        [Fault::Status {
            status: 429,
            code: "insufficient_quota",
        }],
    );
    let retry = RetryConfig {
        quota_exhausted_hold_ms: 60_000,
        ..RetryConfig::default()
    };
    let config = "[providers.openai.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with("openai", config, retry, transport());
    let body = serde_json::json!({"model": "gpt-4o", "max_tokens": 10, "messages": []});

    let t = ended(ex.execute(&chat(&fake, "team-key", &body)).await);
    assert!(matches!(
        t.reason,
        Reason::Stopped(Stop::QuotaExhausted { .. })
    ));
    assert!(matches!(t.next_action, NextAction::WaitForQuota(_)));

    // Every other worker of the scope waits; none of them reaches the provider.
    let mut workers = Vec::new();
    for _ in 0..3 {
        let (ex, mut call) = (ex.clone(), chat(&fake, "team-key", &body));
        call.deadline = Some(Duration::from_secs(10));
        workers.push(tokio::spawn(async move { ex.execute(&call).await }));
    }
    for w in workers {
        let t = ended(w.await.unwrap());
        assert!(t.out_of_time(), "{:?}", t.reason);
        assert!(!t.sent);
    }
    assert_eq!(fake.attempts_on(CHAT), 1);

    tokio::time::sleep(Duration::from_secs(61)).await;
    let after = ex.execute(&chat(&fake, "team-key", &body)).await;
    assert!(matches!(after, Outcome::Succeeded { .. }), "{after:?}");
    assert_eq!(fake.attempts_on(CHAT), 2);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn identical_reads_in_flight_share_one_attempt_only_when_they_opt_in() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    const MODELS: &str = "/v1/models";
    fake.script(MODELS, [Fault::Slow(Duration::from_secs(1))]);
    let config = "[providers.openai.limits]\nrequests_per_minute = 600\n";
    let ex = executor_with("openai", config, RetryConfig::default(), transport());
    let read = |coalesce: bool| Call {
        method: "GET".into(),
        url: fake.url(MODELS),
        body: Default::default(),
        coalesce,
        ..chat(&fake, "team-key", &serde_json::json!({}))
    };

    // `n` identical reads at once; each must succeed.
    let all_at_once = async |n: usize, coalesce: bool| {
        let reads: Vec<_> = (0..n)
            .map(|_| {
                let (ex, call) = (ex.clone(), read(coalesce));
                tokio::spawn(async move { ex.execute(&call).await })
            })
            .collect();
        for r in reads {
            assert!(matches!(r.await.unwrap(), Outcome::Succeeded { .. }));
        }
    };
    all_at_once(3, true).await;
    assert_eq!(
        fake.attempts_on(MODELS),
        1,
        "three shared reads, one attempt"
    );

    fake.script(MODELS, [Fault::Slow(Duration::from_secs(1))]);
    all_at_once(2, false).await;
    assert_eq!(
        fake.attempts_on(MODELS),
        3,
        "reads that did not opt in go alone"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_plugins_plan_names_the_tenant_when_the_call_does_not() {
    // A tenant with a tight per-tenant quota, named only by the request's `user` field.
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    let config = "[providers.openai.limits]\nrequests_per_minute = 6000\n\
                  [tiers.free.limits]\nrequests_per_minute = 1\n\
                  [tenants.assign]\nslow-tenant = \"free\"\n";
    let ex = executor_with("openai", config, RetryConfig::default(), transport());
    let body = serde_json::json!({"model": "gpt-4o", "max_tokens": 5, "user": "slow-tenant",
                                  "messages": []});
    let mut call = chat(&fake, "team-key", &body);
    call.tenant = None;
    call.deadline = Some(Duration::from_secs(5));
    assert!(matches!(ex.execute(&call).await, Outcome::Succeeded { .. }));
    // The tenant's one request a minute is spent: the next cannot meet its deadline.
    let t = ended(ex.execute(&call).await);
    assert!(t.out_of_time(), "{:?}", t.reason);
    assert_eq!(fake.attempts_on(CHAT), 1);
    // Another tenant is not held back.
    let mut other = call.clone();
    other.tenant = Some("acme".into());
    assert!(matches!(
        ex.execute(&other).await,
        Outcome::Succeeded { .. }
    ));
}

fn slow_stream_executor(gap: Duration) -> (FakeConfig, Arc<sluice::execute::Executor>) {
    let config = FakeConfig::new(Style::OpenAi).stream_gap(gap);
    let transport = Transport::new(Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(2),
        generation: Duration::from_secs(2),
        idle: Duration::from_secs(1),
    })
    .expect("a transport");
    let admission = "[providers.openai.limits]\nrequests_per_minute = 600\n";
    (
        config,
        executor_with("openai", admission, RetryConfig::default(), transport),
    )
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_attempt_has_no_total_timeout_only_a_first_byte_and_an_idle_limit() {
    // 18 events half a second apart: nine seconds in all, far past the first-byte limit.
    let (config, ex) = slow_stream_executor(Duration::from_millis(500));
    let fake = FakeProvider::start(config).await.unwrap();
    let StreamOutcome::Streaming(mut stream) = ex
        .execute_stream(&chat(&fake, "team-key", &streamed_body(100)))
        .await
    else {
        panic!("the stream should begin");
    };
    let started = TokioClock.now();
    while let Some(chunk) = stream.next().await {
        chunk.expect("a stream that never goes quiet for a second is delivered whole");
    }
    assert!(TokioClock.now() - started >= Duration::from_secs(8));
    assert_eq!(fake.attempts()[0].stream, Some(true));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_stream_quiet_for_longer_than_the_idle_limit_is_a_partial_outcome() {
    let (config, ex) = slow_stream_executor(Duration::from_millis(1_500));
    let fake = FakeProvider::start(config).await.unwrap();
    let StreamOutcome::Streaming(mut stream) = ex
        .execute_stream(&chat(&fake, "team-key", &streamed_body(100)))
        .await
    else {
        panic!("the first event comes at once");
    };
    assert!(matches!(stream.next().await, Some(Ok(_))));
    let Some(Err(partial)) = stream.next().await else {
        panic!("the second event comes after the idle limit")
    };
    assert_eq!(partial.failure, Some(TransportFailure::TimeoutAfterSend));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(fake.attempts_on(CHAT), 1, "never sent again");
}
