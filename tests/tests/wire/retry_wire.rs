//! The retry engine at the wire: every claim here is checked against what the fake provider
//! received — attempts, their instants, their idempotency keys — not against the host's own
//! counters. These tests run on real time (the fake provider and the host share a loopback
//! socket), with waits of a few seconds at most, but for the 10-second `Retry-After`.

use std::sync::Arc;
use std::time::Duration;

use sluice::clock::{Clock, TokioClock};
use sluice::contract::RequestClass;
use sluice::execute::{Call, NextAction, Outcome, Reason, Terminal};
use sluice::retry::{RetryConfig, Stop};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::executor;

const CHAT: &str = "/v1/chat/completions";

fn call(fake: &FakeProvider, provider: &str, path: &str, class: RequestClass) -> Call {
    let method = if class == RequestClass::Read {
        "GET"
    } else {
        "POST"
    };
    Call::new(provider, method, fake.url(path))
        .credential("team-key")
        .tenant("t")
        .class(class)
        .header("content-type", "application/json")
        .body(br#"{"model":"gpt-4o","max_tokens":16}"#.to_vec())
}

/// A fake provider of `style` with no limits of its own.
async fn fake(style: Style) -> FakeProvider {
    FakeProvider::start(FakeConfig::new(style)).await.unwrap()
}

/// A 429 that asks for `ms` milliseconds.
fn limited(ms: u64) -> Fault {
    Fault::RateLimited {
        retry_after: Some(RetryAfter::Millis(ms)),
    }
}

fn ended(o: Outcome) -> Terminal {
    match o {
        Outcome::Ended(t) => *t,
        Outcome::Succeeded { .. } => panic!("expected a terminal outcome"),
    }
}

fn fast_retry() -> RetryConfig {
    RetryConfig {
        backoff_base_ms: 200,
        backoff_cap_ms: 2_000,
        ..RetryConfig::default()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_429_holds_the_whole_scope_and_the_retries_are_spread_by_jitter() {
    let fake = fake(Style::OpenAi).await;
    let ten = Some(RetryAfter::Seconds(10));
    fake.script(CHAT, [Fault::RateLimited { retry_after: ten }; 1]);
    let ex = executor("openai", fast_retry(), Duration::from_secs(5));
    let c = call(&fake, "openai", CHAT, RequestClass::Read);
    // The first worker meets the 429; two more of the same scope start just after it.
    let first = ex.execute(&c);
    let later = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        tokio::join!(ex.execute(&c), ex.execute(&c))
    };
    let (a, (b, d)) = tokio::join!(first, later);
    for o in [a, b, d] {
        assert!(matches!(o, Outcome::Succeeded { .. }), "{o:?}");
    }
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 4, "three calls, one retry: {attempts:?}");
    let limited = attempts[0].at;
    assert_eq!(attempts[0].status, Some(429));
    for a in &attempts[1..] {
        assert!(
            a.at >= limited + Duration::from_secs(10),
            "an attempt {:?} after the 429, inside its Retry-After: 10",
            a.at - limited
        );
    }
    // Not one wave: the admitted attempts after the hold are spread out.
    let spread = attempts[3].at - attempts[1].at;
    assert!(spread >= Duration::from_millis(50), "{spread:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_503_is_honoured_without_slowing_the_scope() {
    let fake = fake(Style::OpenAi).await;
    fake.script(
        "/a",
        [Fault::Unavailable {
            retry_after: Some(RetryAfter::Seconds(1)),
        }],
    );
    let ex = executor("openai", fast_retry(), Duration::from_secs(5));
    let a = call(&fake, "openai", "/a", RequestClass::Read);
    let b = call(&fake, "openai", "/b", RequestClass::Read);
    let other = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        ex.execute(&b).await
    };
    let (ra, rb) = tokio::join!(ex.execute(&a), other);
    assert!(
        matches!(ra, Outcome::Succeeded { attempts: 2, .. }),
        "{ra:?}"
    );
    assert!(
        matches!(rb, Outcome::Succeeded { attempts: 1, .. }),
        "{rb:?}"
    );
    let log = fake.attempts();
    let first_a = log.iter().find(|x| x.path == "/a").unwrap().at;
    let retry_a = log.iter().filter(|x| x.path == "/a").nth(1).unwrap().at;
    let on_b = log.iter().find(|x| x.path == "/b").unwrap().at;
    assert!(
        retry_a - first_a >= Duration::from_secs(1),
        "Retry-After: 1 honoured"
    );
    assert!(
        on_b - first_a < Duration::from_millis(900),
        "the scope was not held: {:?}",
        on_b - first_a
    );
}

#[tokio::test(flavor = "current_thread")]
async fn client_errors_are_sent_once_and_a_repeated_one_trips_the_breaker() {
    let fake = fake(Style::OpenAi).await;
    for (path, status, code) in [
        ("/401", 401, "invalid_api_key"),
        ("/403", 403, "forbidden"),
        ("/404", 404, "not_found"),
        ("/422", 422, "invalid_request"),
    ] {
        fake.script(path, [Fault::Status { status, code }]);
        let ex = executor("openai", fast_retry(), Duration::from_secs(5));
        let t = ended(
            ex.execute(&call(&fake, "openai", path, RequestClass::Read))
                .await,
        );
        assert_eq!(t.reason, Reason::Stopped(Stop::NeverRetry), "{path}");
        assert_eq!((t.attempts, t.last_status), (1, Some(status)));
        assert_eq!(fake.attempts_on(path), 1, "{path} attempted once");
        let want = if status == 401 || status == 403 {
            NextAction::Reauthenticate
        } else {
            NextAction::FixRequest
        };
        assert_eq!(t.next_action, want, "{path}");
    }

    let retry = RetryConfig {
        breaker_threshold: 3,
        ..fast_retry()
    };
    let ex = executor("openai", retry, Duration::from_secs(5));
    fake.script(
        "/v1/models/gpt-x",
        [Fault::Status {
            status: 404,
            code: "model_not_found",
        }; 5],
    );
    let c = call(&fake, "openai", "/v1/models/gpt-x", RequestClass::Read);
    for _ in 0..3 {
        assert_eq!(
            ended(ex.execute(&c).await).reason,
            Reason::Stopped(Stop::NeverRetry)
        );
    }
    for _ in 0..2 {
        let t = ended(ex.execute(&c).await);
        assert!(matches!(t.reason, Reason::BreakerOpen(_)), "{t:?}");
        assert!(!t.sent);
    }
    assert_eq!(
        fake.attempts_on("/v1/models/gpt-x"),
        3,
        "the breaker stopped the path"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_read_that_keeps_getting_429_stops_at_its_budget() {
    let fake = fake(Style::OpenAi).await;
    fake.script(CHAT, [limited(300); 10]);
    let ex = executor("openai", fast_retry(), Duration::from_secs(5));
    let t = ended(
        ex.execute(&call(&fake, "openai", CHAT, RequestClass::Read))
            .await,
    );
    assert_eq!(t.reason, Reason::Stopped(Stop::AttemptsExhausted));
    assert_eq!(t.attempts, 4, "read: four attempts");
    assert_eq!(fake.attempts_on(CHAT), 4, "the provider saw four");
    assert!(t.sent && t.response_received);
    assert_eq!(t.last_status, Some(429));
    assert!(t.waited >= Duration::from_millis(900), "{:?}", t.waited);
    assert!(matches!(t.next_action, NextAction::RetryLater(_)));
}

#[tokio::test(flavor = "current_thread")]
async fn ten_calls_retrying_on_one_scope_never_exceed_its_delayed_bound() {
    let fake = fake(Style::OpenAi).await;
    fake.script(CHAT, [limited(400); 30]);
    let retry = RetryConfig {
        max_delayed_requests: 3,
        ..fast_retry()
    };
    let ex = Arc::new(executor("openai", retry, Duration::from_secs(5)));
    let c = call(&fake, "openai", CHAT, RequestClass::Read);
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let (ex, c) = (ex.clone(), c.clone());
        set.spawn(async move { ex.execute(&c).await });
    }
    let calls = set.join_all();
    let watch = async {
        let mut most = 0;
        for _ in 0..400 {
            most = most.max(ex.delayed("openai", "team-key"));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        most
    };
    let (outcomes, most) = tokio::join!(calls, watch);
    assert!(most <= 3, "{most} calls waiting to retry at once");
    let full = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Ended(t) if matches!(t.reason, Reason::ScopeRetriesFull { .. })))
        .count();
    assert!(full >= 1, "the bound turned calls away: {outcomes:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_that_times_out_after_it_was_sent_is_not_resent() {
    let fake = fake(Style::Stripe).await;
    fake.script("/v1/charges", [Fault::Hang]);
    let ex = executor("stripe", fast_retry(), Duration::from_millis(400));
    let mut c = call(
        &fake,
        "stripe",
        "/v1/charges",
        RequestClass::IdempotentWrite,
    );
    c.headers
        .push(("idempotency-key".into(), "charge-7".into()));
    let t = ended(ex.execute(&c).await);
    assert_eq!(t.reason, Reason::Stopped(Stop::OutcomeUnknown), "{t:?}");
    assert_eq!(t.next_action, NextAction::Reconcile);
    assert!(t.sent && !t.response_received);
    assert_eq!(fake.attempts_with_key("charge-7"), 1, "never resent");

    // The same with the write stored and the connection dropped.
    fake.script("/v1/charges", [Fault::StoreThenDrop]);
    c.headers.pop();
    c.headers
        .push(("idempotency-key".into(), "charge-8".into()));
    let t = ended(ex.execute(&c).await);
    assert_eq!(t.reason, Reason::Stopped(Stop::OutcomeUnknown), "{t:?}");
    assert_eq!(fake.attempts_with_key("charge-8"), 1);
    assert_eq!(fake.stored().len(), 1, "one charge, not two");
}

#[tokio::test(flavor = "current_thread")]
async fn odd_retry_after_values_never_make_a_tight_loop() {
    let fake = fake(Style::OpenAi).await;
    let ex = executor("openai", fast_retry(), Duration::from_secs(5));
    // A date in the past, a negative number, junk: each waits at least a second (the
    // plugin's floor for a past instant) or a backoff window, never nothing.
    for (path, ra) in [
        ("/past", RetryAfter::Date(-30)),
        ("/negative", RetryAfter::Raw("-5")),
        ("/junk", RetryAfter::Raw("soon-ish")),
    ] {
        fake.script(
            path,
            [Fault::RateLimited {
                retry_after: Some(ra),
            }],
        );
        let o = ex
            .execute(&call(&fake, "openai", path, RequestClass::Read))
            .await;
        assert!(
            matches!(o, Outcome::Succeeded { attempts: 2, .. }),
            "{path}: {o:?}"
        );
        let on: Vec<_> = fake
            .attempts()
            .into_iter()
            .filter(|a| a.path == path)
            .collect();
        let gap = on[1].at - on[0].at;
        assert!(
            gap >= Duration::from_millis(200),
            "{path}: retried after {gap:?}"
        );
    }
    // A huge wait is beyond the read's 90 s budget: the call ends at once instead of sleeping.
    fake.script(
        "/huge",
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Raw("99999999999")),
        }],
    );
    let before = fake.attempts().len();
    let t = ended(
        ex.execute(&call(&fake, "openai", "/huge", RequestClass::Read))
            .await,
    );
    assert!(
        matches!(t.reason, Reason::Stopped(Stop::WaitBudgetExhausted { .. })),
        "{t:?}"
    );
    assert_eq!(fake.attempts().len(), before + 1);
    // Its wait is its time in the queue alone: it never slept for a retry.
    assert!(t.waited < Duration::from_millis(100), "{:?}", t.waited);
}

