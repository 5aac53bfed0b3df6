//! Snapshots of admission on tokio's paused clock, and of a scheduler on a hand-moved one.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::*;
use crate::admission::{
    Acquire, Admission, Ask, Config, Permit, QueueEvent, Refused, Scheduler, Ticket, Usage,
};
use crate::clock::TokioClock;
use crate::contract::{Observation, ReportedDimension};

const SEC: Nanos = 1_000_000_000;

fn admission(toml: &str) -> Admission {
    let config = Config::from_toml(toml).unwrap();
    Admission::new(config, Arc::new(TokioClock)).unwrap()
}

fn call(tenant: &str, class: Class) -> Acquire {
    Acquire::new("p", "k").tenant(tenant).class(class)
}

/// The ticket's outcome if it is already decided, without yielding.
fn decided(t: &mut Ticket) -> Option<Result<Permit, Refused>> {
    match Pin::new(t).poll(&mut Context::from_waker(std::task::Waker::noop())) {
        Poll::Ready(r) => Some(r),
        Poll::Pending => None,
    }
}

/// The status of the scope printed as `key`.
fn scope<'s>(snapshot: &'s Snapshot, key: &str) -> &'s ScopeStatus {
    snapshot
        .scopes
        .iter()
        .find(|s| s.key == key)
        .unwrap_or_else(|| panic!("no scope {key} in {snapshot:#?}"))
}

