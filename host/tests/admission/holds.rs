//! A 429 on one worker holds every worker of the same scope, and no other scope; a response
//! that reports `remaining: 0` with a reset does the same; a call waiting at the shared
//! store's gate pauses its scope until it passes.

use sluice::admission::{Class, Dimension, Learned, ScopeKey};

use crate::sim::{MS, SEC, Sim, call};

const CONFIG: &str = "[providers.p.limits]\nrequests_per_minute = 600\n";

fn key(credential: &str) -> ScopeKey {
    ScopeKey::Provider {
        provider: "p".into(),
        credential: credential.into(),
        name: None,
    }
}

/// Three workers on each of two credentials, each sending a call every 500 ms.
fn workload(sim: &mut Sim, until: u64) -> Vec<crate::sim::Arrival> {
    let a = sim.route("p", "a", &[]);
    let b = sim.route("p", "b", &[]);
    let workers: Vec<_> = (0..3).map(|w| sim.tenant(&format!("w{w}"))).collect();
    let mut arrivals = Vec::new();
    let mut at = 0;
    while at < until {
        for (i, w) in workers.iter().enumerate() {
            arrivals.push(call(at + i as u64 * MS, a, *w, Class::Standard));
            arrivals.push(call(at + i as u64 * MS, b, *w, Class::Standard));
        }
        at += 500 * MS;
    }
    arrivals
}

#[test]
fn a_429_holds_every_worker_of_the_scope_and_no_other() {
    let mut sim = Sim::new(CONFIG);
    let arrivals = workload(&mut sim, 30 * SEC);
    let a = sim.route("p", "a", &[]);
    let (first, rest): (Vec<_>, Vec<_>) = arrivals.into_iter().partition(|x| x.at < 5 * SEC);
    sim.run(first, 5 * SEC);
    // One worker's call on credential `a` came back 429 with Retry-After: 10.
    sim.s
        .hold(sim.now, &key("a"), 15 * SEC, "429 Retry-After: 10");
    sim.run(rest, 40 * SEC);

    let on_a: Vec<u64> = sim
        .admitted
        .iter()
        .filter(|x| x.route == a)
        .map(|x| x.at)
        .collect();
    let on_b: Vec<u64> = sim
        .admitted
        .iter()
        .filter(|x| x.route != a)
        .map(|x| x.at)
        .collect();
    assert!(
        !on_a.iter().any(|t| (5 * SEC..15 * SEC).contains(t)),
        "credential a admitted during its hold"
    );
    assert!(
        on_a.iter().any(|t| *t >= 15 * SEC),
        "credential a resumes after the hold"
    );
    let b_during = on_b
        .iter()
        .filter(|t| (5 * SEC..15 * SEC).contains(*t))
        .count();
    assert!(
        b_during >= 50,
        "credential b kept going: {b_during} admitted during a's hold"
    );
    // After the hold, credential a restarts at the paced rate: no burst of the backlog.
    let burst = on_a
        .iter()
        .filter(|t| (15 * SEC..16 * SEC).contains(*t))
        .count();
    assert!(
        burst <= 10,
        "{burst} admitted in the first second after the hold"
    );
}

#[test]
fn remaining_zero_with_a_reset_holds_the_scope_until_the_reset() {
    let mut sim = Sim::new(CONFIG);
    let arrivals = workload(&mut sim, 20 * SEC);
    let a = sim.route("p", "a", &[]);
    let (first, rest): (Vec<_>, Vec<_>) = arrivals.into_iter().partition(|x| x.at < 2 * SEC);
    sim.run(first, 2 * SEC);
    let learned = Learned {
        dimension: Dimension::Requests,
        limit: Some(600),
        remaining: Some(0),
        reset_at: Some(8 * SEC),
        seen_at: 2 * SEC,
        source: "x-ratelimit-remaining-requests".into(),
    };
    sim.s.learn(2 * SEC, &key("a"), learned, None);
    sim.run(rest, 30 * SEC);
    let on_a: Vec<u64> = sim
        .admitted
        .iter()
        .filter(|x| x.route == a)
        .map(|x| x.at)
        .collect();
    assert!(!on_a.iter().any(|t| (2 * SEC..8 * SEC).contains(t)));
    assert!(on_a.iter().any(|t| *t >= 8 * SEC));
    let (_, scope) = sim.s.scope(0).unwrap();
    assert_eq!(
        scope.learned()[0].source.as_ref(),
        "x-ratelimit-remaining-requests"
    );
}

