//! No scope ever admits more than its limit in any window, in any dimension, and never more
//! requests in flight than its concurrency limit: for any arrival pattern and costs.

use proptest::prelude::*;
use sluice::admission::{Class, Dimension, Usage};

use crate::sim::{Admitted, Arrival, MINUTE, MS, SEC, Sim, call, peak_in_flight};

const RPM: u64 = 120;
const TPM: u64 = 20_000;
const MODEL_TPM: u64 = 8_000;
const CONCURRENCY: usize = 4;

fn config(margin: f64) -> String {
    format!(
        "margin = {margin}\n\
         [queue]\nmax_queued = 100000\nmax_queued_per_scope = 100000\nmax_wait_ms = 86400000\n\
         [providers.p.limits]\nrequests_per_minute = {RPM}\ntokens_per_minute = {TPM}\nconcurrent_requests = {CONCURRENCY}\n\
         [providers.p.scopes.m]\ntokens_per_minute = {MODEL_TPM}\n"
    )
}

/// The most of `amount` admitted in any window of `window` among `admitted`.
fn busiest_window(admitted: &[&Admitted], window: u64, amount: impl Fn(&Admitted) -> u64) -> u64 {
    let mut most = 0;
    for (i, start) in admitted.iter().enumerate() {
        let sum: u64 = admitted[i..]
            .iter()
            .take_while(|a| a.at < start.at + window)
            .map(|a| amount(a))
            .sum();
        most = most.max(sum);
    }
    most
}

/// 64 cases, or `PROPTEST_CASES`.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64)
}

proptest! {
    // `PROPTEST_CASES=3000` runs more, as proptest's own setting does.
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn no_scope_admits_more_than_its_limit_in_any_window(
        margin in 0.5f64..=1.0,
        ops in prop::collection::vec(
            (0u64..3_000, 0usize..3, 0usize..4, 1u64..3_000, 0u64..100, 1u64..20_000, 0usize..3),
            1..300,
        ),
    ) {
        let mut sim = Sim::new(&config(margin));
        // Routes: the account alone, the account and model `m`, and another credential.
        let routes = [
            sim.route("p", "acct", &[]),
            sim.route("p", "acct", &["m"]),
            sim.route("p", "other", &[]),
        ];
        let tenants: Vec<_> = (0..4).map(|t| sim.tenant(&format!("t{t}"))).collect();
        let mut at = 0;
        let arrivals: Vec<Arrival> = ops
            .into_iter()
            .map(|(gap_ms, route, tenant, tokens, used_pct, latency_ms, class)| {
                at += gap_ms * MS;
                let usage = Usage::tokens(tokens / 2, tokens - tokens / 2);
                // The response uses at most the estimate: refunds are part of the pattern.
                let actual = Usage::tokens(usage.input_tokens, usage.output_tokens * used_pct / 100);
                Arrival {
                    at,
                    route: routes[route],
                    tenant: tenants[tenant],
                    class: Class::ALL[class],
                    usage,
                    actual,
                    latency: latency_ms * MS,
                    deadline: None,
                    task: None,
                }
            })
            .collect();
        sim.run(arrivals, at + 60 * MINUTE);

        let account: Vec<&Admitted> =
            sim.admitted.iter().filter(|a| a.route != routes[2]).collect();
        let model: Vec<&Admitted> =
            sim.admitted.iter().filter(|a| a.route == routes[1]).collect();
        let other: Vec<&Admitted> =
            sim.admitted.iter().filter(|a| a.route == routes[2]).collect();
        for scope in [&account, &other] {
            let requests = busiest_window(scope, MINUTE, |a| a.actual.get(Dimension::Requests));
            prop_assert!(requests <= RPM, "{requests} requests in a minute > {RPM}");
            let tokens = busiest_window(scope, MINUTE, |a| a.actual.get(Dimension::Tokens));
            prop_assert!(tokens <= TPM, "{tokens} tokens in a minute > {TPM}");
        }
        let tokens = busiest_window(&model, MINUTE, |a| a.actual.get(Dimension::Tokens));
        prop_assert!(tokens <= MODEL_TPM, "{tokens} model tokens in a minute > {MODEL_TPM}");
        for scope in [&account, &other] {
            let peak = peak_in_flight(scope.iter().copied());
            prop_assert!(peak <= CONCURRENCY, "{peak} in flight > {CONCURRENCY}");
        }
        prop_assert!(sim.rejected.is_empty(), "{:?}", sim.rejected.first());
        // Everything is admitted in the end: nothing is lost in the queue.
        prop_assert_eq!(sim.s.queued(), 0);
        prop_assert_eq!(sim.s.in_flight(), 0);
    }
}

#[test]
fn the_account_and_model_routes_share_the_accounts_concurrency() {
    let mut sim = Sim::new(&config(0.9));
    let plain = sim.route("p", "acct", &[]);
    let model = sim.route("p", "acct", &["m"]);
    let t = sim.tenant("t");
    for i in 0..40 {
        let mut a = call(
            0,
            if i % 2 == 0 { plain } else { model },
            t,
            Class::Standard,
        );
        a.latency = 10 * SEC;
        sim.submit(a);
    }
    sim.poll();
    assert_eq!(
        sim.admitted.len(),
        CONCURRENCY,
        "four slots for both routes together"
    );
    assert!(
        sim.admitted.iter().any(|a| a.route == model),
        "the lanes take turns"
    );
    assert!(
        sim.admitted.iter().any(|a| a.route == plain),
        "the lanes take turns"
    );
}