fn observation(remaining: u64, reset_after_ms: Option<u64>) -> Observation {
    Observation {
        scope: None,
        dimension: ReportedDimension::Requests,
        limit: Some(600),
        remaining: Some(remaining),
        used: None,
        reset_after_ms,
        window_ms: None,
        source: "x-ratelimit-remaining-requests".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_configured_scope_shows_its_limits_paced_at_the_margin_and_what_is_left() {
    let a = admission(
        "[providers.p]\nmargin = 0.8\n[providers.p.limits]\nrequests_per_minute = 60\n\
         tokens_per_day = 1000000\nconcurrent_requests = 4\n\
         [providers.p.models.m]\ntokens_per_minute = 10000\n",
    );
    let permit = a
        .acquire(
            Acquire::new("p", "k")
                .scope("model:m")
                .usage(Usage::tokens(100, 0)),
        )
        .await
        .unwrap();
    let snap = a.snapshot();
    assert_eq!(snap.scopes.len(), 2, "{snap:#?}");

    let own = &snap.scopes[0];
    assert_eq!(own.key, "p/k");
    assert_eq!(own.kind, ScopeKind::Credential);
    assert_eq!(
        (
            own.provider.as_deref(),
            own.credential.as_deref(),
            own.scope.as_deref()
        ),
        (Some("p"), Some("k"), None)
    );
    assert!(own.configured);
    let [requests, tokens] = &own.quotas[..] else {
        panic!("{:#?}", own.quotas)
    };
    assert_eq!(requests.key, "requests_per_minute");
    assert_eq!(requests.dimension, Dimension::Requests);
    assert_eq!(requests.window_ms, 60_000);
    assert_eq!((requests.limit, requests.paced), (60, 48));
    // The rest of the limit is the burst, one of which the permit took.
    assert_eq!((requests.burst, requests.available), (13, 12));
    assert_eq!(requests.origin, QuotaOrigin::Configured);
    assert_eq!(tokens.key, "tokens_per_day");
    assert_eq!((tokens.limit, tokens.paced), (1_000_000, 800_000));
    assert_eq!(tokens.available, tokens.burst - 100);
    assert_eq!(
        own.concurrency,
        Some(ConcurrencyStatus { limit: 4, taken: 1 })
    );
    assert_eq!(own.next_allowed_ms, Some(0));
    assert_eq!(own.waiting_because, None);
    assert_eq!((own.queued, own.in_flight), (0, 1));

    let model = &snap.scopes[1];
    assert_eq!(model.key, "p/k/model:m");
    assert_eq!(model.kind, ScopeKind::Named);
    assert_eq!(model.scope.as_deref(), Some("model:m"));
    assert_eq!(
        (model.quotas[0].limit, model.quotas[0].paced),
        (10_000, 8_000)
    );
    assert_eq!(model.concurrency, None);
    assert_eq!(model.in_flight, 1);

    permit.complete(None);
    let snap = a.snapshot();
    assert_eq!(snap.scopes[0].concurrency.unwrap().taken, 0);
    assert_eq!((snap.in_flight, snap.scopes[0].in_flight), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_hold_shows_with_its_reason_until_it_passes() {
    let a = admission("[providers.p.limits]\nrequests_per_minute = 60\n");
    let permit = a.acquire(Acquire::new("p", "k")).await.unwrap();
    assert!(permit.hold_scope(None, Duration::from_secs(3), "429 Retry-After: 3"));
    permit.complete(None);
    let waiting = a.submit(Acquire::new("p", "k")).unwrap();

    let snap = a.snapshot();
    let s = scope(&snap, "p/k");
    let held = s.held.as_ref().expect("held");
    assert_eq!(held.reason, "429 Retry-After: 3");
    assert_eq!(held.left_ms, 3_000);
    assert_eq!(s.next_allowed_ms, Some(3_000));
    assert_eq!(
        s.waiting_because.as_deref(),
        Some("held: 429 Retry-After: 3")
    );
    assert_eq!(s.quotas[0].available, 0);
    assert_eq!((s.queued, snap.queued), (1, 1));

    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let s = scope(&a.snapshot(), "p/k").clone();
    assert_eq!(s.held.map(|h| h.left_ms), Some(1_800));
    assert_eq!(s.next_allowed_ms, Some(1_800));

    // The waiting request goes when the hold ends, and the hold is gone.
    let _permit = waiting.await.unwrap();
    let snap = a.snapshot();
    let s = scope(&snap, "p/k");
    assert!(s.held.is_none(), "{s:#?}");
    assert_eq!((s.queued, s.in_flight), (0, 1));
    // The hold restarted the bucket with one unit at its end, and that unit was taken.
    assert!(s.next_allowed_ms > Some(0), "{s:#?}");
    assert!(
        s.waiting_because
            .as_deref()
            .is_some_and(|w| w.starts_with("requests quota spent (requests_per_minute = 60")),
        "{s:#?}"
    );

    // With nothing taken since, a later look finds the scope free.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let snap = a.snapshot();
    let s = scope(&snap, "p/k");
    assert_eq!(s.next_allowed_ms, Some(0));
    assert_eq!(s.waiting_because, None);
}

#[tokio::test(start_paused = true)]
async fn what_the_provider_reports_shows_with_how_long_ago() {
    let a = admission("[providers.p.limits]\nrequests_per_minute = 600\n");
    let permit = a.acquire(Acquire::new("p", "k")).await.unwrap();
    assert!(scope(&a.snapshot(), "p/k").remaining.is_empty());
    assert_eq!(permit.observe(&[observation(5, Some(2_000))]), 1);
    permit.complete(None);

    tokio::time::sleep(Duration::from_millis(500)).await;
    let snap = a.snapshot();
    let s = scope(&snap, "p/k");
    let [r] = &s.remaining[..] else {
        panic!("{:#?}", s.remaining)
    };
    assert_eq!(r.dimension, Dimension::Requests);
    assert_eq!((r.limit, r.remaining), (Some(600), Some(5)));
    assert_eq!(r.age_ms, 500);
    assert_eq!(r.reset_in_ms, Some(1_500));
    assert_eq!(r.source, "x-ratelimit-remaining-requests");
    // The bucket believed the provider: 5 left then, and what half a second paced since.
    let interval = 60 * SEC / 540 + 1;
    assert_eq!(s.quotas[0].available, (5 * interval + SEC / 2) / interval);

    // Past the reset, the figure stays as reported, its reset shown as passed.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let snap = a.snapshot();
    let r = &scope(&snap, "p/k").remaining[0];
    assert_eq!(
        (r.remaining, r.reset_in_ms, r.age_ms),
        (Some(5), Some(0), 2_500)
    );
}

#[tokio::test(start_paused = true)]
async fn a_quota_learned_from_a_response_shows_as_observed() {
    let a = admission("");
    let permit = a.acquire(Acquire::new("p", "k")).await.unwrap();
    assert!(scope(&a.snapshot(), "p/k").quotas.is_empty());
    let taught = Observation {
        window_ms: Some(60_000),
        ..observation(590, None)
    };
    assert_eq!(permit.observe(&[taught]), 1);
    let snap = a.snapshot();
    let s = scope(&snap, "p/k");
    assert!(!s.configured);
    let q = &s.quotas[0];
    assert_eq!(
        (q.key.as_str(), q.limit, q.paced),
        ("requests_per_minute", 600, 540)
    );
    assert_eq!(q.origin, QuotaOrigin::Observed);
    assert_eq!(
        q.observed_from.as_deref(),
        Some("x-ratelimit-remaining-requests")
    );
}

#[tokio::test(start_paused = true)]
async fn queue_rows_count_each_tenant_and_class_as_requests_wait_and_go() {
    let a = admission(
        "[providers.p.limits]\nconcurrent_requests = 2\n\
         [tiers.gold]\nweight = 2\n[tiers.gold.limits]\nrequests_per_day = 1000\n\
         [tenants.assign]\nb = \"gold\"\n",
    );
    let first = a.acquire(call("a", Class::Interactive)).await.unwrap();
    let _second = a.acquire(call("a", Class::Interactive)).await.unwrap();
    let mut tickets = vec![a.submit(call("a", Class::Background)).unwrap()];
    for _ in 0..3 {
        tickets.push(a.submit(call("b", Class::Standard)).unwrap());
    }
    tickets.push(a.submit(call("b", Class::Interactive)).unwrap());

    let rows = |s: &Snapshot| -> Vec<(String, String, Class, u64, u64)> {
        s.queue
            .iter()
            .map(|r| {
                (
                    r.tenant.clone(),
                    r.tier.clone(),
                    r.class,
                    r.queued,
                    r.in_flight,
                )
            })
            .collect()
    };
    let row = |t: &str, tier: &str, c, q, f| (t.to_owned(), tier.to_owned(), c, q, f);
    let snap = a.snapshot();
    assert_eq!(
        rows(&snap),
        [
            row("a", "standard", Class::Interactive, 0, 2),
            row("a", "standard", Class::Background, 1, 0),
            row("b", "gold", Class::Interactive, 1, 0),
            row("b", "gold", Class::Standard, 3, 0),
        ]
    );
    assert_eq!((snap.queued, snap.in_flight), (5, 2));
    let s = scope(&snap, "p/k");
    assert_eq!((s.queued, s.in_flight), (5, 2));
    assert_eq!(s.next_allowed_ms, None);
    assert_eq!(
        s.waiting_because.as_deref(),
        Some("all 2 concurrency slots taken")
    );
    // Tenant b's own quota, from its tier, counts b's requests.
    let b = scope(&snap, "tenant b");
    assert_eq!(b.kind, ScopeKind::Tenant);
    assert_eq!(
        (b.tenant.as_deref(), b.provider.as_deref()),
        (Some("b"), None)
    );
    assert!(b.configured);
    assert_eq!((b.queued, b.in_flight), (4, 0));
    assert_eq!(b.quotas[0].key, "requests_per_day");

    // A slot frees. Classes order a tenant's own requests, not tenants: the two tenants'
    // turns tie, and a's request came first, so a's background request goes.
    first.complete(None);
    let background = decided(&mut tickets[0]).expect("admitted").unwrap();
    let snap = a.snapshot();
    assert_eq!(
        rows(&snap),
        [
            row("a", "standard", Class::Interactive, 0, 1),
            row("a", "standard", Class::Background, 0, 1),
            row("b", "gold", Class::Interactive, 1, 0),
            row("b", "gold", Class::Standard, 3, 0),
        ]
    );
    assert_eq!((snap.queued, snap.in_flight), (4, 2));

    // The next turn is b's, and its most urgent class goes first: its interactive request,
    // ahead of the standard ones it queued before.
    background.complete(None);
    let admitted = decided(&mut tickets[4]).expect("admitted").unwrap();
    let snap = a.snapshot();
    assert_eq!(
        rows(&snap),
        [
            row("a", "standard", Class::Interactive, 0, 1),
            row("b", "gold", Class::Interactive, 0, 1),
            row("b", "gold", Class::Standard, 3, 0),
        ]
    );
    assert_eq!((snap.queued, snap.in_flight), (3, 2));
    assert_eq!(
        (
            scope(&snap, "tenant b").queued,
            scope(&snap, "tenant b").in_flight
        ),
        (3, 1)
    );

    // Completed, it leaves the rows: the next of b's standard requests takes its slot.
    admitted.complete(None);
    let snap = a.snapshot();
    assert_eq!(rows(&snap)[1..], [row("b", "gold", Class::Standard, 2, 1)]);
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_serializes_to_json_with_the_documented_names() {
    let a = admission("[providers.p.limits]\nrequests_per_minute = 60\n");
    let permit = a.acquire(call("acme", Class::Interactive)).await.unwrap();
    assert!(permit.hold_scope(None, Duration::from_millis(2_500), "429"));
    let json = serde_json::to_value(a.snapshot()).unwrap();
    let s = &json["scopes"][0];
    assert_eq!(s["key"], "p/k");
    assert_eq!(s["kind"], "credential");
    assert_eq!(s["scope"], serde_json::Value::Null);
    assert_eq!(s["quotas"][0]["dimension"], "requests");
    assert_eq!(s["quotas"][0]["paced"], 54);
    assert_eq!(s["quotas"][0]["origin"], "configured");
    assert_eq!(s["held"]["reason"], "429");
    assert_eq!(s["held"]["left_ms"], 2_500);
    assert_eq!(s["next_allowed_ms"], 2_500);
    assert_eq!(s["in_flight"], 1);
    assert_eq!(json["queue"][0]["tenant"], "acme");
    assert_eq!(json["queue"][0]["class"], "interactive");
    assert_eq!(json["queue"][0]["in_flight"], 1);
    assert_eq!(json["in_flight"], 1);
}

#[test]
fn dimensions_serialize_as_their_names() {
    for d in Dimension::ALL {
        assert_eq!(serde_json::to_value(d).unwrap(), d.name());
    }
}

/// Two schedulers given the same requests at the same instants, one looked at before every
/// poll: both admit the same requests at the same instants.
#[test]
fn looking_changes_no_decision() {
    let config = "[providers.p.limits]\nrequests_per_minute = 120\ntokens_per_minute = 12000\n";
    let run = |look: bool| {
        let mut s = Scheduler::new(Config::from_toml(config).unwrap()).unwrap();
        let (route, tenant) = (s.route("p", "k", &[]), s.tenant("t"));
        let key = ScopeKey::Provider {
            provider: "p".into(),
            credential: "k".into(),
            name: None,
        };
        let mut admitted = Vec::new();
        let mut events = Vec::new();
        for step in 0..40_u64 {
            let now = step * SEC / 4;
            let ask = Ask {
                route,
                tenant,
                class: Class::ALL[(step % 3) as usize],
                usage: Usage::tokens(50 + step * 10, 50),
                deadline: None,
                task: None,
            };
            s.submit(now, ask).unwrap();
            if step == 10 {
                s.hold(now, &key, now + 2 * SEC, "429");
            }
            if look {
                let snap = s.snapshot(now);
                assert_eq!(u64::from(s.queued()), snap.queued);
            }
            s.poll(now, &mut events);
            for e in events.drain(..) {
                if let QueueEvent::Admitted { request, grant } = e {
                    admitted.push((now, request));
                    s.complete(now, grant, Some(&Usage::tokens(80, 10)));
                }
            }
        }
        admitted
    };
    let unseen = run(false);
    // Some wait, for the pace, the hold or the tokens: looking had decisions to change.
    assert!(unseen.len() > 10 && unseen.len() < 40, "{unseen:?}");
    assert_eq!(run(true), unseen);
}
