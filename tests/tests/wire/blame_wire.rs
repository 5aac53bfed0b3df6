//! Whose it is, at the wire: what an agent can cause counts against its own tenant, and a
//! protection shared by a credential's tenants trips only on evidence about the credential.
//! A call its caller abandons counts on no breaker and keeps no charge for what it never
//! sent; a request's own 4xx counts on its tenant's breaker, never the credential's; and
//! one tenant's retry storm leaves another tenant its share of the places for delayed
//! retries. Real time, against a fake provider on loopback.

use std::sync::Arc;
use std::time::Duration;

use sluice::budget::{Budget, Measure, Window};
use sluice::clock::TokioWallClock;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Executor, Outcome, Reason};
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{builder, executor, transport};
use tokio::time::{sleep, timeout};

const CHAT: &str = "/v1/chat/completions";
/// The credential's breaker path of a chat of `gpt-4o`.
const CHAT_PATH: &str = "openai team-key POST /v1/chat/completions gpt-4o";

async fn fake() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap()
}

/// A chat of `gpt-4o` on `path` by `tenant`, with the credential `team-key`.
fn chat(fake: &FakeProvider, path: &str, tenant: &str) -> Call {
    Call::post(
        "openai",
        fake.url(path),
        r#"{"model":"gpt-4o","max_tokens":16}"#,
    )
    .credential("team-key")
    .tenant(tenant)
    .class(RequestClass::Read)
    .header("content-type", "application/json")
}

/// Breakers that open after `threshold` identical failures, for `open_ms`; quick backoff.
fn retry(threshold: u32, open_ms: u64) -> RetryConfig {
    RetryConfig {
        breaker_threshold: threshold,
        breaker_open_ms: open_ms,
        backoff_base_ms: 100,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    }
}