#[test]
fn a_learned_limit_smaller_than_configured_paces_the_scope() {
    let mut sim = Sim::new(CONFIG);
    let a = sim.route("p", "a", &[]);
    let w = sim.tenant("w");
    sim.s.learn(
        0,
        &key("a"),
        Learned {
            dimension: Dimension::Requests,
            limit: Some(60),
            remaining: Some(50),
            reset_at: None,
            seen_at: 0,
            source: "ratelimit-policy".into(),
        },
        Some(std::time::Duration::from_secs(60)),
    );
    let arrivals: Vec<_> = (0..200)
        .map(|i| call(i * 10 * MS, a, w, Class::Standard))
        .collect();
    sim.run(arrivals, 60 * SEC);
    assert!(
        sim.admitted.len() <= 60,
        "{} admitted in a minute under a limit of 60",
        sim.admitted.len()
    );
    assert!(sim.admitted.len() >= 50);
}

#[test]
fn a_plugins_observations_land_in_the_grants_scopes() {
    use sluice::admission::QueueEvent;
    use sluice::contract::{Observation, ReportedDimension as D};

    let mut sim = Sim::new(CONFIG);
    let a = sim.route("p", "a", &[]);
    let w = sim.tenant("w");
    sim.submit(call(0, a, w, Class::Standard));
    let mut events = Vec::new();
    sim.s.poll(0, &mut events);
    let QueueEvent::Admitted { grant, .. } = events[0] else {
        panic!("{events:?}")
    };
    let obs = |scope: Option<&str>, dimension, remaining| Observation {
        scope: scope.map(str::to_owned),
        dimension,
        limit: Some(5_000),
        remaining: Some(remaining),
        used: None,
        reset_after_ms: Some(30_000),
        window_ms: None,
        source: "x-ratelimit-remaining".into(),
    };
    let recorded = sim.s.observe(
        SEC,
        grant,
        &[
            obs(None, D::Requests, 4_000),
            obs(Some("search"), D::Requests, 0),
            obs(None, D::Concurrency, 1),
        ],
    );
    assert_eq!(recorded, 2, "concurrency is not a rate quota");
    // GitHub's `search` resource is spent until the reset; the credential's own scope is not.
    let search = ScopeKey::Provider {
        provider: "p".into(),
        credential: "a".into(),
        name: Some("search".into()),
    };
    let s = sim.s.scope_id(&search);
    let (_, scope) = sim.s.scope(s).unwrap();
    assert_eq!(scope.held(SEC).map(|h| h.until), Some(31 * SEC));
    let (_, own) = sim.s.scope(0).unwrap();
    assert!(own.held(SEC).is_none());
    assert_eq!(own.learned()[0].remaining, Some(4_000));
    let _ = Dimension::Requests;
}

/// A call of this host waiting at the shared store's gate pauses the scope it waits for
/// here: the credential's, or the tenant's own quota. When the call passes, the pause is
/// lifted at once; when it gives up (its deadline, its caller gone), the pause runs to the
/// end the store named.
#[test]
fn a_gate_pause_is_lifted_when_its_call_passes_and_runs_out_when_it_gives_up() {
    let config = format!(
        "{CONFIG}\n[tiers.small.limits]\nrequests_per_minute = 600\n[tenants.assign]\nt = \"small\"\n"
    );
    let scopes = [key("a"), ScopeKey::Tenant("t".into())];
    for (scope, passed) in scopes.iter().flat_map(|s| [(s, true), (s, false)]) {
        let mut sim = Sim::new(&config);
        let a = sim.route("p", "a", &[]);
        let t = sim.tenant("t");
        sim.run([], SEC);
        sim.s.gate_enter(scope);
        sim.s.pause(scope, 3 * SEC, "the shared store says wait");
        let next = sim.submit(call(SEC, a, t, Class::Standard)).unwrap();
        sim.poll();
        assert!(sim.waiting(next), "{scope}: admitted during the pause");
        sim.s.gate_leave(scope, passed);
        sim.run([], 5 * SEC);
        let admitted = if passed { SEC } else { 3 * SEC };
        assert_eq!(
            sim.admitted_at(next),
            Some(admitted),
            "{scope}, passed: {passed}"
        );
    }
}
