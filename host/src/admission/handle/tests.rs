//! The admission handle on tokio's paused clock: every wait is virtual, every instant exact.

use super::*;
use crate::admission::Waiting;
use crate::admission::scope::Block;
use crate::clock::{TokioClock, tokio_now};

/// 60 requests a minute at the default 0.9 margin: a burst of 7, then one every
/// 60 s / 54.
const INTERVAL: Duration = Duration::from_nanos(60_000_000_000_u64.div_ceil(54));
const BURST: usize = 7;

fn admission(toml: &str) -> Admission {
    let config = Config::from_toml(toml).unwrap();
    Admission::new(config, Arc::new(TokioClock)).unwrap()
}

fn rate_limited() -> Admission {
    admission("[providers.p.limits]\nrequests_per_minute = 60\n")
}

fn one_slot() -> Admission {
    admission("[providers.p.limits]\nconcurrent_requests = 1\n")
}

fn call(credential: &str) -> Acquire {
    Acquire::new("p", credential)
}

fn driver_deliveries(a: &Admission) -> u64 {
    a.shared.lock().driver_deliveries
}

fn queued(a: &Admission) -> u32 {
    a.with_scheduler(|s| s.queued())
}

fn in_flight(a: &Admission) -> usize {
    a.with_scheduler(|s| s.in_flight())
}

/// Lets spawned tasks run without moving the paused clock.
async fn settle_tasks() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

/// The permits of a whole burst, taken at once.
fn drain_burst(a: &Admission, credential: &str) -> Vec<Permit> {
    let mut permits = Vec::new();
    for _ in 0..BURST {
        let mut t = a.submit(call(credential)).unwrap();
        let p = decided(&mut t).expect("the burst is admitted at once");
        permits.push(p.unwrap());
    }
    permits
}

/// The ticket's outcome if it is already decided, without yielding.
fn decided(t: &mut Ticket) -> Option<Result<Permit, Refused>> {
    let waker = std::task::Waker::noop();
    match Pin::new(t).poll(&mut Context::from_waker(waker)) {
        Poll::Ready(r) => Some(r),
        Poll::Pending => None,
    }
}

