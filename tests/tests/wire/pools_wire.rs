//! A pool with an Azure OpenAI deployment among its members, at the wire: the deployment's
//! calls go to its own path with its `api-key` header (the fake refuses anything else), its
//! 429 with `retry-after-ms` holds it alone and the read goes on with the other member at
//! once, and it takes calls again when the hold ends.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sluice::clock::{Clock, TokioClock};
use sluice::config::SluiceConfig;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{builder, transport};

/// The provider's base URL: nothing listens there.
const BASE: &str = "http://127.0.0.1:9";
const DEPLOYMENT: &str = "/openai/deployments/gpt-4o/chat/completions";
const CHAT: &str = "/v1/chat/completions";

/// The two members' providers: an Azure deployment that takes only its `api-key`, and the
/// team's project key that takes only its bearer token (each answers 401 to anything else).
async fn fakes() -> (FakeProvider, FakeProvider) {
    let azure = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    azure.require_credential("api-key", "az-secret");
    let team = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    team.require_credential("authorization", "Bearer team-secret");
    (azure, team)
}

fn host(azure: &FakeProvider, team: &FakeProvider) -> sluice::Sluice {
    let text = format!(
        "[providers.openai]\nplugin = \"openai\"\nbase_url = \"{BASE}\"\n\
         [providers.openai.limits]\nrequests_per_minute = 6000\n\
         [providers.openai.credentials.azure]\nenv = \"SLUICE_TEST_UNUSED_KEY\"\n\
         header = \"api-key\"\nbase_url = \"{}\"\n\
         path = \"/openai/deployments/gpt-4o/{{path}}?api-version=2024-10-21\"\n\
         [providers.openai.credentials.team]\nenv = \"SLUICE_TEST_UNUSED_KEY\"\nbase_url = \"{}\"\n\
         [providers.openai.pools.gpt]\nmembers = [\"azure\", \"team\"]\n",
        azure.url(""),
        team.url("")
    );
    built(&text, quick_retries())
}

/// Retries after 10–20 ms, so that a test does not wait on backoff.
fn quick_retries() -> RetryConfig {
    RetryConfig {
        backoff_base_ms: 10,
        backoff_cap_ms: 20,
        ..RetryConfig::default()
    }
}

/// A host of the configuration `text` with `retry`: the member `azure` sends its `api-key`,
/// every other its bearer token.
fn built(text: &str, retry: RetryConfig) -> sluice::Sluice {
    let mut config = SluiceConfig::from_toml(text, Path::new(".")).expect("the configuration");
    config.retry = retry.clone();
    builder("openai", "", retry, transport(Duration::from_secs(5)))
        .config(config)
        .credentials(Arc::new(|_: &str, label: &str| match label {
            "azure" => vec![("api-key".to_owned(), "az-secret".to_owned())],
            _ => vec![("authorization".to_owned(), "Bearer team-secret".to_owned())],
        }))
        .build()
        .expect("a host")
}

