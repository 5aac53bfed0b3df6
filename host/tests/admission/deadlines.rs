//! Deadlines within a class: the nearest goes first within a tenant; across tenants a
//! request that would miss its deadline waiting for its turn goes ahead of it; and a tenant
//! that stamps near deadlines on everything gets no more than its share.

use sluice::admission::{Class, Nanos, Rejection};

use crate::sim::{Arrival, MINUTE, MS, SEC, Sim, call, jain};

/// 60 requests a minute, paced at 90%: a burst of 7, then one every 60 s / 54.
const SLOW: &str = "[providers.p.limits]\nrequests_per_minute = 60\n";
const INTERVAL: Nanos = (60 * SEC).div_ceil(54);
const STANDARD: Class = Class::Standard;

/// Submits `arrivals` at 0, after the burst is spent, in order; returns when each was
/// admitted.
fn admissions(tenants: &[&str], arrivals: &[(usize, Class, Option<Nanos>)]) -> Vec<Nanos> {
    let mut sim = Sim::new(SLOW);
    let route = sim.route("p", "acct", &[]);
    let burst = sim.tenant("burst");
    for _ in 0..7 {
        sim.submit(call(0, route, burst, Class::Standard));
    }
    sim.poll();
    assert_eq!(sim.admitted.len(), 7);
    let tenants: Vec<_> = tenants.iter().map(|t| sim.tenant(t)).collect();
    let ids: Vec<_> = arrivals
        .iter()
        .map(|&(tenant, class, deadline)| {
            let a = Arrival {
                deadline,
                ..call(0, route, tenants[tenant], class)
            };
            sim.submit(a).expect("queued")
        })
        .collect();
    sim.run([], MINUTE);
    assert!(sim.expired.is_empty(), "{:?}", sim.expired);
    ids.iter().map(|id| sim.admitted_at(*id).unwrap()).collect()
}

#[test]
fn within_a_tenant_the_later_request_with_the_nearer_deadline_goes_first() {
    // Submitted in this order: no deadline, 30 s, 5 s.
    let at = admissions(
        &["t"],
        &[
            (0, STANDARD, None),
            (0, STANDARD, Some(30 * SEC)),
            (0, STANDARD, Some(5 * SEC)),
        ],
    );
    assert_eq!(at, [3 * INTERVAL, 2 * INTERVAL, INTERVAL]);
}

#[test]
fn across_tenants_a_request_that_would_miss_its_deadline_goes_ahead_of_the_turn() {
    // Tenant a's request is first in the fair order; b's, submitted later, cannot wait for
    // it: behind it, b's would go at 2.22 s, after its 2 s deadline.
    let at = admissions(
        &["a", "b"],
        &[(0, STANDARD, None), (1, STANDARD, Some(2 * SEC))],
    );
    assert_eq!(at, [2 * INTERVAL, INTERVAL]);
    // With a deadline it meets in the fair order, the fair order stands.
    let at = admissions(
        &["a", "b"],
        &[(0, STANDARD, None), (1, STANDARD, Some(3 * SEC))],
    );
    assert_eq!(at, [INTERVAL, 2 * INTERVAL]);
}

#[test]
fn a_request_goes_ahead_for_its_deadline_past_its_own_tenant_s_more_urgent_class() {
    // b's interactive request heads its flow; its standard one, with a 2 s deadline, cannot
    // wait behind a's turn and its own interactive one (it would go at 3.33 s).
    let at = admissions(
        &["a", "b"],
        &[
            (0, STANDARD, None),
            (1, Class::Interactive, None),
            (1, STANDARD, Some(2 * SEC)),
        ],
    );
    assert_eq!(at, [2 * INTERVAL, 3 * INTERVAL, INTERVAL]);
}

#[test]
fn a_flood_of_near_deadline_requests_does_not_starve_another_tenant() {
    // `flood` asks for five times the scope with a 1.5 s deadline on every request; `steady`
    // asks for more than half of it with no deadline. Each is owed half.
    let mut sim = Sim::new(
        "[queue]\nmax_queued = 1000000\nmax_queued_per_scope = 1000000\nmax_wait_ms = 86400000\n\
         [providers.p.limits]\nrequests_per_minute = 600\n\
         [tiers.bounded]\nmax_queued = 20\n[tenants.assign]\nsteady = \"bounded\"\n",
    );
    let route = sim.route("p", "acct", &[]);
    let flood = sim.tenant("flood");
    let steady = sim.tenant("steady");
    let end = 7 * MINUTE;
    let mut arrivals = Vec::new();
    let mut at = 0;
    while at < end {
        arrivals.push(Arrival {
            deadline: Some(at + 1_500 * MS),
            ..call(at, route, flood, Class::Standard)
        });
        if at % (100 * MS) == 0 {
            arrivals.push(call(at + 1, route, steady, Class::Standard));
        }
        at += 20 * MS;
    }
    sim.run(arrivals, end);

    let served = |t| {
        let n = sim
            .admitted
            .iter()
            .filter(|a| a.tenant == t && a.at >= MINUTE)
            .count();
        #[allow(clippy::cast_precision_loss, reason = "counts of a few thousand")]
        let n = n as f64;
        n
    };
    let (f, s) = (served(flood), served(steady));
    let index = jain(&[f, s]);
    assert!(
        index >= 0.99,
        "Jain's index {index:.4}: flood {f}, steady {s}"
    );
    assert!(s / (f + s) >= 0.48, "steady got {:.3}", s / (f + s));
    // The flood pays with its own requests: refused at submit or expired, not the other's.
    let refused = sim
        .rejected
        .iter()
        .filter(|(a, e)| a.tenant == flood && matches!(e, Rejection::DeadlineUnreachable { .. }))
        .count();
    assert!(refused + sim.expired.len() > 0);
    assert!(sim.expired.iter().all(|(a, _)| a.tenant == flood));
    // The scope stayed busy: about 540 a minute after the first.
    assert!(f + s >= 6.0 * 530.0, "{} admitted", f + s);
}