#[tokio::test(start_paused = true)]
async fn an_admissible_request_is_admitted_at_once() {
    let a = rate_limited();
    let t0 = tokio_now();
    let mut ticket = a.submit(call("k")).unwrap();
    let permit = decided(&mut ticket).expect("decided at submit").unwrap();
    assert_eq!(tokio_now(), t0);
    assert_eq!(in_flight(&a), 1);
    permit.complete(Some(Usage::ONE_REQUEST));
    assert_eq!(in_flight(&a), 0);
    let permit = a.acquire(call("k")).await.unwrap();
    assert_eq!(tokio_now(), t0);
    assert_eq!(driver_deliveries(&a), 0);
    drop(permit);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_request_goes_when_its_bucket_allows_woken_by_the_driver() {
    let a = rate_limited();
    let t0 = tokio_now();
    let _burst = drain_burst(&a, "k");
    for n in 1..=3_u32 {
        let ticket = a.submit(call("k")).unwrap();
        let why = ticket.explain().unwrap();
        assert!(
            matches!(
                why.waiting,
                Waiting::Scope {
                    block: Block::Quota { .. },
                    ..
                }
            ),
            "{why}"
        );
        let permit = ticket.await.unwrap();
        let elapsed = tokio_now() - t0;
        // Tokio's timers tick in milliseconds: at most one late.
        let due = INTERVAL * n;
        assert!(
            elapsed >= due && elapsed < due + Duration::from_millis(1),
            "admission {n} at {elapsed:?}, due at {due:?}"
        );
        assert_eq!(driver_deliveries(&a), u64::from(n));
        permit.complete(None);
    }
}

#[tokio::test(start_paused = true)]
async fn a_tenant_quota_and_in_flight_limit_are_driven_too() {
    let a = admission(
        "[tiers.free]\nmax_in_flight = 7\n[tiers.free.limits]\nrequests_per_minute = 60\n\
         [tenants]\ndefault_tier = \"free\"\n",
    );
    let t0 = tokio_now();
    let burst = drain_burst(&a, "k");
    // The tenant's in-flight limit: the next waits for a permit to end.
    let next = a.submit(call("k")).unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(queued(&a), 1);
    drop(burst);
    let p = next.await.unwrap();
    assert_eq!(tokio_now() - t0, Duration::from_secs(10));
    drop(p);
    // The tenant's own quota, refilled meanwhile: a burst, then its pace.
    for _ in 1..BURST {
        a.acquire(call("k")).await.unwrap().complete(None);
    }
    assert_eq!(tokio_now() - t0, Duration::from_secs(10));
    let _p = a.acquire(call("k")).await.unwrap();
    let due = Duration::from_secs(10) + INTERVAL;
    let elapsed = tokio_now() - t0;
    assert!(
        elapsed >= due && elapsed < due + Duration::from_millis(1),
        "{elapsed:?}"
    );
    assert_eq!(driver_deliveries(&a), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_waiting_acquire_withdraws_it() {
    let a = rate_limited();
    let t0 = tokio_now();
    let _burst = drain_burst(&a, "k");
    let gave_up = tokio::time::timeout(Duration::from_millis(100), a.acquire(call("k"))).await;
    assert!(gave_up.is_err());
    assert_eq!(queued(&a), 0);
    // The withdrawn request took nothing: the next one goes at the first paced slot.
    let _p = a.acquire(call("k")).await.unwrap();
    assert!(tokio_now() - t0 < INTERVAL + Duration::from_millis(1));
    assert_eq!(in_flight(&a), BURST + 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_permit_frees_its_concurrency_slot() {
    let a = one_slot();
    let first = a.acquire(call("k")).await.unwrap();
    let second = tokio::spawn({
        let a = a.clone();
        async move { a.acquire(call("k")).await.map(|p| (p, tokio_now())) }
    });
    settle_tasks().await;
    assert_eq!(queued(&a), 1);
    assert!(!second.is_finished());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!second.is_finished());
    let released_at = tokio_now();
    drop(first);
    let (permit, admitted_at) = second.await.unwrap().unwrap();
    assert_eq!(admitted_at, released_at);
    assert_eq!(in_flight(&a), 1);
    drop(permit);
    assert_eq!(in_flight(&a), 0);
}

#[tokio::test(start_paused = true)]
async fn an_admitted_ticket_dropped_unawaited_releases_its_grant() {
    let a = one_slot();
    let first = a.acquire(call("k")).await.unwrap();
    let ticket = a.submit(call("k")).unwrap();
    first.complete(None);
    // Admitted when the slot freed, but nobody took the permit.
    assert_eq!((queued(&a), in_flight(&a)), (0, 1));
    drop(ticket);
    assert_eq!(in_flight(&a), 0);
    let _again = a.acquire(call("k")).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_task_refuses_its_waiting_requests() {
    let a = one_slot();
    let task = TaskId(7);
    let busy = a.acquire(call("k")).await.unwrap();
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let a = a.clone();
            tokio::spawn(async move { a.acquire(call("k").task(task)).await })
        })
        .collect();
    let other = a.submit(call("k").task(TaskId(8))).unwrap();
    settle_tasks().await;
    assert_eq!(queued(&a), 3);
    assert_eq!(a.cancel(task), 2);
    for w in waiting {
        assert_eq!(w.await.unwrap().unwrap_err(), Refused::Cancelled);
    }
    assert_eq!(queued(&a), 1);
    assert_eq!(a.cancel(task), 0);
    // The slot goes to the other task's request; the cancelled ones never come back.
    drop(busy);
    let p = other.await.unwrap();
    assert_eq!((queued(&a), in_flight(&a)), (0, 1));
    drop(p);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!((queued(&a), in_flight(&a)), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_request_past_its_deadline_expires() {
    let a = one_slot();
    let t0 = tokio_now();
    let _busy = a.acquire(call("k")).await.unwrap();
    let refused = a
        .acquire(call("k").tenant("acme").deadline(Duration::from_secs(2)))
        .await
        .unwrap_err();
    let elapsed = tokio_now() - t0;
    assert!(
        elapsed > Duration::from_secs(2) && elapsed <= Duration::from_millis(2_001),
        "{elapsed:?}"
    );
    let Refused::Expired(why) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(&*why.tenant, "acme");
    assert!(
        matches!(
            why.waiting,
            Waiting::Scope {
                block: Block::Concurrency { limit: 1 },
                ..
            }
        ),
        "{why}"
    );
    assert_eq!(queued(&a), 0);
}

#[tokio::test(start_paused = true)]
async fn a_hold_delays_its_scope_only() {
    let a = rate_limited();
    let t0 = tokio_now();
    let _a = drain_burst(&a, "a");
    let _b = drain_burst(&a, "b");
    let held = tokio::spawn({
        let a = a.clone();
        async move { a.acquire(call("a")).await.map(|p| (p, tokio_now())) }
    });
    let free = tokio::spawn({
        let a = a.clone();
        async move { a.acquire(call("b")).await.map(|p| (p, tokio_now())) }
    });
    settle_tasks().await;
    let key = ScopeKey::Provider {
        provider: "p".into(),
        credential: "a".into(),
        name: None,
    };
    a.hold(&key, Duration::from_secs(5), "429 Retry-After: 5");
    let (_p, at) = free.await.unwrap().unwrap();
    assert!(
        at - t0 < INTERVAL + Duration::from_millis(1),
        "{:?}",
        at - t0
    );
    let (_p, at) = held.await.unwrap().unwrap();
    let elapsed = at - t0;
    assert!(
        elapsed >= Duration::from_secs(5) && elapsed < Duration::from_millis(5_001),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hold_through_a_permit_holds_its_credential() {
    let a = rate_limited();
    let t0 = tokio_now();
    let permit = a.acquire(call("k")).await.unwrap();
    assert!(permit.hold_scope(None, Duration::from_secs(3), "429"));
    permit.complete(None);
    let _p = a.acquire(call("k")).await.unwrap();
    assert_eq!(tokio_now() - t0, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn an_observed_exhausted_quota_holds_the_scope_until_its_reset() {
    let a = admission("");
    let t0 = tokio_now();
    let permit = a.acquire(call("k")).await.unwrap();
    let exhausted = Observation {
        scope: None,
        dimension: crate::contract::ReportedDimension::Requests,
        limit: Some(100),
        remaining: Some(0),
        used: None,
        reset_after_ms: Some(1_500),
        window_ms: None,
        source: "x-ratelimit-remaining-requests".into(),
    };
    assert_eq!(permit.observe(&[exhausted]), 1);
    permit.complete(Some(Usage::ONE_REQUEST));
    let _p = a.acquire(call("k")).await.unwrap();
    assert_eq!(tokio_now() - t0, Duration::from_millis(1_500));
}

#[tokio::test(start_paused = true)]
async fn many_callers_never_exceed_the_slots_and_leave_nothing_behind() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // The last callers would wait more than 5 s for the rate: refused at submit. Callers with
    // a deadline go first (nearest first), but three slots cannot serve them all in 40 ms.
    let a = admission(
        "[queue]\nmax_wait_ms = 5000\n\
         [providers.p.limits]\nconcurrent_requests = 3\nrequests_per_minute = 600\n",
    );
    let sending = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut callers = Vec::new();
    for i in 0..120_u64 {
        let (a, sending, most) = (a.clone(), sending.clone(), most.clone());
        callers.push(tokio::spawn(async move {
            let mut call = call("k").task(TaskId(i % 5));
            if i % 7 == 0 {
                call = call.deadline(Duration::from_millis(40));
            }
            let acquire = a.acquire(call);
            // Some callers give up on their own, some are cancelled with their task.
            let outcome = if i % 11 == 0 {
                match tokio::time::timeout(Duration::from_millis(500), acquire).await {
                    Ok(outcome) => outcome,
                    Err(_) => return "gave up",
                }
            } else {
                acquire.await
            };
            let permit = match outcome {
                Ok(permit) => permit,
                Err(Refused::Rejected(_)) => return "rejected",
                Err(Refused::Expired(_)) => return "expired",
                Err(Refused::Cancelled) => return "cancelled",
            };
            let n = sending.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(10 + i % 30)).await;
            sending.fetch_sub(1, Ordering::SeqCst);
            if i % 3 == 0 {
                permit.complete(Some(Usage::ONE_REQUEST));
            }
            "sent"
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(a.cancel(TaskId(4)) > 0);
    let mut outcomes = HashMap::new();
    for c in callers {
        *outcomes.entry(c.await.unwrap()).or_insert(0) += 1;
    }
    for kind in ["sent", "rejected", "expired", "cancelled", "gave up"] {
        assert!(
            outcomes.contains_key(kind),
            "no caller {kind}: {outcomes:?}"
        );
    }
    assert_eq!(most.load(Ordering::SeqCst), 3);
    assert_eq!((queued(&a), in_flight(&a)), (0, 0));
    let state = a.shared.lock();
    assert!(state.waiting.is_empty() && state.tasks.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_rejection_is_refused_at_submit() {
    let a = admission("[providers.p.limits]\nrequests_per_minute = 60\n[queue]\nmax_queued = 1\n");
    let _burst = drain_burst(&a, "k");
    let _waiting = a.submit(call("k")).unwrap();
    let refused = a.acquire(call("k")).await.unwrap_err();
    assert!(
        matches!(refused, Refused::Rejected(Rejection::Backpressure(_))),
        "{refused}"
    );
}

#[test]
#[should_panic(expected = "timers are disabled")]
fn a_runtime_without_timers_is_refused_at_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let _ = Admission::new(Config::default(), Arc::new(TokioClock));
}

#[tokio::test(start_paused = true)]
async fn the_driver_stops_with_the_last_handle() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let a = rate_limited();
    let b = a.clone();
    let _burst = drain_burst(&a, "k");
    let ticket = a.submit(call("k")).unwrap();
    settle_tasks().await;
    assert_eq!(metrics.num_alive_tasks(), before + 1);
    drop(a);
    drop(b);
    // A waiting ticket keeps the driver: it is still woken.
    settle_tasks().await;
    assert_eq!(metrics.num_alive_tasks(), before + 1);
    let permit = ticket.await.unwrap();
    settle_tasks().await;
    assert_eq!(metrics.num_alive_tasks(), before);
    // A permit outlives the handle harmlessly.
    assert!(permit.observed_scope(None).is_none());
    drop(permit);
}
