//! A monthly quota a plugin reports: 1 000 000 tokens per 30 days becomes a learned quota of
//! that window, its `remaining` is what admission lets through at once, and a month spent
//! holds the scope until its reset, weeks away, with no figure overflowing.

use sluice::admission::{Class, Nanos, Route, TenantId, Usage};
use sluice::contract::{Observation, ReportedDimension as D};

use crate::sim::{Arrival, MINUTE, SEC, Sim};

const DAY: Nanos = 24 * 60 * MINUTE;
const MONTH_MS: u64 = 30 * 86_400_000;
/// A provider with no configured limits: everything it has, responses teach.
const CONFIG: &str = "[providers.p]\n";

/// What an IETF `RateLimit-Policy: "month";q=1000000;w=2592000` and `RateLimit:
/// "month";r=R;t=T` answer becomes in a plugin's reading.
fn monthly(remaining: u64, reset_after_ms: u64) -> Observation {
    Observation {
        scope: None,
        dimension: D::Tokens,
        limit: Some(1_000_000),
        remaining: Some(remaining),
        used: None,
        reset_after_ms: Some(reset_after_ms),
        window_ms: Some(MONTH_MS),
        source: "ratelimit-policy,ratelimit".into(),
    }
}

/// Calls of 1 000 tokens, one a second from 1 s, for `seconds`.
fn thousand_token_calls(route: Route, tenant: TenantId, seconds: u64) -> Vec<Arrival> {
    (1..=seconds)
        .map(|i| Arrival {
            usage: Usage::tokens(500, 500),
            actual: Usage::tokens(500, 500),
            ..crate::sim::call(i * SEC, route, tenant, Class::Standard)
        })
        .collect()
}

#[test]
fn a_monthly_token_quota_is_learned_with_its_month() {
    let (mut sim, grant, ..) = Sim::one_in_flight(CONFIG);
    assert_eq!(
        sim.s
            .observe(SEC, grant, &[monthly(40_000, 14 * 86_400_000)]),
        1
    );
    let snap = sim.s.snapshot(SEC);
    let quotas = &snap.scopes[0].quotas;
    assert_eq!(quotas.len(), 1, "{quotas:?}");
    let q = &quotas[0];
    assert_eq!((q.window_ms, q.limit), (MONTH_MS, 1_000_000));
    assert_eq!(
        q.observed_from.as_deref(),
        Some("ratelimit-policy,ratelimit")
    );
    // Paced at 90% over the month, with the rest as its burst; what fits now is what the
    // provider says is left (plus the rounding a token figure is believed with), not an
    // empty burst nor the whole one.
    assert_eq!((q.paced, q.burst), (900_000, 100_001));
    assert_eq!(q.available, 41_000);
}

#[test]
fn admission_lets_through_what_the_month_has_left_and_then_its_pace() {
    let (mut sim, grant, route, tenant) = Sim::one_in_flight(CONFIG);
    sim.s
        .observe(SEC, grant, &[monthly(40_000, 14 * 86_400_000)]);
    sim.now = SEC;
    // Two hours of one call a second: 7 200 000 tokens asked for.
    sim.run(thousand_token_calls(route, tenant, 7_200), 2 * 60 * MINUTE);
    let in_the_first_minute = sim.admitted.iter().filter(|a| a.at < MINUTE).count();
    // What is left goes at once, as asked: 41 calls (40 000 left, believed within 1 000).
    assert_eq!(in_the_first_minute, 41);
    // Then the month's pace: 900 000 tokens over 30 days is one 1 000-token call every
    // 48 minutes, so two more in the two hours — not the 7 200 asked for.
    assert_eq!(sim.admitted.len(), 43, "{}", sim.admitted.len());
}

#[test]
fn a_month_spent_holds_the_scope_until_its_reset_weeks_away() {
    let (mut sim, grant, route, tenant) = Sim::one_in_flight(CONFIG);
    let reset_ms = 14 * 86_400_000;
    sim.s.observe(SEC, grant, &[monthly(0, reset_ms)]);
    let (_, scope) = sim.s.scope(0).unwrap();
    let until = SEC + reset_ms * 1_000_000;
    assert_eq!(scope.held(SEC).map(|h| h.until), Some(until));
    sim.now = SEC;
    let calls = vec![Arrival {
        usage: Usage::tokens(500, 500),
        actual: Usage::tokens(500, 500),
        ..crate::sim::call(2 * SEC, route, tenant, Class::Standard)
    }];
    sim.run(calls, 15 * DAY);
    // Queued while held (the configuration's longest wait is the default, far below two
    // weeks, so it may instead have been refused as too long a wait), never admitted early.
    assert!(
        sim.admitted.iter().all(|a| a.at >= until),
        "admitted before the month's reset: {:?}",
        sim.admitted.iter().map(|a| a.at).collect::<Vec<_>>()
    );
    let (_, scope) = sim.s.scope(0).unwrap();
    assert!(scope.held(until).is_none());
    // After the reset the month's quota admits again.
    assert!(scope.blocked(until, &Usage::tokens(500, 500)).is_none());
}
