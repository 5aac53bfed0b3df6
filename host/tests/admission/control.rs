//! The caller's controls and the queue's bounds: cancellation, backpressure, deadlines,
//! explanations, and tenants' own limits.

use std::time::Duration;

use sluice::admission::{
    Block, Bound, Class, Dimension, Rejection, ScopeKey, TaskId, Usage, Waiting,
};

use crate::sim::{Arrival, MS, SEC, Sim, ask, call};

fn key() -> ScopeKey {
    ScopeKey::Provider {
        provider: "p".into(),
        credential: "acct".into(),
        name: None,
    }
}

#[test]
fn cancelling_a_task_removes_its_requests_and_they_never_wake() {
    let mut sim =
        Sim::new("[providers.p.limits]\nrequests_per_minute = 60\nconcurrent_requests = 2\n");
    let route = sim.route("p", "acct", &[]);
    let t = sim.tenant("t");
    let task = TaskId(7);
    let mut ids = Vec::new();
    for i in 0..10 {
        let mut a = call(0, route, t, Class::Standard);
        a.latency = 60 * SEC;
        if i >= 2 {
            a.task = Some(task);
        }
        ids.push(sim.submit(a).unwrap());
    }
    sim.poll();
    assert_eq!(sim.admitted.len(), 2, "two slots");
    assert_eq!(sim.s.queued(), 8);
    assert_eq!(sim.s.cancel(task), 8);
    assert_eq!(sim.s.queued(), 0);
    assert_eq!(sim.s.cancel(task), 0, "a second cancel finds nothing");
    // Other work still flows once the slots free; the cancelled requests never come back.
    let other = sim.tenant("other");
    let later = call(SEC, route, other, Class::Standard);
    sim.run([later], 10 * 60 * SEC);
    assert_eq!(sim.admitted.len(), 3);
    for id in &ids[2..] {
        assert!(sim.s.explain(sim.now, *id).is_none());
    }
    assert_eq!(sim.s.in_flight(), 0, "every slot was released");
}

#[test]
fn a_withdrawn_request_frees_its_queue_place() {
    let mut sim = Sim::new(
        "[queue]\nmax_queued_per_scope = 1\n[providers.p.limits]\nconcurrent_requests = 1\n",
    );
    let route = sim.route("p", "acct", &[]);
    let t = sim.tenant("t");
    let mut first = call(0, route, t, Class::Standard);
    first.latency = SEC;
    sim.submit(first);
    sim.poll();
    let waiting = sim.submit(call(0, route, t, Class::Standard)).unwrap();
    assert!(matches!(
        sim.s.submit(0, ask(route, t)),
        Err(Rejection::Backpressure(Bound::Scope { max_queued: 1, .. }))
    ));
    assert!(sim.s.withdraw(waiting));
    assert!(!sim.s.withdraw(waiting));
    assert!(sim.s.submit(0, ask(route, t)).is_ok());
}