#[tokio::test(flavor = "current_thread")]
async fn a_tasks_budget_counts_every_attempt_of_all_its_calls() {
    let fake = fake(Style::OpenAi).await;
    fake.script(CHAT, [Fault::Unavailable { retry_after: None }; 3]);
    let retry = RetryConfig {
        task_max_attempts: 4,
        ..fast_retry()
    };
    let ex = executor("openai", retry, Duration::from_secs(5));
    let mut c = call(&fake, "openai", CHAT, RequestClass::Read);
    c.task = Some(sluice::admission::TaskId(9));
    // The first call spends four attempts (three 503s, then a success); the second has none.
    assert!(matches!(
        ex.execute(&c).await,
        Outcome::Succeeded { attempts: 4, .. }
    ));
    let t = ended(ex.execute(&c).await);
    assert_eq!(t.reason, Reason::TaskBudgetExhausted { max_attempts: 4 });
    assert_eq!((t.attempts, t.sent), (0, false));
    assert_eq!(fake.attempts_on(CHAT), 4);
    ex.forget_task(sluice::admission::TaskId(9));
    assert!(matches!(ex.execute(&c).await, Outcome::Succeeded { .. }));
}

#[tokio::test(flavor = "current_thread")]
async fn rate_limits_slow_the_scope_but_never_trip_the_breaker() {
    let fake = fake(Style::OpenAi).await;
    fake.script(CHAT, [limited(100); 6]);
    let retry = RetryConfig {
        breaker_threshold: 2,
        ..fast_retry()
    };
    let ex = executor("openai", retry, Duration::from_secs(5));
    let c = call(&fake, "openai", CHAT, RequestClass::Read);
    let t = ended(ex.execute(&c).await);
    assert_eq!(t.reason, Reason::Stopped(Stop::AttemptsExhausted));
    // Two more 429s, then a success: the path was never closed.
    let o = ex.execute(&c).await;
    assert!(matches!(o, Outcome::Succeeded { attempts: 3, .. }), "{o:?}");
    assert_eq!(fake.attempts_on(CHAT), 7);
}