fn chat() -> Call {
    Call::post(
        "openai",
        format!("{BASE}{CHAT}"),
        r#"{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .pool("gpt")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json")
}

fn attempts(o: &Outcome) -> u32 {
    match o {
        Outcome::Succeeded { attempts, .. } => *attempts,
        Outcome::Ended(t) => panic!("the read failed: {t:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_azure_deployment_in_a_pool_is_called_its_own_way_and_held_alone() {
    let (azure, team) = fakes().await;
    azure.script(
        DEPLOYMENT,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Millis(1_500)),
        }],
    );
    let sluice = host(&azure, &team);

    // The first read goes with the first member, the deployment: 429, held 1.5 s; its
    // retry goes with the other member at once.
    let started = TokioClock.now();
    let first = sluice.execute(&chat()).await;
    assert_eq!(attempts(&first), 2, "{first:?}");
    let took = TokioClock.now() - started;
    assert!(
        took < Duration::from_millis(1_000),
        "the retry waited out the hold: {took:?}"
    );
    assert_eq!((azure.answered(429), team.answered(200)), (1, 1));
    // Operators see the hold on the member, and each member's calls.
    let pools = sluice.executor().admission().snapshot().pools;
    let members = &pools[0].members;
    assert_eq!((members[0].chosen, members[1].chosen), (1, 1), "{pools:?}");
    assert!(
        members[0].held.is_some() && members[1].held.is_none(),
        "{pools:?}"
    );
    // While the deployment is held, reads go with the other member, first time.
    for _ in 0..3 {
        assert_eq!(attempts(&sluice.execute(&chat()).await), 1);
    }
    assert_eq!(
        azure.attempts().len(),
        1,
        "nothing more went to the held deployment"
    );
    assert_eq!(team.answered(200), 4);
    // Its hold over, the deployment takes reads again, at its own path with its own header
    // (the fakes answer 401 to any other key, and count it).
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert_eq!(attempts(&sluice.execute(&chat()).await), 1);
    assert_eq!(azure.answered(200), 1, "the deployment is back");
    assert!(azure.attempts().iter().all(|a| a.path == DEPLOYMENT));
    assert!(team.attempts().iter().all(|a| a.path == CHAT));
    assert_eq!(azure.answered(401) + team.answered(401), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_run_straight_through_the_executor_goes_with_one_member() {
    let (azure, team) = fakes().await;
    let sluice = host(&azure, &team);
    // Not through the write engine: the executor gives it a member at its first attempt,
    // and sends it to that member's endpoint with that member's key.
    let write = Call::post("openai", format!("{BASE}/v1/files"), "purpose=batch")
        .pool("gpt")
        .tenant("acme")
        .class(RequestClass::IdempotentWrite);
    let o = sluice.execute(&write).await;
    assert!(matches!(o, Outcome::Succeeded { attempts: 1, .. }), "{o:?}");
    assert_eq!(azure.attempts().len() + team.attempts().len(), 1);
    assert_eq!(azure.answered(401) + team.answered(401), 0);
    // A pool the provider does not have: refused before anything is sent, naming it.
    let o = sluice.execute(&chat().pool("gpt-5")).await;
    let Outcome::Ended(end) = &o else {
        panic!("an unknown pool ends the call: {o:?}")
    };
    let why = end.reason.to_string();
    assert!(
        !end.sent && why.contains("`gpt-5`") && why.contains("pools"),
        "{why}"
    );
}

/// Two members of one pool, each its own provider with its own pace: `fast` admits a
/// request every 0.1 s, `slow` one a second (at a margin of 1, a burst of one request);
/// one 503 in a row opens a member's breaker.
fn paced(fast: &FakeProvider, slow: &FakeProvider) -> sluice::Sluice {
    let text = format!(
        "[providers.openai]\nplugin = \"openai\"\nbase_url = \"{BASE}\"\nmargin = 1.0\n\
         [providers.openai.limits]\nrequests_per_minute = 6000\n\
         [providers.openai.credentials.fast]\nenv = \"SLUICE_TEST_UNUSED_KEY\"\nbase_url = \"{}\"\n\
         [providers.openai.credentials.fast.limits]\nrequests_per_minute = 600\n\
         [providers.openai.credentials.slow]\nenv = \"SLUICE_TEST_UNUSED_KEY\"\nbase_url = \"{}\"\n\
         [providers.openai.credentials.slow.limits]\nrequests_per_minute = 60\n\
         [providers.openai.pools.gpt]\nmembers = [\"fast\", \"slow\"]\n",
        fast.url(""),
        slow.url("")
    );
    let retry = RetryConfig {
        breaker_threshold: 1,
        breaker_open_ms: 60_000,
        ..quick_retries()
    };
    built(&text, retry)
}

/// A read queued on a member whose breaker opens while it waits for its turn there (another
/// read's 503 on that member opened it) goes with another member, unsent to the broken one:
/// the caller sees an answer, not the breaker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_whose_member_breaks_while_it_waits_goes_with_another() {
    let (fast, slow) = (
        FakeProvider::start(FakeConfig::new(Style::OpenAi))
            .await
            .expect("fake"),
        FakeProvider::start(FakeConfig::new(Style::OpenAi))
            .await
            .expect("fake"),
    );
    let sluice = Arc::new(paced(&fast, &slow));
    // Each member's first request spent: `fast` admits again in ~0.1 s, `slow` in ~1 s.
    for _ in 0..2 {
        assert_eq!(attempts(&sluice.execute(&chat()).await), 1);
    }
    assert_eq!((fast.answered(200), slow.answered(200)), (1, 1));
    // The next read waits for `fast` and is answered 503 there, which opens its breaker; a
    // read queued behind it, on `fast` too (sooner than `slow`), finds it open at its turn.
    fast.script(CHAT, [Fault::Unavailable { retry_after: None }]);
    let failing = tokio::spawn({
        let sluice = sluice.clone();
        async move { sluice.execute(&chat()).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    let behind = sluice.execute(&chat()).await;
    assert_eq!(attempts(&behind), 1, "{behind:?}");
    let failed_once = failing.await.expect("the first read's task");
    assert_eq!(attempts(&failed_once), 2, "{failed_once:?}");
    // `fast` saw its first read and the one it failed, nothing after its breaker opened;
    // both reads were answered by `slow`.
    assert_eq!(fast.attempts().len(), 2);
    assert_eq!((fast.answered(503), slow.answered(200)), (1, 3));
}
