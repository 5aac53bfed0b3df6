//! The sidecar at the wire: what agents see, and what the fake provider received.

mod support;

use std::time::Duration;

use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use support::{AGENT_TOKEN, PROVIDER_KEY, client, config_text, start, start_in};

const CHAT: &str = "/v1/chat/completions";
const OBJECTS: &str = "/v1/objects";

async fn fake(style: Style) -> FakeProvider {
    let fake = FakeProvider::start(FakeConfig::new(style).stream_gap(Duration::from_millis(40)))
        .await
        .unwrap();
    fake.require_credential("authorization", &format!("Bearer {PROVIDER_KEY}"));
    fake
}

fn openai(fake: &FakeProvider) -> String {
    config_text(&[("openai", "openai", &fake.url(""), "authorization")], "")
}

fn stripe(fake: &FakeProvider, extra: &str) -> String {
    config_text(
        &[("stripe", "stripe", &fake.url(""), "authorization")],
        extra,
    )
}

const BODY: &str =
    r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":16}"#;

/// The chat completion [`BODY`], sent by the agent through the sidecar at `url`.
async fn chat(url: &str) -> reqwest::Response {
    client()
        .post(format!("{url}/openai{CHAT}"))
        .bearer_auth(AGENT_TOKEN)
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_storm_is_absorbed_and_the_agent_sees_only_the_answer() {
    let fake = fake(Style::OpenAi).await;
    let limited = Fault::RateLimited {
        retry_after: Some(RetryAfter::Millis(50)),
    };
    fake.script(CHAT, [limited, limited]);
    let side = start(&openai(&fake)).await;
    let r = chat(&side.url).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-sluice-attempts"], "3");
    assert_eq!(fake.answered(429), 2, "the provider answered the storm");
    // The fake demands the sidecar's key: a 200 means the agent's token was replaced by it.
    assert_eq!(fake.answered(200), 1);
    assert_eq!(fake.answered(401), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_answer_was_lost_is_done_once_and_answered() {
    let fake = fake(Style::Stripe).await;
    fake.script(OBJECTS, [Fault::StoreThenDrop]);
    let side = start(&stripe(&fake, "")).await;
    let send = || {
        client()
            .post(format!("{}/stripe{OBJECTS}", side.url))
            .bearer_auth(AGENT_TOKEN)
            .header("x-sluice-task", "invoices")
            .header("x-sluice-action", "charge-42")
            .body("amount=100")
            .send()
    };
    let r = send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-sluice-action-state"], "succeeded");
    let first = r.text().await.unwrap();
    assert_eq!(
        fake.stored().len(),
        1,
        "stored once though the answer was lost"
    );
    let key = fake.attempts()[0].idempotency_key.clone().expect("a key");
    assert_eq!(fake.attempts_with_key(&key), 2, "resent with the same key");
    // The agent sends it again (its own retry): the journal answers, nothing is sent —
    // with the provider's own answer, which the agent's SDK parses as it did the first.
    let again = send().await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["x-sluice-replayed"], "true");
    assert_eq!(again.headers()["content-type"], "application/json");
    let replayed = again.text().await.unwrap();
    assert_eq!(
        replayed, first,
        "the provider's answer, not an account of sluice's"
    );
    assert!(
        replayed.contains(&fake.stored()[0].id),
        "the stored object: {replayed}"
    );
    assert_eq!(fake.attempts().len(), 2);
    assert_eq!(fake.stored().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_key_sent_by_an_agent_is_refused_or_stripped_as_configured() {
    let fake = fake(Style::OpenAi).await;
    let send = |url: String| {
        client()
            .get(format!("{url}/openai/v1/models"))
            .header("x-sluice-token", AGENT_TOKEN)
            .bearer_auth("sk-proj-agents-own-key")
            .send()
    };
    let refusing = start(&openai(&fake)).await;
    let r = send(refusing.url.clone()).await.unwrap();
    assert_eq!(r.status(), 403);
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("authorization"),
        "{body}"
    );
    assert_eq!(fake.attempts().len(), 0, "nothing reached the provider");

    let text = openai(&fake).replace(
        "[serve.agents.bot]",
        "[serve]\nagent_provider_keys = \"strip\"\n[serve.agents.bot]",
    );
    let stripping = start(&text).await;
    let r = send(stripping.url.clone()).await.unwrap();
    assert_eq!(r.status(), 200, "sent with the sidecar's key");
    assert_eq!(fake.answered(401), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_unknown_providers_and_bad_hints_are_refused_by_name() {
    let fake = fake(Style::OpenAi).await;
    let side = start(&openai(&fake)).await;
    let c = client();
    let r = c
        .get(format!("{}/openai/v1/models", side.url))
        .bearer_auth("not-a-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .get(format!("{}/mistral/v1/models", side.url))
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let body: serde_json::Value = r.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`mistral`") && message.contains("openai"),
        "{message}"
    );
    let r = c
        .get(format!("{}/openai/v1/models", side.url))
        .bearer_auth(AGENT_TOKEN)
        .header("x-sluice-priority", "urgent")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("x-sluice-priority"),
        "{body}"
    );
    let r = c
        .get(format!("{}/openai/v1/models", side.url))
        .bearer_auth(AGENT_TOKEN)
        .header("x-sluice-tenant", "someone-else")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "the agent may not name a tenant");
    assert_eq!(fake.attempts().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::disallowed_methods,
    reason = "the test measures when chunks really arrive"
)]
async fn a_stream_passes_through_chunk_by_chunk_and_its_usage_corrects_the_charge() {
    let fake = fake(Style::Anthropic).await;
    let text = config_text(
        &[("anthropic", "anthropic", &fake.url(""), "authorization")],
        "",
    )
    .replace(
        "requests_per_minute = 6000\n",
        "requests_per_minute = 6000\noutput_tokens_per_minute = 60000\n",
    );
    let side = start(&text).await;
    let mut r = client()
        .post(format!("{}/anthropic/v1/messages", side.url))
        .header("x-api-key", AGENT_TOKEN)
        .body(r#"{"model":"claude","max_tokens":5000,"stream":true,"messages":[]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let clock = tokio::time::Instant::now;
    let began = clock();
    let mut arrivals = Vec::new();
    let mut whole = Vec::new();
    while let Some(chunk) = r.chunk().await.unwrap() {
        arrivals.push(clock().duration_since(began));
        whole.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(whole).unwrap();
    assert!(text.contains("event: message_stop"), "{text}");
    // The fake pauses 40 ms between events: passed through as they come, the first chunks
    // arrive well before the last.
    assert!(arrivals.len() >= 5, "{} chunks", arrivals.len());
    let first = arrivals[0];
    let last = *arrivals.last().unwrap();
    assert!(
        last - first >= Duration::from_millis(150),
        "chunks arrived at {arrivals:?}"
    );

    // The call was charged its `max_tokens` (5 000 output tokens) when admitted; the usage
    // the stream reported at its end (what the model wrote: 10 to 59% of it) replaced that
    // charge. Refill in the meantime only adds, and is far below the 2 000 tokens between
    // the two charges.
    let written = fake.attempts()[0].output_tokens;
    assert!((1..=2950).contains(&written), "{written}");
    let snapshot = side.sluice.admission().snapshot();
    let output = snapshot
        .scopes
        .iter()
        .flat_map(|s| &s.quotas)
        .find(|q| q.dimension == sluice::admission::Dimension::OutputTokens)
        .expect("the output-token quota");
    assert!(
        output.available + written >= output.burst,
        "charged more than what was written ({written}): {output:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_write_in_flight_finish_and_refuses_new_connections() {
    let fake = fake(Style::Stripe).await;
    fake.script(OBJECTS, [Fault::Slow(Duration::from_millis(400))]);
    let side = start(&stripe(&fake, "")).await;
    let url = side.url.clone();
    let write = tokio::spawn(async move {
        client()
            .post(format!("{url}/stripe{OBJECTS}"))
            .bearer_auth(AGENT_TOKEN)
            .header("x-sluice-action", "refund-7")
            .body("amount=5")
            .send()
            .await
    });
    while fake.attempts().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let drained = side.running.shutdown().await;
    assert_eq!(drained.writes_left, 0);
    let r = write.await.unwrap().unwrap();
    assert_eq!(r.status(), 200, "the write in flight finished");
    assert_eq!(fake.stored().len(), 1);
    let refused = client()
        .get(format!("{}/stripe/v1/objects/x", side.url))
        .bearer_auth(AGENT_TOKEN)
        .send()
        .await;
    assert!(refused.is_err(), "no longer accepting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_by_the_shutdown_deadline_is_carried_on_at_the_next_start() {
    let fake = fake(Style::Stripe).await;
    // The provider takes a second: longer than the sidecar's shutdown deadline.
    fake.script(OBJECTS, [Fault::Slow(Duration::from_secs(1))]);
    let text = stripe(&fake, "[serve]\nshutdown_deadline_ms = 100\n");
    let side = start(&text).await;
    let url = side.url.clone();
    let write = tokio::spawn(async move {
        client()
            .post(format!("{url}/stripe{OBJECTS}"))
            .bearer_auth(AGENT_TOKEN)
            .header("x-sluice-action", "payout-9")
            .body("amount=9")
            .send()
            .await
    });
    while fake.attempts().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let drained = side.running.shutdown().await;
    assert_eq!(drained.writes_left, 1, "cut at the deadline");
    let answered = write.await.unwrap();
    assert!(
        answered.is_err() || answered.as_ref().unwrap().status() == 503,
        "the agent is told the write did not end: {answered:?}"
    );
    drop(side.sluice);

    // The next start finds it `sent` in the journal and settles it with the same key.
    let next = start_in(&text, side.state).await;
    for _ in 0..400 {
        if next.running.ready() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(next.running.ready(), "recovery finished");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let key = fake.attempts()[0].idempotency_key.clone().expect("a key");
    assert!(
        fake.attempts()
            .iter()
            .all(|a| a.idempotency_key.as_deref() == Some(&key))
    );
    assert_eq!(fake.stored().len(), 1, "done once: {:?}", fake.stored());
    let all = next.sluice.journal().all().unwrap();
    let action = all
        .iter()
        .find(|a| a.task == "acme/bot:payout-9" && a.action == "payout-9")
        .expect("journaled");
    assert_eq!(action.state.name(), "succeeded");
}

/// Sends `body` to `url` as the agent and reads the whole answer.
async fn streamed(url: String, body: &str) -> String {
    let r = client()
        .post(url)
        .header("authorization", format!("Bearer {AGENT_TOKEN}"))
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    String::from_utf8(r.bytes().await.unwrap().to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_stream_that_does_not_ask_for_its_usage_is_corrected_and_reaches_the_agent_unchanged()
 {
    use sluice::budget::{Budget, Measure, Window};
    let fake = fake(Style::OpenAi).await;
    // Spend is priced by the usage a call reports: 2.5 micros an input token, 10 an output
    // token, and a token not split into either at the output price.
    let prices = "[budgets]\ntime_zone = \"UTC\"\n[tiers.free.budgets]\n\
                  spend_micros_per_month = 100000000\n[tenants]\ndefault_tier = \"free\"\n\
                  [providers.openai.prices.\"gpt-4o\"]\ninput_micros_per_million = 2500000\n\
                  output_micros_per_million = 10000000\n";
    let side = start(&config_text(
        &[("openai", "openai", &fake.url(""), "authorization")],
        prices,
    ))
    .await;
    // As the official SDK writes a stream: no `stream_options`.
    let body = format!(
        r#"{{"model":"gpt-4o","max_tokens":1000,"stream":true,"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(4000)
    );
    let through = streamed(format!("{}/openai{CHAT}", side.url), &body).await;
    // The same request straight to the provider, as the agent would send it without sluice.
    let mut direct_req = client()
        .post(fake.url(CHAT))
        .header("authorization", format!("Bearer {PROVIDER_KEY}"))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let mut direct = Vec::new();
    while let Some(chunk) = direct_req.chunk().await.unwrap() {
        direct.extend_from_slice(&chunk);
    }
    let direct = String::from_utf8(direct).unwrap();
    // The provider names each stream after its place in its ledger; all else is the same.
    let through = through.replace("stream_000000", "stream_X");
    let direct = direct.replace("stream_000001", "stream_X");
    assert_eq!(
        through, direct,
        "the agent's stream is what it would get without sluice"
    );
    assert!(!through.contains("\"usage\""), "{through}");

    // The host asked for the usage and read it: the spend is the answer's, 1 000 input
    // tokens at 2.5 and what the model wrote at 10. Without the usage it would stay at its
    // estimate: 2 001 tokens (the prompt's 1 001 and the whole max_tokens) at 10, 20 010.
    let spend = Budget::new(Measure::SpendMicros, Window::Month);
    let budgets = side.sluice.executor().budgets().expect("budgets");
    let mut used = 0;
    for _ in 0..100 {
        used = budgets
            .standing("acme")
            .unwrap()
            .iter()
            .find(|s| s.budget == spend)
            .unwrap()
            .used;
        if used != 20_010 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let written = fake.attempts()[0].output_tokens;
    assert!((1..1_000).contains(&written), "{written}");
    assert_eq!(used, 2_500 + 10 * written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_workers_reads_and_writes_are_served_on_the_shared_runtime() {
    let (openai_fake, stripe_fake) = (fake(Style::OpenAi).await, fake(Style::Stripe).await);
    let text = config_text(
        &[
            ("openai", "openai", &openai_fake.url(""), "authorization"),
            ("stripe", "stripe", &stripe_fake.url(""), "authorization"),
        ],
        "[serve]\nworkers = 0\n",
    );
    let side = start(&text).await;
    let read = chat(&side.url).await;
    assert_eq!(read.status(), 200);
    let write = client()
        .post(format!("{}/stripe{OBJECTS}", side.url))
        .bearer_auth(AGENT_TOKEN)
        .header("x-sluice-task", "invoices")
        .header("x-sluice-action", "charge-7")
        .body("amount=100")
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), 200);
    assert_eq!(write.headers()["x-sluice-action-state"], "succeeded");
    assert_eq!(openai_fake.answered(200), 1);
    assert_eq!(stripe_fake.stored().len(), 1);
}

/// Every bundled provider's refusals come in the shape its SDK reads, as its plugin
/// describes it: Bedrock's (AWS's shape) names the error's type in `x-amzn-ErrorType`, where
/// an AWS SDK reads it before the body; and a provider configured with AWS's shape does too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_comes_in_each_provider_s_own_error_shape() {
    let fake = fake(Style::OpenAi).await;
    let url = fake.url("");
    let providers = [
        "openai",
        "anthropic",
        "github",
        "stripe",
        "ietf",
        "gemini",
        "bedrock",
    ]
    .map(|p| (p, p, url.as_str(), "authorization"));
    let mut providers = providers.to_vec();
    providers.push(("aws", "ietf", &url, "authorization"));
    let side = start(&config_text(
        &providers,
        "[serve.providers.aws]\nerror_shape = \"aws\"\n",
    ))
    .await;
    for (name, ..) in &providers {
        // A priority no agent may ask for: refused by the sidecar, before any provider.
        let r = client()
            .get(format!("{}/{name}/v1/x", side.url))
            .bearer_auth(AGENT_TOKEN)
            .header("x-sluice-priority", "urgent")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{name}");
        let aws_type = r
            .headers()
            .get("x-amzn-errortype")
            .map(|v| v.to_str().unwrap().to_owned());
        let body: serde_json::Value = r.json().await.unwrap();
        let message = match *name {
            "anthropic" => {
                assert_eq!(body["type"], "error", "{body}");
                &body["error"]["message"]
            }
            "github" => &body["message"],
            "gemini" => {
                assert_eq!(body["error"]["code"], 400, "{body}");
                assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{body}");
                &body["error"]["message"]
            }
            "bedrock" | "aws" => {
                assert_eq!(aws_type.as_deref(), Some("ValidationException"), "{name}");
                assert_eq!(body["__type"], "ValidationException", "{body}");
                &body["message"]
            }
            _ => &body["error"]["message"],
        };
        assert!(
            message
                .as_str()
                .is_some_and(|m| m.contains("x-sluice-priority")),
            "{name}: {body}"
        );
        if !matches!(*name, "bedrock" | "aws") {
            assert_eq!(aws_type, None, "{name}");
        }
    }
    assert_eq!(fake.attempts().len(), 0);
}

/// A Gemini generation through the sidecar: a read (sent again after a 429, never
/// journaled), and a stream asked for by its path alone, passed through with its
/// `\r\n\r\n`-ended events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_generation_is_a_read_and_its_stream_is_asked_for_by_the_path() {
    let fake =
        FakeProvider::start(FakeConfig::new(Style::Gemini).stream_gap(Duration::from_millis(5)))
            .await
            .unwrap();
    fake.require_credential("x-goog-api-key", PROVIDER_KEY);
    let generate = "/v1beta/models/gemini-2.0-flash:generateContent";
    fake.script(
        generate,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Millis(50)),
        }],
    );
    let side = start(&config_text(
        &[("gemini", "gemini", &fake.url(""), "x-goog-api-key")],
        "",
    ))
    .await;
    let body = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":64}}"#;
    let r = client()
        .post(format!("{}/gemini{generate}", side.url))
        .bearer_auth(AGENT_TOKEN)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["x-sluice-attempts"],
        "2",
        "a read is sent again"
    );
    let answer: serde_json::Value = r.json().await.unwrap();
    assert!(
        answer["usageMetadata"]["promptTokenCount"].is_u64(),
        "{answer}"
    );

    let stream = "/v1beta/models/gemini-2.0-flash:streamGenerateContent";
    let r = client()
        .post(format!("{}/gemini{stream}?alt=sse", side.url))
        .bearer_auth(AGENT_TOKEN)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = r.text().await.unwrap();
    assert!(text.ends_with("\r\n\r\n"), "{text:?}");
    assert!(text.contains("\"finishReason\":\"STOP\""), "{text}");
    assert_eq!(fake.attempts_on(stream), 1);
    assert_eq!(fake.attempts()[2].stream, Some(true));
}

/// Bedrock through the sidecar, as an AWS SDK calls it: the agent's request carries the
/// SDK's own SigV4 signature (made with whatever keys the agent has) and its sluice token in
/// `x-sluice-token`; the sidecar drops the signature and signs each attempt with the keys it
/// is configured with, which the fake checks as AWS does. A stream that breaks after it began
/// ends with an exception message in the stream's own binary framing, as an AWS SDK reads a
/// stream's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bedrock_call_through_the_sidecar_is_signed_with_its_keys_and_a_broken_stream_ends_in_an_exception_message()
 {
    use sluice_fake_provider::sigv4::AwsAccount;

    let fake =
        FakeProvider::start(FakeConfig::new(Style::Bedrock).stream_gap(Duration::from_millis(5)))
            .await
            .unwrap();
    fake.require_sigv4(AwsAccount::new(
        "AKIDSIDECAR",
        "sidecar/secret",
        "eu-central-1",
    ));
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("credentials");
    std::fs::write(
        &file,
        "[default]\naws_access_key_id = AKIDSIDECAR\naws_secret_access_key = sidecar/secret\n",
    )
    .unwrap();
    let text = format!(
        "[providers.bedrock]\nplugin = \"bedrock\"\nbase_url = \"{}\"\n\
         [providers.bedrock.credentials.team.sigv4]\nregion = \"eu-central-1\"\nfile = \"{}\"\n\
         [providers.bedrock.limits]\nrequests_per_minute = 6000\n{}",
        fake.url(""),
        file.display(),
        config_text(&[], "")
    );
    let side = start(&text).await;
    let model = "anthropic.claude-3-5-sonnet-20240620-v1%3A0";
    let body = r#"{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":64}}"#;
    let send = |path: String| {
        client()
            .post(format!("{}/bedrock{path}", side.url))
            .header("x-sluice-token", AGENT_TOKEN)
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDAGENT/20261206/eu-central-1/bedrock/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date, Signature=0123",
            )
            .header("x-amz-date", "20261206T000000Z")
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = send(format!("/model/{model}/converse")).await.unwrap();
    assert_eq!(r.status(), 200);
    let answer: serde_json::Value = r.json().await.unwrap();
    assert!(answer["usage"]["inputTokens"].is_u64(), "{answer}");
    assert_eq!((fake.answered(200), fake.answered(403)), (1, 0));

    let stream = format!("/model/{model}/converse-stream");
    fake.script(&stream, [Fault::CutStream { after_events: 3 }]);
    let r = send(stream.clone()).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"],
        "application/vnd.amazon.eventstream"
    );
    let bytes = r.bytes().await.unwrap();
    // The messages the provider sent, then sluice's: an exception, whose total length and
    // CRC-32 frame it as the provider's own are framed.
    let mut at = 0;
    let mut last = &bytes[..0];
    while at + 12 <= bytes.len() {
        let total = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        last = &bytes[at..at + total];
        at += total;
    }
    assert_eq!(at, bytes.len(), "whole messages only");
    let text = String::from_utf8_lossy(last);
    assert!(
        text.contains(":message-type\x07\x00\x09exception")
            && text.contains("internalServerException")
            && text.contains("stream_broken"),
        "{text:?}"
    );
    assert_eq!(fake.answered(403), 0);
}
