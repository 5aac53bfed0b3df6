//! Tenants share a saturated scope by weight: equal weights get equal service, 1:2:4 get
//! 1:2:4, and a tenant sending a hundred times more gets no more than its share.

use std::collections::BTreeMap;

use sluice::admission::{Class, TenantId, Usage};

use crate::sim::{Arrival, MINUTE, MS, Sim, call, jain};

const CONFIG: &str = "[queue]\nmax_queued = 1000000\nmax_queued_per_scope = 1000000\nmax_wait_ms = 86400000\n\
    [providers.p.limits]\nrequests_per_minute = 600\ntokens_per_minute = 200000\n\
    [tiers.bronze]\nweight = 1\n[tiers.silver]\nweight = 2\n[tiers.gold]\nweight = 4\n\
    [tenants.assign]\nb = \"bronze\"\ns = \"silver\"\ng = \"gold\"\n";

/// Each tenant sends one request every `every_ms[i]` for `minutes`; returns each tenant's
/// admitted tokens after the first minute.
fn service(names: &[&str], every_ms: &[u64], usage: Usage, minutes: u64) -> Vec<f64> {
    let mut sim = Sim::new(CONFIG);
    let route = sim.route("p", "acct", &[]);
    let tenants: Vec<TenantId> = names.iter().map(|n| sim.tenant(n)).collect();
    let end = (minutes + 1) * MINUTE;
    let mut arrivals: Vec<Arrival> = Vec::new();
    for (i, every) in every_ms.iter().enumerate() {
        let mut at = i as u64; // distinct instants, so no tenant is always first
        while at < end {
            arrivals.push(Arrival {
                usage,
                actual: usage,
                latency: 100 * MS,
                ..call(at, route, tenants[i], Class::Standard)
            });
            at += every * MS;
        }
    }
    arrivals.sort_by_key(|a| a.at);
    sim.run(arrivals, end);
    assert!(sim.rejected.is_empty(), "{:?}", sim.rejected.first());
    let mut got: BTreeMap<TenantId, f64> = tenants.iter().map(|t| (*t, 0.0)).collect();
    for a in sim.admitted.iter().filter(|a| a.at >= MINUTE) {
        #[allow(clippy::cast_precision_loss)]
        let tokens = a.actual.get(sluice::admission::Dimension::Tokens) as f64;
        *got.get_mut(&a.tenant).unwrap() += tokens;
    }
    tenants.iter().map(|t| got[t]).collect()
}

#[test]
fn equal_weights_get_equal_service() {
    let names: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    // Every tenant asks for more than a tenth of the scope (540 paced per minute).
    let got = service(&names, &[50; 10], Usage::tokens(100, 100), 10);
    let index = jain(&got);
    assert!(index >= 0.99, "Jain's index {index:.4}: {got:?}");
}

#[test]
fn weights_one_two_four_get_one_two_four() {
    let got = service(&["b", "s", "g"], &[20, 20, 20], Usage::tokens(100, 100), 10);
    let total: f64 = got.iter().sum();
    for (share, want) in got
        .iter()
        .map(|g| g / total)
        .zip([1.0 / 7.0, 2.0 / 7.0, 4.0 / 7.0])
    {
        assert!(
            (share - want).abs() <= 0.05 * want,
            "share {share:.4}, want {want:.4}: {got:?}"
        );
    }
}

#[test]
fn a_tenant_sending_a_hundred_times_more_gets_no_more_than_its_share() {
    // Three tenants each ask for a little more than a quarter of the scope; the fourth asks
    // for a hundred times that.
    let got = service(
        &["q1", "q2", "q3", "loud"],
        &[400, 400, 400, 4],
        Usage::tokens(100, 100),
        10,
    );
    let total: f64 = got.iter().sum();
    let loud = got[3] / total;
    assert!(
        loud <= 0.25 * 1.05,
        "the loud tenant got {loud:.4}: {got:?}"
    );
    for quiet in &got[..3] {
        assert!(
            quiet / total >= 0.25 * 0.95,
            "a quiet tenant got {:.4}: {got:?}",
            quiet / total
        );
    }
}

#[test]
fn sizes_count_not_requests() {
    // One tenant sends requests ten times larger: it gets a tenth as many admitted, and the
    // same number of tokens.
    let mut sim = Sim::new(
        "[queue]\nmax_queued = 1000000\nmax_queued_per_scope = 1000000\nmax_wait_ms = 86400000\n\
         [providers.p.limits]\nrequests_per_minute = 100000\ntokens_per_minute = 60000\n",
    );
    let route = sim.route("p", "acct", &[]);
    let small = sim.tenant("small");
    let big = sim.tenant("big");
    let mut arrivals = Vec::new();
    for i in 0..20_000u64 {
        let (tenant, usage) = if i % 2 == 0 {
            (small, Usage::tokens(100, 0))
        } else {
            (big, Usage::tokens(1_000, 0))
        };
        arrivals.push(Arrival {
            usage,
            actual: usage,
            latency: 100 * MS,
            ..call(i * 10 * MS, route, tenant, Class::Standard)
        });
    }
    sim.run(arrivals, 11 * MINUTE);
    let tokens = |t| -> u64 {
        sim.admitted
            .iter()
            .filter(|a| a.tenant == t && a.at >= MINUTE)
            .map(|a| a.actual.input_tokens)
            .sum()
    };
    #[allow(clippy::cast_precision_loss)]
    let ratio = tokens(big) as f64 / tokens(small) as f64;
    assert!(
        (0.95..=1.05).contains(&ratio),
        "token ratio big/small {ratio:.3}"
    );
}