/// Issue 26: a call with a 500 ms deadline was answered 200 after 3 s — the deadline bounded
/// the wait, not the attempt in flight. Past its deadline an attempt is dropped: a read ends
/// then, unanswered, and a write is left to reconciliation, never answered late as success.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_deadline_bounds_the_attempt_in_flight() {
    let fake = fake(Style::Stripe).await;
    fake.script("/v1/things", [Fault::Slow(Duration::from_secs(3))]);
    let ex = executor("stripe", fast_retry(), Duration::from_secs(30));
    let started = TokioClock.now();
    let read = call(&fake, "stripe", "/v1/things", RequestClass::Read)
        .deadline(Duration::from_millis(500));
    let t = ended(ex.execute(&read).await);
    let took = TokioClock.now() - started;
    assert!(took < Duration::from_secs(1), "ended after {took:?}: {t:?}");
    assert!(t.sent && !t.response_received, "{t:?}");
    assert!(
        matches!(t.reason, Reason::Stopped(Stop::DeadlinePassed { .. })),
        "{t:?}"
    );
    assert!(
        t.transport_error
            .as_deref()
            .is_some_and(|e| e.contains("deadline passed")),
        "{t:?}"
    );
    assert_eq!(fake.attempts_on("/v1/things"), 1);

    // A write past its deadline may have happened: it is the reconciler's, not a success.
    fake.script("/v1/charges", [Fault::Slow(Duration::from_secs(3))]);
    let mut write = call(
        &fake,
        "stripe",
        "/v1/charges",
        RequestClass::IdempotentWrite,
    )
    .deadline(Duration::from_millis(500));
    write
        .headers
        .push(("idempotency-key".into(), "charge-9".into()));
    let t = ended(ex.execute(&write).await);
    assert_eq!(t.next_action, NextAction::Reconcile, "{t:?}");
    assert_eq!(fake.attempts_with_key("charge-9"), 1, "never resent");
}

