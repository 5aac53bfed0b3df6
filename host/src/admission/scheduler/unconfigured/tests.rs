//! The bound on unconfigured names and the forgetting of scopes at rest, through the
//! scheduler: what requests see (their routes, the overflow scope) and what is kept.

use metrics_util::debugging::DebuggingRecorder;
use proptest::prelude::*;

use super::super::{Ask, Route, Scheduler};
use super::{MODEL_OVERFLOW, OVERFLOW};
use crate::admission::bucket::Nanos;
use crate::admission::scope::{ScopeKey, ScopeName};
use crate::admission::{Class, Config, GrantId, QueueEvent, Usage};

const MS: Nanos = 1_000_000;
/// The idle time of [`scheduler`].
const IDLE: Nanos = 1_000 * MS;

/// A scheduler keeping `max` unconfigured names of provider `p`, forgotten after a second at
/// rest; `model:conf` and `search` are configured.
fn scheduler(max: u32) -> Scheduler {
    let c = Config::from_toml(&format!(
        "[queue]\nmax_unconfigured_scopes = {max}\nunconfigured_idle_ms = 1000\n\
         [providers.p.limits]\nrequests_per_minute = 6000000\n\
         [providers.p.models.conf]\nrequests_per_minute = 6000000\n\
         [providers.p.scopes.search]\nrequests_per_minute = 6000000\n"
    ))
    .unwrap();
    Scheduler::new(c).unwrap()
}

/// The names of the narrower scopes of credential `k` of `p` the scheduler keeps, sorted.
fn kept(s: &Scheduler) -> Vec<String> {
    let mut names: Vec<String> = s
        .scopes
        .iter()
        .filter_map(|(_, slot)| match &slot.key {
            ScopeKey::Provider { name: Some(n), .. } => Some(n.to_string()),
            _ => None,
        })
        .collect();
    names.sort();
    names
}

/// The narrower scope a request naming `name` is charged to.
fn charged(s: &mut Scheduler, name: &str) -> String {
    let Route(lane) = s.route("p", "k", &[name]);
    let scope = s.lanes[lane].scopes[1];
    match &s.scopes[scope].key {
        ScopeKey::Provider { name: Some(n), .. } => n.to_string(),
        other => panic!("{other:?}"),
    }
}

/// Submits and admits one request naming `name` at `now`; its grant, not completed.
fn admitted(s: &mut Scheduler, now: Nanos, name: &str) -> GrantId {
    let (route, tenant) = (s.route("p", "k", &[name]), s.tenant("t"));
    let ask = Ask {
        route,
        tenant,
        class: Class::Standard,
        usage: Usage::ONE_REQUEST,
        deadline: None,
        task: None,
    };
    let request = s.submit(now, ask).unwrap();
    let mut events = Vec::new();
    s.poll(now, &mut events);
    match events[..] {
        [QueueEvent::Admitted { request: r, grant }] if r == request => grant,
        _ => panic!("{events:?}"),
    }
}