/// Waits until `fake` has received `n` attempts on `path`.
async fn received(fake: &FakeProvider, path: &str, n: usize) {
    for _ in 0..500 {
        if fake.attempts_on(path) >= n {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("the provider received {} of {n}", fake.attempts_on(path));
}

/// Abandons `call` after `after`, as an agent hanging up does: its future is dropped.
async fn abandon(ex: &Executor, call: &Call, after: Duration) {
    let cut = timeout(after, ex.execute(call)).await;
    assert!(
        cut.is_err(),
        "the call ended before its caller left: {cut:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn calls_their_callers_abandon_mid_attempt_count_on_no_breaker() {
    let fake = fake().await;
    fake.script(CHAT, [Fault::Slow(Duration::from_secs(2)); 4]);
    let ex = executor("openai", retry(2, 30_000), Duration::from_secs(5));
    let c = chat(&fake, CHAT, "hasty");
    for _ in 0..4 {
        abandon(&ex, &c, Duration::from_millis(150)).await;
    }
    received(&fake, CHAT, 4).await;
    assert_eq!(ex.breakers(), [], "a hang-up says nothing of the path");
    let o = ex.execute(&chat(&fake, CHAT, "steady")).await;
    assert!(matches!(o, Outcome::Succeeded { attempts: 1, .. }), "{o:?}");
}

/// The half-open path's one probe was a call whose caller hung up: its answer will never be
/// read, so the next call probes at once instead of every tenant of the credential waiting
/// out another open time.
#[tokio::test(flavor = "current_thread")]
async fn a_probe_its_caller_abandons_leaves_the_path_to_the_next_call() {
    let fake = fake().await;
    let open = Duration::from_millis(1_000);
    let ex = executor("openai", retry(3, 1_000), Duration::from_secs(5));
    fake.script(
        CHAT,
        [Fault::Status {
            status: 500,
            code: "server_error",
        }; 3],
    );
    let t = ex.execute(&chat(&fake, CHAT, "a")).await;
    assert!(
        matches!(&t, Outcome::Ended(t) if matches!(t.reason, Reason::BreakerOpen(_))),
        "{t:?}"
    );
    let state = |ex: &Executor| {
        let states = ex.breakers();
        let path = states.iter().find(|b| b.route == CHAT_PATH);
        path.map(|b| (b.state, b.failures))
    };
    assert_eq!(state(&ex), Some(("open", 3)));

    sleep(open + Duration::from_millis(100)).await;
    fake.script(CHAT, [Fault::Slow(Duration::from_secs(3))]);
    abandon(&ex, &chat(&fake, CHAT, "a"), Duration::from_millis(200)).await;
    received(&fake, CHAT, 4).await;
    assert_eq!(
        state(&ex),
        Some(("half-open", 3)),
        "the probe went back, and no failure was counted"
    );
    let o = ex.execute(&chat(&fake, CHAT, "b")).await;
    assert!(matches!(o, Outcome::Succeeded { attempts: 1, .. }), "{o:?}");
    assert_eq!(state(&ex), None, "the next call's probe closed the path");
}

/// Two budgeted calls, one slot: the first is sent and hangs, the second waits in the
/// queue; both callers leave.
#[tokio::test(flavor = "current_thread")]
async fn an_abandoned_call_gives_back_its_charge_unless_an_attempt_was_sent() {
    let fake = fake().await;
    fake.script(CHAT, [Fault::Slow(Duration::from_secs(3))]);
    let config = "[budgets]\ntime_zone = \"UTC\"\n\
        [tiers.free.budgets]\nrequests_per_month = 100\n\
        [tenants]\ndefault_tier = \"free\"\n\
        [providers.openai.limits]\nrequests_per_minute = 600\nconcurrent_requests = 1\n";
    let dir = tempfile::tempdir().unwrap();
    let sluice = builder(
        "openai",
        config,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    )
    .clock(Arc::new(TokioWallClock::starting_at(1_773_100_000_000)))
    .state_dir(dir.path())
    .build()
    .expect("a host");
    let used = || {
        let budgets = sluice.executor().budgets().expect("budgets");
        let standing = budgets.standing("acme").unwrap();
        let requests = Budget::new(Measure::Requests, Window::Month);
        standing.iter().find(|s| s.budget == requests).unwrap().used
    };
    let c = chat(&fake, CHAT, "acme");
    let both = async {
        tokio::join!(sluice.execute(&c), async {
            sleep(Duration::from_millis(200)).await;
            sluice.execute(&c).await
        })
    };
    let waiting = async {
        sleep(Duration::from_millis(400)).await;
        used()
    };
    let (cut, charged) = tokio::join!(timeout(Duration::from_millis(600), both), waiting);
    assert!(cut.is_err(), "both callers left before an answer");
    assert_eq!(charged, 2, "each call was charged before it queued");
    assert_eq!(fake.attempts_on(CHAT), 1, "the second never left the queue");
    assert_eq!(
        used(),
        1,
        "the charge of the call never sent went back; the one sent keeps its estimate"
    );
}

/// A tenant's requests the provider refuses as the request's fault, each status twice in a
/// row: its own breaker opens on each route, and the credential's paths count none of it.
#[tokio::test(flavor = "current_thread")]
async fn a_request_s_own_4xx_counts_on_its_tenant_s_breaker_never_on_the_credential_s() {
    let fake = fake().await;
    let ex = executor("openai", retry(2, 30_000), Duration::from_secs(5));
    // Each on a route of its own (a number in a route is an id, and would be one route).
    let refusals = [
        (400, "invalid_request_error", "malformed"),
        (404, "model_not_found", "misspelt"),
        (409, "conflict", "conflicting"),
        (413, "request_too_large", "oversized"),
        (422, "unprocessable_entity", "unprocessable"),
    ];
    for (status, code, route) in refusals {
        let path = format!("/v1/refused/{route}");
        fake.script(&path, [Fault::Status { status, code }; 2]);
        for _ in 0..2 {
            let o = ex.execute(&chat(&fake, &path, "careless")).await;
            assert!(
                matches!(&o, Outcome::Ended(t) if t.last_status == Some(status)),
                "{status}: {o:?}"
            );
        }
        let o = ex.execute(&chat(&fake, &path, "careless")).await;
        assert!(
            matches!(&o, Outcome::Ended(t) if matches!(&t.reason,
                Reason::BreakerOpen(open) if open.route.ends_with("tenant=careless"))),
            "{status}: its own breaker refused it: {o:?}"
        );
        let o = ex.execute(&chat(&fake, &path, "careful")).await;
        assert!(matches!(o, Outcome::Succeeded { .. }), "{status}: {o:?}");
        assert_eq!(fake.attempts_on(&path), 3, "{status}");
    }
    let states = ex.breakers();
    assert_eq!(states.len(), refusals.len(), "{states:?}");
    for b in &states {
        assert!(b.route.ends_with(" tenant=careless"), "{b:?}");
        assert_eq!(b.state, "open", "{b:?}");
    }
}

/// One tenant's calls all fail and wait to retry, as many as the scope allows; another
/// tenant's call on the same credential fails once and needs a retry too. It gets its
/// share: the storm's newest waiting retry gives its place up and ends.
#[tokio::test(flavor = "current_thread")]
async fn a_retry_storm_of_one_tenant_leaves_another_its_share_of_the_delayed_places() {
    let fake = fake().await;
    let storm = Fault::Unavailable {
        retry_after: Some(RetryAfter::Seconds(2)),
    };
    fake.script("/storm", [storm; 20]);
    fake.script(
        "/calm",
        [Fault::Unavailable {
            retry_after: Some(RetryAfter::Millis(300)),
        }],
    );
    let retry = RetryConfig::from_toml(
        "max_delayed_requests = 2\nbackoff_base_ms = 100\nbackoff_cap_ms = 200\n\
         [classes.read]\nmax_attempts = 2\nmax_wait_ms = 10000\nretry_statuses = [503]\n\
         [classes.idempotent_write]\nmax_attempts = 1\nmax_wait_ms = 0\nretry_statuses = []\n\
         [classes.uncertain_write]\nmax_attempts = 1\nmax_wait_ms = 0\nretry_statuses = []\n",
    )
    .unwrap();
    let ex = executor("openai", retry, Duration::from_secs(5));
    let mut storm_calls = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let (ex, c) = (ex.clone(), chat(&fake, "/storm", "storm"));
        storm_calls.spawn(async move { ex.execute(&c).await });
    }
    let calm_call = async {
        sleep(Duration::from_millis(300)).await;
        ex.execute(&chat(&fake, "/calm", "calm")).await
    };
    let watch = async {
        let mut most = 0;
        for _ in 0..150 {
            most = most.max(ex.delayed("openai", "team-key"));
            sleep(Duration::from_millis(20)).await;
        }
        most
    };
    let (storm, calm, most) = tokio::join!(storm_calls.join_all(), calm_call, watch);
    assert!(
        matches!(calm, Outcome::Succeeded { attempts: 2, .. }),
        "the calm tenant's retry had its place: {calm:?}"
    );
    assert!(most <= 2, "{most} calls waiting to retry at once");
    let full = storm
        .iter()
        .filter(|o| matches!(o, Outcome::Ended(t) if matches!(t.reason, Reason::ScopeRetriesFull { .. })))
        .count();
    assert_eq!(
        full, 5,
        "four found the places full, one gave its place up: {storm:?}"
    );
    assert_eq!(fake.attempts_on("/storm"), 7, "one storm call retried");
    assert_eq!(fake.attempts_on("/calm"), 2);
}