#[test]
fn backpressure_at_every_bound() {
    let mut sim = Sim::new(
        "[queue]\nmax_queued = 5\nmax_wait_ms = 30000\n\
         [providers.p.limits]\nrequests_per_minute = 60\n\
         [tiers.free]\nmax_queued = 2\n[tenants.assign]\nf = \"free\"\n",
    );
    let route = sim.route("p", "acct", &[]);
    let free = sim.tenant("f");
    let other = sim.tenant("o");
    let r = |sim: &mut Sim, t| sim.s.submit(0, ask(route, t));
    assert!(r(&mut sim, free).is_ok());
    assert!(r(&mut sim, free).is_ok());
    let e = r(&mut sim, free).unwrap_err();
    assert!(
        matches!(
            &e,
            Rejection::Backpressure(Bound::Tenant { max_queued: 2, .. })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("tenant f"), "{e}");
    // The estimated wait: 60 per minute paced at 54, a burst of 7. The queue is bounded by
    // global length first here.
    for _ in 0..3 {
        assert!(r(&mut sim, other).is_ok());
    }
    let e = r(&mut sim, other).unwrap_err();
    assert!(
        matches!(e, Rejection::Backpressure(Bound::Global { max_queued: 5 })),
        "{e}"
    );
}

#[test]
fn a_wait_longer_than_the_bound_is_refused_at_once() {
    let mut sim =
        Sim::new("[queue]\nmax_wait_ms = 10000\n[providers.p.limits]\nrequests_per_minute = 60\n");
    let route = sim.route("p", "acct", &[]);
    let t = sim.tenant("t");
    let mut refused = None;
    for i in 0..100 {
        if let Err(e) = sim.s.submit(0, ask(route, t)) {
            refused = Some((i, e));
            break;
        }
    }
    let (i, e) = refused.expect("the wait bound refuses");
    // 7 fit at once; 54 per minute paced is one per 1.11 s, so about 9 more within 10 s.
    assert!((15..=18).contains(&i), "refused after {i}");
    let Rejection::Backpressure(Bound::Wait {
        estimated,
        max_wait,
        ..
    }) = &e
    else {
        panic!("{e}");
    };
    assert!(*estimated > *max_wait);
    assert!(e.to_string().contains("p/acct"), "{e}");
}

#[test]
fn an_unreachable_deadline_fails_fast_with_the_estimated_wait() {
    let mut sim = Sim::new("[providers.p.limits]\nrequests_per_minute = 60\n");
    let route = sim.route("p", "acct", &[]);
    let t = sim.tenant("t");
    sim.s.hold(sim.now, &key(), 30 * SEC, "429 Retry-After: 30");
    let mut a = ask(route, t);
    a.deadline = Some(10 * SEC);
    let e = sim.s.submit(0, a).unwrap_err();
    let Rejection::DeadlineUnreachable {
        estimated_wait,
        late_by,
        ..
    } = &e
    else {
        panic!("{e}");
    };
    assert_eq!(*estimated_wait, Duration::from_secs(30));
    assert_eq!(*late_by, Duration::from_secs(20));
    assert!(e.to_string().contains("deadline"), "{e}");
}

#[test]
fn a_deadline_that_passes_while_waiting_expires_with_the_reason() {
    let mut sim = Sim::new("[providers.p.limits]\nrequests_per_minute = 60\n");
    let route = sim.route("p", "acct", &[]);
    let t = sim.tenant("t");
    let mut a = call(0, route, t, Class::Interactive);
    a.deadline = Some(5 * SEC);
    sim.run([], SEC);
    sim.now = SEC;
    // A 429 arrives after the request was queued and holds the scope past its deadline.
    sim.s.hold(sim.now, &key(), 20 * SEC, "429 Retry-After: 20");
    a.at = SEC;
    sim.submit(Arrival {
        deadline: Some(25 * SEC),
        ..a.clone()
    });
    let id = sim.submit(Arrival {
        deadline: Some(22 * SEC),
        ..a.clone()
    });
    assert!(id.is_some());
    sim.run([], 60 * SEC);
    assert_eq!(
        sim.admitted.len(),
        2,
        "both are admitted at the hold's end, within their deadlines"
    );

    let mut sim = Sim::new("[providers.p.limits]\nrequests_per_minute = 60\n");
    let route = sim.route("p", "acct", &[]);
    let t = sim.tenant("t");
    let mut a = call(0, route, t, Class::Interactive);
    a.deadline = Some(5 * SEC);
    sim.submit(a);
    sim.s.hold(sim.now, &key(), 20 * SEC, "429 Retry-After: 20");
    sim.run([], 60 * SEC);
    assert!(sim.admitted.is_empty());
    let (_, why) = &sim.expired[0];
    let Waiting::Scope {
        scope,
        block: Block::Held(hold),
    } = &why.waiting
    else {
        panic!("{why}");
    };
    assert_eq!(scope, &key());
    assert_eq!(hold.until, 20 * SEC);
    assert!(why.to_string().contains("429 Retry-After: 20"), "{why}");
    assert!(why.waited >= Duration::from_secs(5));
}

#[test]
fn a_waiting_request_explains_which_scope_which_dimension_and_until_when() {
    let mut sim = Sim::new(
        "[providers.p.limits]\nrequests_per_minute = 1000\n\
         [providers.p.scopes.m]\ntokens_per_minute = 10000\n",
    );
    let route = sim.route("p", "acct", &["m"]);
    let t = sim.tenant("t");
    let big = Usage::tokens(900, 100);
    sim.submit(Arrival {
        usage: big,
        actual: big,
        ..call(0, route, t, Class::Standard)
    });
    let id = sim
        .submit(Arrival {
            usage: big,
            actual: big,
            ..call(0, route, t, Class::Standard)
        })
        .unwrap();
    sim.poll();
    let why = sim.s.explain(0, id).unwrap();
    let Waiting::Scope {
        scope,
        block:
            Block::Quota {
                dimension,
                limit,
                until,
                ..
            },
    } = &why.waiting
    else {
        panic!("{why}");
    };
    assert_eq!(scope.to_string(), "p/acct/m");
    assert_eq!(*dimension, Dimension::Tokens);
    assert_eq!(*limit, 10_000);
    assert!(*until > 0);
    sim.run([], *until);
    assert!(!sim.waiting(id), "admitted at the instant it named");
    assert_eq!(sim.admitted.last().unwrap().at, *until);
}

#[test]
fn oversized_requests_are_refused_with_the_quota() {
    let mut sim = Sim::new("[providers.p.limits]\ntokens_per_minute = 10000\n");
    let route = sim.route("p", "acct", &[]);
    let t = sim.tenant("t");
    let mut a = ask(route, t);
    a.usage = Usage::tokens(10_001, 0);
    let e = sim.s.submit(0, a).unwrap_err();
    assert!(matches!(e, Rejection::Oversized { .. }), "{e}");
    assert!(e.to_string().contains("split it or raise the limit"), "{e}");
}

#[test]
fn a_tenants_in_flight_limit_holds_only_that_tenant() {
    let mut sim = Sim::new("[tiers.free]\nmax_in_flight = 1\n[tenants.assign]\nf = \"free\"\n");
    let route = sim.route("p", "acct", &[]);
    let free = sim.tenant("f");
    let paid = sim.tenant("p");
    let mut arrivals = Vec::new();
    for _ in 0..3 {
        arrivals.push(Arrival {
            latency: 10 * SEC,
            ..call(0, route, free, Class::Standard)
        });
        arrivals.push(Arrival {
            latency: 10 * SEC,
            ..call(0, route, paid, Class::Standard)
        });
    }
    sim.run(arrivals, 5 * SEC);
    let admitted = |t| sim.admitted.iter().filter(|a| a.tenant == t).count();
    assert_eq!(admitted(free), 1);
    assert_eq!(admitted(paid), 3);
    sim.run([], 35 * SEC);
    let admitted = |t| {
        sim.admitted
            .iter()
            .filter(|a| a.tenant == t)
            .map(|a| a.at / SEC)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        admitted(free),
        vec![0, 10, 20],
        "one at a time, each when the last finished"
    );
}

#[test]
fn a_tenants_own_quota_paces_only_that_tenant() {
    let mut sim =
        Sim::new("[tiers.free.limits]\nrequests_per_minute = 6\n[tenants.assign]\nf = \"free\"\n");
    let route = sim.route("p", "acct", &[]);
    let free = sim.tenant("f");
    let paid = sim.tenant("p");
    let mut arrivals = Vec::new();
    for i in 0..20 {
        arrivals.push(call(i * MS, route, free, Class::Standard));
        arrivals.push(call(i * MS, route, paid, Class::Standard));
    }
    let id_probe = arrivals.len();
    sim.run(arrivals, 30 * SEC);
    let admitted = |t| sim.admitted.iter().filter(|a| a.tenant == t).count();
    assert_eq!(admitted(paid), 20);
    // Six per minute paced at 90%: a burst of two, then one every 11.1 s.
    assert_eq!(admitted(free), 4, "{id_probe}");
}