#[test]
fn a_large_request_is_not_starved_by_small_ones_from_another_lane() {
    // The account's burst is 1 001 tokens; a 5 000-token call needs the account to be idle
    // for a while. Small calls on the account alone keep arriving: they must not take every
    // gap it waits for.
    let mut sim = Sim::new(
        "[providers.p.limits]\ntokens_per_minute = 10000\nrequests_per_minute = 100000\n\
         [providers.p.scopes.m]\ntokens_per_minute = 100000\n",
    );
    let plain = sim.route("p", "acct", &[]);
    let model = sim.route("p", "acct", &["m"]);
    let small = sim.tenant("small");
    let big = sim.tenant("big");
    let mut arrivals: Vec<Arrival> = (0..6_000u64)
        .map(|i| Arrival {
            at: i * 100 * MS,
            route: plain,
            tenant: small,
            class: Class::Standard,
            usage: Usage::tokens(100, 0),
            actual: Usage::tokens(100, 0),
            latency: 100 * MS,
            deadline: None,
            task: None,
        })
        .collect();
    let large = Usage::tokens(5_000, 0);
    arrivals.push(Arrival {
        at: 30 * 1_000 * MS,
        route: model,
        tenant: big,
        usage: large,
        actual: large,
        ..arrivals[0].clone()
    });
    arrivals.sort_by_key(|a| a.at);
    sim.run(arrivals, 10 * MINUTE);
    assert!(
        sim.rejected.iter().all(|(a, _)| a.tenant != big),
        "{:?}",
        sim.rejected.iter().find(|(a, _)| a.tenant == big)
    );
    let admitted = sim.admitted.iter().find(|a| a.tenant == big);
    let waited = admitted.map(|a| (a.at - a.submitted) / MS);
    // Its share of 9 000 tokens a minute: 5 000 tokens take about 33 s of the scope.
    assert!(
        waited.is_some_and(|w| w <= 90_000),
        "the large call waited {waited:?} ms; {:?}",
        sim.why_waiting()
            .iter()
            .find(|w| w.tenant.as_ref() == "big")
    );
}

/// A tenant that queues in many lanes of one credential — a model name of its own in every
/// request — gets its share of the credential's bucket and no more: the bucket serves the
/// tenants by their share of it, not the lanes in turn (which gave the tenant of eight
/// lanes eight ninths). The steady tenant in one lane asks for more than half, as does the
/// other, and each gets about half; with four lanes of its own the steady one gets no more.
#[test]
fn a_tenant_in_many_lanes_of_one_credential_gets_one_share_of_it() {
    for (steady_lanes, loud_lanes) in [(1, 8), (4, 1), (1, 1), (3, 40)] {
        let mut sim = Sim::new(CONFIG);
        let steady = sim.tenant("steady");
        let loud = sim.tenant("loud");
        let lanes = |sim: &mut Sim, who: &str, n: usize| -> Vec<_> {
            (0..n)
                .map(|i| sim.route("p", "acct", &[&format!("model:{who}-{i}")]))
                .collect()
        };
        let steady_routes = lanes(&mut sim, "steady", steady_lanes);
        let loud_routes = lanes(&mut sim, "loud", loud_lanes);
        let end = 6 * MINUTE;
        let usage = Usage::tokens(10, 10);
        let mut arrivals = Vec::new();
        // Each tenant sends 12 a second (more than the 9 a second paced in all), spread
        // over its lanes.
        for (tenant, routes, offset) in [(steady, &steady_routes, 0), (loud, &loud_routes, 1)] {
            let mut at = offset;
            let mut i = 0;
            while at < end {
                arrivals.push(Arrival {
                    usage,
                    actual: usage,
                    latency: 100 * MS,
                    ..call(at, routes[i % routes.len()], tenant, Class::Standard)
                });
                at += 83 * MS;
                i += 1;
            }
        }
        arrivals.sort_by_key(|a| a.at);
        sim.run(arrivals, end);
        let after = |t: TenantId| {
            sim.admitted
                .iter()
                .filter(|a| a.at >= MINUTE && a.tenant == t)
                .count()
        };
        let (s, l) = (after(steady), after(loud));
        #[allow(clippy::cast_precision_loss)]
        let share = s as f64 / (s + l) as f64;
        assert!(
            (0.45..=0.55).contains(&share),
            "{steady_lanes} lane(s) against {loud_lanes}: the steady tenant got {share:.3} \
             ({s} against {l})"
        );
    }
}
