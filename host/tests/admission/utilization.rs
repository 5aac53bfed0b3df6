//! A saturating workload keeps every scope at least 97% busy in its binding dimension: the
//! host does not leave quota unused while work waits.

use sluice::admission::{Class, Dimension, Usage};

use crate::sim::{Arrival, MINUTE, MS, SEC, Sim};

/// Runs twenty tenants that each ask for far more than the scope gives, for `minutes`, and
/// returns the share of `rate_per_minute` of `dimension` that was admitted after the first
/// minute (whose burst would flatter the figure).
fn busy(
    config: &str,
    usage: Usage,
    dimension: Dimension,
    rate_per_minute: f64,
    minutes: u64,
) -> f64 {
    busy_with(config, usage, usage, dimension, rate_per_minute, minutes)
}

/// As [`busy`], with calls that use `actual` where they were estimated at `usage`.
fn busy_with(
    config: &str,
    usage: Usage,
    actual: Usage,
    dimension: Dimension,
    rate_per_minute: f64,
    minutes: u64,
) -> f64 {
    let mut sim = Sim::new(config);
    let a = sim.route("p", "acct", &[]);
    let b = sim.route("p", "acct", &["m"]);
    let tenants: Vec<_> = (0..20).map(|t| sim.tenant(&format!("t{t}"))).collect();
    let end = (minutes + 1) * MINUTE;
    let arrivals = (0..end / (20 * MS)).map(|i| Arrival {
        at: i * 20 * MS,
        route: if i % 3 == 0 { b } else { a },
        tenant: tenants[(i % 20) as usize],
        class: Class::Standard,
        usage,
        actual,
        latency: 300 * MS,
        deadline: None,
        task: None,
    });
    sim.run(arrivals, end);
    assert!(
        !sim.rejected.is_empty(),
        "the workload must saturate the queue"
    );
    let admitted: u64 = sim
        .admitted
        .iter()
        .filter(|a| a.at >= MINUTE)
        .map(|a| a.actual.get(dimension))
        .sum();
    #[allow(clippy::cast_precision_loss)]
    let share = admitted as f64 / (rate_per_minute * minutes as f64);
    share
}

#[test]
fn requests_bound_scope_stays_busy_at_the_paced_rate() {
    let config = "[providers.p.limits]\nrequests_per_minute = 600\ntokens_per_minute = 10000000\n";
    let share = busy(
        config,
        Usage::ONE_REQUEST,
        Dimension::Requests,
        0.9 * 600.0,
        10,
    );
    assert!(share >= 0.97, "{share:.4} of the paced request rate");
    assert!(share <= 1.0 + 1e-9, "{share:.4}: more than the paced rate");
}

#[test]
fn tokens_bound_scope_stays_busy_at_the_paced_rate() {
    let config = "[providers.p.limits]\nrequests_per_minute = 10000\ntokens_per_minute = 90000\n\
                  [providers.p.scopes.m]\ntokens_per_minute = 1000000\n";
    let share = busy(
        config,
        Usage::tokens(600, 400),
        Dimension::Tokens,
        0.9 * 90_000.0,
        10,
    );
    assert!(share >= 0.97, "{share:.4} of the paced token rate");
}

#[test]
fn with_no_margin_the_scope_runs_at_its_full_limit() {
    let config = "margin = 1.0\n[providers.p.limits]\nrequests_per_minute = 300\nconcurrent_requests = 100\n";
    let share = busy(config, Usage::ONE_REQUEST, Dimension::Requests, 300.0, 10);
    assert!(share >= 0.97, "{share:.4} of the provider's limit");
    let _ = SEC;
}

#[test]
fn estimates_above_actual_use_are_given_back() {
    // Each call is estimated at 1 400 tokens (its max_tokens) and uses 800: without refunds
    // the scope would carry 57% of what it could.
    let config = "[providers.p.limits]\nrequests_per_minute = 10000\ntokens_per_minute = 90000\n\
                  [providers.p.scopes.m]\ntokens_per_minute = 1000000\n";
    let share = busy_with(
        config,
        Usage::tokens(600, 800),
        Usage::tokens(600, 200),
        Dimension::Tokens,
        0.9 * 90_000.0,
        10,
    );
    assert!(
        share >= 0.97,
        "{share:.4} of the paced token rate in actual use"
    );
    // Refunds may let the burst refill; the provider's limit still holds.
    assert!(
        share <= 1.0 / 0.9,
        "{share:.4}: more than the provider's limit"
    );
}