/// Polls at `now`, expecting nothing to be admitted or expired.
fn poll(s: &mut Scheduler, now: Nanos) {
    let mut events = Vec::new();
    s.poll(now, &mut events);
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn names_past_the_bound_are_counted_under_the_overflow_scope() {
    let mut s = scheduler(2);
    assert_eq!(charged(&mut s, "model:a"), "model:a");
    assert_eq!(charged(&mut s, "model:b"), "model:b");
    assert_eq!(charged(&mut s, "model:c"), MODEL_OVERFLOW);
    assert_eq!(charged(&mut s, "region:x"), OVERFLOW, "any other name");
    // A name with a place keeps it; the overflow scope is unconfigured like the others.
    assert_eq!(charged(&mut s, "model:a"), "model:a");
    let other = s.scope_id(&ScopeKey::Provider {
        provider: "p".into(),
        credential: "k".into(),
        name: Some(MODEL_OVERFLOW.into()),
    });
    assert!(!s.scopes.configured(&s.scopes[other].key));
    assert_eq!(s.scopes[other].scope.quotas().count(), 0, "unbounded");
    assert_eq!(s.scopes.placed("p"), 2);
    assert_eq!(
        kept(&s),
        ["model:a", "model:b", "model:other", "other"],
        "no scope of model:c or region:x"
    );
}

#[test]
fn configured_scopes_are_never_counted_nor_forgotten() {
    let mut s = scheduler(0);
    assert_eq!(charged(&mut s, "model:conf"), "model:conf");
    assert_eq!(charged(&mut s, "search"), "search");
    assert_eq!(
        charged(&mut s, "model:x"),
        MODEL_OVERFLOW,
        "no place at all"
    );
    assert_eq!(s.scopes.placed("p"), 0);
    poll(&mut s, 10 * IDLE);
    assert_eq!(
        kept(&s),
        ["model:conf", "search"],
        "the overflow scope rested"
    );
    assert!(s.next_wake().is_none(), "nothing left to look at");
}

#[test]
fn a_scope_at_rest_is_forgotten_and_frees_its_place_and_its_id() {
    let mut s = scheduler(1);
    let grant = admitted(&mut s, 0, "model:a");
    assert_eq!(charged(&mut s, "model:b"), MODEL_OVERFLOW);
    // In flight long past the idle time: kept.
    poll(&mut s, 5 * IDLE);
    assert_eq!(charged(&mut s, "model:b"), MODEL_OVERFLOW);
    s.complete(5 * IDLE, grant, None);
    poll(&mut s, 6 * IDLE - 1);
    assert!(
        s.scopes.find(&key("model:a")).is_some(),
        "rested less than a second"
    );
    // A second at rest after its completion: forgotten, with its lane; the next looks
    // are of the overflow scopes still there.
    let due = s.next_wake().unwrap();
    assert!(due <= 7 * IDLE, "{due}");
    poll(&mut s, 7 * IDLE);
    assert!(s.scopes.find(&key("model:a")).is_none());
    assert_eq!(s.scopes.placed("p"), 0);
    let ids = s.scopes.ids_len();
    assert_eq!(charged(&mut s, "model:b"), "model:b", "its place is free");
    assert_eq!(s.scopes.ids_len(), ids, "and a freed id is given again");
}

#[test]
fn a_held_scope_is_kept_until_its_hold_ends_and_it_rests() {
    let mut s = scheduler(4);
    s.hold(0, &key("model:a"), 3 * IDLE, "429");
    poll(&mut s, 3 * IDLE);
    assert!(s.scopes.find(&key("model:a")).is_some(), "held until 3 s");
    poll(&mut s, 4 * IDLE);
    assert!(
        s.scopes.find(&key("model:a")).is_none(),
        "a second after the hold"
    );
}

#[test]
fn a_placed_scope_has_no_queue_depth_series_and_the_overflow_scope_has_one() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let mut s = scheduler(1);
        charged(&mut s, "model:a");
        charged(&mut s, "model:b");
    });
    let scopes: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, ..)| k.key().name() == crate::observe::QUEUE_DEPTH)
        .flat_map(|(k, ..)| {
            k.key()
                .labels()
                .map(|l| l.value().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(scopes.contains(&"p/k/model:other".to_owned()), "{scopes:?}");
    assert!(scopes.contains(&"p/k".to_owned()), "{scopes:?}");
    assert!(!scopes.iter().any(|s| s.ends_with("model:a")), "{scopes:?}");
}

#[test]
fn a_name_from_a_response_past_the_bound_lands_in_the_overflow_scope() {
    let mut s = scheduler(1);
    let grant = admitted(&mut s, 0, "model:a");
    assert_eq!(
        s.observed_scope(grant, Some("model:z")),
        Some(key(MODEL_OVERFLOW))
    );
    assert_eq!(
        s.observed_scope(grant, Some("model:a")),
        Some(key("model:a"))
    );
    assert_eq!(s.observed_scope(grant, Some("search")), Some(key("search")));
}

fn key(name: &str) -> ScopeKey {
    ScopeName::Provider {
        provider: "p",
        credential: "k",
        name: Some(name),
    }
    .key()
}

/// One step of a run: a request naming one of a few names (and completed at once, or
/// later), or time passing.
#[derive(Debug, Clone)]
enum Step {
    Request { name: u8, complete: bool },
    Wait { ms: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0_u8..12, any::<bool>()).prop_map(|(name, complete)| Step::Request { name, complete }),
        (0_u64..2_500).prop_map(|ms| Step::Wait { ms }),
    ]
}

fn name(i: u8) -> String {
    match i {
        0 => "model:conf".into(),
        1 => "search".into(),
        2..=9 => format!("model:m{i}"),
        _ => format!("region:r{i}"),
    }
}

proptest! {
    /// Whatever names requests bring and however time passes: the provider never keeps more
    /// names than its bound, every unconfigured scope is one with a place or an overflow
    /// scope, a name keeps its scope while it has one, and once nothing is in flight and
    /// twice the idle time has passed, only the configured scopes are left.
    #[test]
    fn names_stay_bounded_and_nothing_rested_is_kept(
        max in 0_u32..4,
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let mut s = scheduler(max);
        let mut now = 0;
        let mut open = Vec::new();
        for step in steps {
            match step {
                Step::Request { name: i, complete } => {
                    let named = name(i);
                    let before = s.scopes.find(&key(&named)).is_some();
                    let grant = admitted(&mut s, now, &named);
                    let at = charged(&mut s, &named);
                    if before {
                        prop_assert_eq!(&at, &named, "a kept name keeps its scope");
                    }
                    if complete {
                        s.complete(now, grant, None);
                    } else {
                        open.push(grant);
                    }
                }
                Step::Wait { ms } => {
                    now += ms * MS;
                    poll(&mut s, now);
                }
            }
            prop_assert!(s.scopes.placed("p") <= max as usize);
            let unconfigured: Vec<String> = kept(&s)
                .into_iter()
                .filter(|n| n != "model:conf" && n != "search")
                .collect();
            let overflow = unconfigured.iter().filter(|n| super::is_overflow(n)).count();
            prop_assert_eq!(unconfigured.len() - overflow, s.scopes.placed("p"));
        }
        for grant in open {
            s.complete(now, grant, None);
        }
        now += 2 * IDLE;
        poll(&mut s, now);
        let left: Vec<String> = kept(&s)
            .into_iter()
            .filter(|n| n != "model:conf" && n != "search")
            .collect();
        prop_assert!(left.is_empty(), "{:?}", left);
        prop_assert_eq!(s.scopes.placed("p"), 0);
        for (_, lane) in s.lanes.iter() {
            prop_assert!(lane.scopes.iter().all(|&id| s.scopes.get(id).is_some()));
        }
    }
}

#[test]
fn a_providers_own_bound_replaces_the_queues() {
    let c = Config::from_toml(
        "[queue]\nmax_unconfigured_scopes = 1\n\
         [providers.p]\nmax_unconfigured_scopes = 3\n[providers.q.limits]\nconcurrent_requests = 9\n",
    )
    .unwrap();
    let mut s = Scheduler::new(c).unwrap();
    for m in ["model:a", "model:b", "model:c"] {
        assert_eq!(charged(&mut s, m), m);
    }
    assert_eq!(charged(&mut s, "model:d"), MODEL_OVERFLOW);
    let other = |s: &mut Scheduler, name: &str| {
        let Route(lane) = s.route("q", "k", &[name]);
        let scope = s.lanes[lane].scopes[1];
        s.scopes[scope].key.to_string()
    };
    assert_eq!(other(&mut s, "model:a"), "q/k/model:a");
    assert_eq!(other(&mut s, "model:b"), "q/k/model:other");
}

/// Through the handle on tokio's paused clock: its driver wakes for the look, so a host
/// nobody calls any more still forgets a scope once it has rested.
#[tokio::test(start_paused = true)]
async fn an_idle_host_forgets_a_rested_scope_on_time() {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::admission::{Acquire, Admission};
    use crate::clock::TokioClock;

    let config = Config::from_toml(
        "[queue]\nunconfigured_idle_ms = 1000\n[providers.p.limits]\nconcurrent_requests = 4\n",
    )
    .unwrap();
    let a = Admission::new(config, Arc::new(TokioClock)).unwrap();
    let permit = a.acquire(Acquire::new("p", "k").scope("model:x")).await;
    permit.unwrap().complete(None);
    let named = |a: &Admission| -> Vec<String> {
        let scopes = a.snapshot().scopes;
        scopes.into_iter().filter_map(|s| s.scope).collect()
    };
    assert_eq!(named(&a), ["model:x"]);
    tokio::time::sleep(Duration::from_millis(999)).await;
    assert_eq!(named(&a), ["model:x"], "rested less than a second");
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert!(named(&a).is_empty(), "{:?}", named(&a));
}

/// A place freed while a call counted under the overflow scope was in flight: what its
/// answer says of its model still lands where the call was counted.
#[test]
fn an_answer_lands_where_its_call_was_counted() {
    let mut s = scheduler(1);
    let a = admitted(&mut s, 0, "model:a");
    let b = admitted(&mut s, 0, "model:b");
    s.complete(0, a, None);
    poll(&mut s, 2 * IDLE);
    assert_eq!(s.scopes.placed("p"), 0, "model:a was forgotten");
    assert_eq!(
        s.observed_scope(b, Some("model:b")),
        Some(key(MODEL_OVERFLOW))
    );
}

#[test]
fn a_configured_overflow_scope_has_its_limits() {
    let c = Config::from_toml(
        "[queue]\nmax_unconfigured_scopes = 0\n[providers.p.limits]\nconcurrent_requests = 9\n\
         [providers.p.models.other]\nrequests_per_minute = 60\n",
    )
    .unwrap();
    let mut s = Scheduler::new(c).unwrap();
    assert_eq!(charged(&mut s, "model:x"), MODEL_OVERFLOW);
    let other = s.scopes.find(&key(MODEL_OVERFLOW)).unwrap();
    assert!(s.scopes.configured(&s.scopes[other].key));
    assert_eq!(s.scopes[other].scope.quotas().count(), 1);
}
