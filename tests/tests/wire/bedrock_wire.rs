//! Amazon Bedrock at the wire, through the bundled plugin and a fake that answers as AWS does
//! and checks every request's SigV4 signature as AWS checks it: the model in the path, errors
//! typed by `x-amzn-errortype`, and streams of binary event-stream messages that end with a
//! `metadata` event carrying the usage.

use std::sync::Arc;
use std::time::Duration;

use sluice::contract::RequestClass;
use sluice::credentials::{CredentialSource, Keyring, SigV4Source};
use sluice::execute::{Call, Executor, Outcome, Reason};
use sluice::retry::{RetryConfig, Stop};
use sluice_fake_provider::sigv4::AwsAccount;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::{builder, long_stream, transport};

const MODEL: &str = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const KEY_ID: &str = "AKIDSLUICETEST";
const SECRET: &str = "sluice/test/secret+key";
const REGION: &str = "us-west-2";

/// A fake Bedrock that takes only requests signed with the test's keys, within `skew` of
/// its clock.
async fn bedrock(skew: Duration) -> FakeProvider {
    let fake =
        FakeProvider::start(FakeConfig::new(Style::Bedrock).stream_gap(Duration::from_millis(2)))
            .await
            .unwrap();
    fake.require_sigv4(AwsAccount {
        max_skew: skew,
        ..AwsAccount::new(KEY_ID, SECRET, REGION)
    });
    fake
}

/// An executor whose `team-key` credential signs with the test's keys, read from an AWS
/// shared credentials file, under the admission configuration `admission`.
fn executor(admission: &str, dir: &std::path::Path) -> Arc<Executor> {
    let file = dir.join("credentials");
    std::fs::write(
        &file,
        format!("[bedrock]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n"),
    )
    .unwrap();
    let mut keyring = Keyring::new();
    keyring.insert(
        "bedrock",
        "team-key",
        CredentialSource::sigv4(SigV4Source {
            file: Some(file),
            profile: Some("bedrock".into()),
            ..SigV4Source::env(REGION)
        }),
    );
    let sluice = builder(
        "bedrock",
        admission,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    )
    .credentials(Arc::new(keyring))
    .state_dir(dir.join("state"))
    .build()
    .expect("a host");
    sluice.executor().clone()
}

/// The path of a Converse call of `MODEL`, as the AWS SDKs send it (`:` encoded).
fn route(stream: bool) -> String {
    let model = MODEL.replace(':', "%3A");
    if stream {
        format!("/model/{model}/converse-stream")
    } else {
        format!("/model/{model}/converse")
    }
}

/// A Converse call of `MODEL`, streamed or not, that may write `max_tokens`.
fn converse(fake: &FakeProvider, stream: bool, max_tokens: u64) -> Call {
    let path = route(stream);
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": [{"text": "Write a long story about a lighthouse."}]}],
        "system": [{"text": "You are a storyteller."}],
        "inferenceConfig": {"maxTokens": max_tokens},
    });
    Call::post("bedrock", fake.url(&path), body.to_string())
        .credential("team-key")
        .tenant("acme")
        .class(RequestClass::Read)
        .header("content-type", "application/json")
}

const LIMITS: &str = "[providers.bedrock.limits]\nrequests_per_minute = 600\n";

