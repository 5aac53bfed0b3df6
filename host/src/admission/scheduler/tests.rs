//! The hierarchy of shares: tenants first (by weight, whatever their classes), then a
//! tenant's classes in priority order; precedence of one tier over another only when
//! granted; classes a tier does not allow lowered.

use std::collections::HashMap;

use super::{Ask, Scheduler};
use crate::admission::{Class, Config, QueueEvent, RequestId, Usage};

/// A scheduler whose credential admits one request per poll (one concurrency slot), with
/// `extra` TOML.
fn scheduler(extra: &str) -> Scheduler {
    let c = Config::from_toml(&format!(
        "[providers.p.limits]\nconcurrent_requests = 1\n{extra}"
    ))
    .unwrap();
    Scheduler::new(c).unwrap()
}

/// Submits `n` requests of `tenant` in `class`.
fn submit(s: &mut Scheduler, tenant: &str, class: Class, n: usize) -> Vec<RequestId> {
    let (route, tenant) = (s.route("p", "k", &[]), s.tenant(tenant));
    (0..n)
        .map(|_| {
            s.submit(
                0,
                Ask {
                    route,
                    tenant,
                    class,
                    usage: Usage::ONE_REQUEST,
                    deadline: None,
                    task: None,
                },
            )
            .unwrap()
        })
        .collect()
}

/// Admits `n` requests one at a time (each completed before the next goes), in order.
fn admit(s: &mut Scheduler, n: usize) -> Vec<RequestId> {
    let mut order = Vec::new();
    let mut events = Vec::new();
    for _ in 0..n {
        events.clear();
        s.poll(0, &mut events);
        let [QueueEvent::Admitted { request, grant }] = events[..] else {
            panic!("one admission per poll: {events:?}");
        };
        order.push(request);
        s.complete(0, grant, None);
    }
    order
}

#[test]
fn one_tenant_s_interactive_flood_takes_only_its_own_share() {
    let mut s = scheduler("");
    let noisy = submit(&mut s, "noisy", Class::Interactive, 200);
    let steady = submit(&mut s, "steady", Class::Standard, 100);
    let order = admit(&mut s, 100);
    let steady_served = order.iter().filter(|r| steady.contains(r)).count();
    let noisy_served = order.iter().filter(|r| noisy.contains(r)).count();
    assert_eq!(
        (steady_served, noisy_served),
        (50, 50),
        "equal weights, equal shares"
    );
}

#[test]
fn weights_hold_across_classes() {
    let mut s = scheduler("[tiers.paid]\nweight = 3\n[tenants.assign]\nsteady = \"paid\"\n");
    submit(&mut s, "noisy", Class::Interactive, 400);
    let steady = submit(&mut s, "steady", Class::Background, 400);
    let order = admit(&mut s, 200);
    let steady_served = order.iter().filter(|r| steady.contains(r)).count();
    assert!(
        (148..=152).contains(&steady_served),
        "3 of 4: {steady_served}"
    );
}

#[test]
fn a_tenant_s_own_classes_go_in_priority_order() {
    let mut s = scheduler("");
    let background = submit(&mut s, "acme", Class::Background, 2);
    let standard = submit(&mut s, "acme", Class::Standard, 2);
    let interactive = submit(&mut s, "acme", Class::Interactive, 2);
    let order = admit(&mut s, 6);
    let expected: Vec<RequestId> = [interactive, standard, background].concat();
    assert_eq!(order, expected);
}

#[test]
fn a_tier_granted_precedence_goes_first_and_only_then() {
    let mut s = scheduler("[tiers.ops]\nprecedence = 1\n[tenants.assign]\noncall = \"ops\"\n");
    let others = submit(&mut s, "agent", Class::Interactive, 3);
    let oncall = submit(&mut s, "oncall", Class::Background, 3);
    let order = admit(&mut s, 6);
    assert_eq!(order, [oncall, others].concat());
}

#[test]
fn a_class_the_tier_does_not_allow_is_lowered_to_the_nearest_it_does() {
    let mut s = scheduler(
        "[tiers.free]\nclasses = [\"standard\", \"background\"]\n[tiers.batch]\nclasses = \
         [\"background\"]\n[tiers.live]\nclasses = [\"interactive\"]\n[tenants.assign]\nf = \
         \"free\"\nb = \"batch\"\nl = \"live\"\n",
    );
    let mut classes = HashMap::new();
    for (tenant, asked, queued) in [
        ("f", Class::Interactive, Class::Standard),
        ("f", Class::Background, Class::Background),
        ("b", Class::Interactive, Class::Background),
        ("l", Class::Background, Class::Interactive),
        ("x", Class::Interactive, Class::Interactive),
    ] {
        let id = submit(&mut s, tenant, asked, 1)[0];
        classes.insert(id, queued);
    }
    for (id, queued) in classes {
        assert_eq!(s.explain(0, id).unwrap().class, queued);
    }
}

#[test]
fn a_tier_s_precedence_and_classes_are_checked() {
    for (extra, says) in [
        ("[tiers.t]\nprecedence = 3\n", "tiers.t.precedence"),
        ("[tiers.t]\nclasses = []\n", "tiers.t.classes"),
        ("[tiers.t]\nclasses = [\"urgent\"]\n", "urgent"),
    ] {
        let err = Config::from_toml(&format!(
            "[providers.p.limits]\nconcurrent_requests = 1\n{extra}"
        ))
        .and_then(|c| Scheduler::new(c).map(|_| ()))
        .unwrap_err()
        .to_string();
        assert!(err.contains(says), "{extra}: {err}");
    }
}