/// A tenant whose own deadlines are shorter than the provider's answers has each attempt
/// cut by its deadline. Each cut is that tenant's failure, not the path's: its own breaker
/// opens, and another tenant of the same key and route is answered throughout.
#[tokio::test(flavor = "current_thread")]
async fn attempts_cut_by_a_tenants_own_deadline_never_open_the_breaker_others_share() {
    let fake = fake(Style::OpenAi).await;
    fake.script(CHAT, [Fault::Slow(Duration::from_millis(200)); 6]);
    let retry = RetryConfig {
        breaker_threshold: 3,
        ..fast_retry()
    };
    let ex = executor("openai", retry, Duration::from_secs(5));
    let hurried = call(&fake, "openai", CHAT, RequestClass::Read)
        .tenant("hurried")
        .deadline(Duration::from_millis(50));
    let mut cut = 0;
    let mut refused_by_its_own = 0;
    for _ in 0..6 {
        let t = ended(ex.execute(&hurried).await);
        match t.reason {
            Reason::BreakerOpen(open) => {
                assert!(open.route.contains("tenant=hurried"), "{open:?}");
                refused_by_its_own += 1;
            }
            _ => cut += 1,
        }
    }
    assert!(cut >= 3, "its attempts were cut: {cut}");
    assert!(refused_by_its_own >= 1, "its own breaker opened");
    // The steady tenant, on the same key and route: answered, every call.
    let steady = call(&fake, "openai", CHAT, RequestClass::Read).tenant("steady");
    for i in 0..5 {
        let o = ex.execute(&steady).await;
        assert!(matches!(o, Outcome::Succeeded { .. }), "call {i}: {o:?}");
    }
}