#[tokio::test(flavor = "current_thread")]
async fn a_call_is_signed_by_the_host_and_accepted_by_a_fake_that_checks_sigv4() {
    let fake = bedrock(Duration::from_secs(300)).await;
    let dir = tempfile::tempdir().unwrap();
    let ex = executor(LIMITS, dir.path());

    let done = ex.execute(&converse(&fake, false, 100)).await;
    let Outcome::Succeeded { response, .. } = &done else {
        panic!("{done:?}");
    };
    assert_eq!(response.status, 200);
    // A caller's own signature — stale, another account's — is dropped, not sent beside
    // sluice's.
    let stale = converse(&fake, false, 100)
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDOTHER/20200101/us-east-1/bedrock/aws4_request, \
             SignedHeaders=host;x-amz-date, Signature=00",
        )
        .header("x-amz-date", "20200101T000000Z");
    let done = ex.execute(&stale).await;
    assert!(matches!(done, Outcome::Succeeded { .. }), "{done:?}");
    assert_eq!(fake.answered(200), 2);
    assert_eq!(fake.answered(403), 0);

    // Keys the provider does not know are refused, and the refusal is not retried.
    let other = bedrock(Duration::from_secs(300)).await;
    other.require_sigv4(AwsAccount::new("AKIDSOMEONEELSE", SECRET, REGION));
    let done = ex.execute(&converse(&other, false, 100)).await;
    let Outcome::Ended(t) = &done else {
        panic!("{done:?}");
    };
    assert_eq!(t.last_status, Some(403), "{t:?}");
    assert_eq!(other.attempts().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_that_waited_in_the_queue_is_signed_when_it_is_sent() {
    // The fake takes signatures no more than 2 s old; the second call waits about 3 s in
    // sluice's queue behind the first (one request at a time), so a signature made when it
    // was queued would be refused.
    let fake = bedrock(Duration::from_secs(2)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = "[providers.bedrock.limits]\nrequests_per_minute = 600\nconcurrent_requests = 1\n";
    let ex = executor(config, dir.path());
    let first = converse(&fake, false, 100);
    fake.script(&route(false), [Fault::Slow(Duration::from_secs(3))]);
    let (a, b) = tokio::join!(ex.execute(&first), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        ex.execute(&converse(&fake, false, 100)).await
    });
    assert!(matches!(a, Outcome::Succeeded { .. }), "{a:?}");
    assert!(matches!(b, Outcome::Succeeded { .. }), "{b:?}");
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(
        attempts[1].at - attempts[0].at >= Duration::from_millis(2_500),
        "the second waited for the first: {attempts:?}"
    );
    assert_eq!(fake.answered(403), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_bedrock_stream_over_64_kib_is_charged_the_usage_of_its_metadata_event() {
    let fake = bedrock(Duration::from_secs(300)).await;
    let dir = tempfile::tempdir().unwrap();
    let ex = executor(LIMITS, dir.path());

    // Longer than the first and last bytes the host keeps of it: its ends were joined where
    // an event-stream message ends.
    let (body, usage) = long_stream(&ex, &converse(&fake, true, 200_000)).await;
    assert!(
        !body.windows(2).any(|w| w == b"\n\n"),
        "binary framing, no SSE"
    );
    let attempt = &fake.attempts()[0];
    assert!(attempt.output_tokens > 16_000, "{attempt:?}");
    assert_eq!(usage.output_tokens, attempt.output_tokens, "{usage:?}");
    assert_eq!(usage.input_tokens, attempt.input_tokens, "{usage:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_throttled_call_is_sent_again_and_a_spent_service_quota_is_not_a_bad_request() {
    let fake = bedrock(Duration::from_secs(300)).await;
    let dir = tempfile::tempdir().unwrap();
    let ex = executor(LIMITS, dir.path());
    let call = converse(&fake, false, 100);
    fake.script(&route(false), [Fault::RateLimited { retry_after: None }]);
    let done = ex.execute(&call).await;
    assert!(matches!(done, Outcome::Succeeded { .. }), "{done:?}");
    assert_eq!((fake.answered(429), fake.attempts().len()), (1, 2));

    fake.script(
        &route(false),
        [Fault::Status {
            status: 400,
            code: "ServiceQuotaExceededException",
        }],
    );
    let mut held = call.clone();
    held.deadline = Some(Duration::from_secs(2));
    let Outcome::Ended(t) = ex.execute(&held).await else {
        panic!("the quota is spent");
    };
    assert!(
        matches!(t.reason, Reason::Stopped(Stop::QuotaExhausted { .. })),
        "{:?}",
        t.reason
    );
    assert_eq!(fake.attempts().len(), 3);
}
