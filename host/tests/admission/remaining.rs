//! The provider is the truth about `remaining`: a figure below what the host believes is left
//! delays the next admissions by exactly what the difference takes; a figure above it lets
//! nothing more through; `remaining: 0` with a reset still holds the scope until the reset.

use sluice::admission::{Class, Nanos, Usage};
use sluice::contract::{Observation, ReportedDimension as D};

use crate::sim::{Arrival, SEC, Sim, call};

/// 600 requests and 100 000 tokens a minute, paced at 90%: bursts of 61 requests and
/// 10 001 tokens.
const CONFIG: &str =
    "[providers.p.limits]\nrequests_per_minute = 600\ntokens_per_minute = 100000\n";
/// One request every 60 s / 540 at the paced rate.
const REQUEST: Nanos = (60 * SEC).div_ceil(540);
/// One token every 60 s / 90 000.
const TOKEN: Nanos = (60 * SEC).div_ceil(90_000);

fn said(dimension: D, remaining: u64, reset_after_ms: Option<u64>) -> Observation {
    Observation {
        scope: None,
        dimension,
        limit: None,
        remaining: Some(remaining),
        used: None,
        reset_after_ms,
        window_ms: None,
        source: "x-ratelimit-remaining".into(),
    }
}

/// When each of `n` calls of `usage`, all submitted at 1 s, is admitted; `observed` is what the
/// response to the call in flight said at 1 s.
fn admissions(observed: &[Observation], n: usize, usage: Usage) -> Vec<Nanos> {
    let (mut sim, grant, route, tenant) = Sim::one_in_flight(CONFIG);
    assert_eq!(sim.s.observe(SEC, grant, observed), observed.len());
    sim.now = SEC;
    let arrivals: Vec<Arrival> = (0..n)
        .map(|_| Arrival {
            usage,
            actual: usage,
            ..call(SEC, route, tenant, Class::Standard)
        })
        .collect();
    sim.run(arrivals, 20 * SEC);
    assert!(sim.rejected.is_empty(), "{:?}", sim.rejected);
    sim.admitted.iter().map(|a| a.at).collect()
}

#[test]
fn a_lower_remaining_delays_the_next_admission_by_the_right_amount() {
    // The host believes its whole burst of 61 is left (one sent, nine refilled since); the
    // provider counted traffic the host did not see and says 10.
    let believed = admissions(&[], 12, Usage::ONE_REQUEST);
    assert_eq!(believed, [SEC; 12]);
    let told = admissions(
        &[said(D::Requests, 10, Some(30_000))],
        12,
        Usage::ONE_REQUEST,
    );
    let mut want = vec![SEC; 10];
    want.extend([SEC + REQUEST, SEC + 2 * REQUEST]);
    assert_eq!(told, want);
}

#[test]
fn a_remaining_of_zero_without_a_reset_waits_one_interval_not_a_window() {
    let told = admissions(&[said(D::Requests, 0, None)], 2, Usage::ONE_REQUEST);
    assert_eq!(told, [SEC + REQUEST, SEC + 2 * REQUEST]);
}

#[test]
fn a_higher_remaining_admits_nothing_extra() {
    let believed = admissions(&[], 70, Usage::ONE_REQUEST);
    let told = admissions(
        &[said(D::Requests, 590, Some(1_000))],
        70,
        Usage::ONE_REQUEST,
    );
    assert_eq!(told, believed);
    // The burst, then the pace: the provider's 590 let nothing more through.
    assert_eq!(told.iter().filter(|&&t| t == SEC).count(), 61);
}

#[test]
fn a_rounded_token_figure_never_throttles_and_a_lower_one_does() {
    let usage = Usage::tokens(1_000, 0);
    let believed = admissions(&[], 10, usage);
    assert_eq!(believed, [SEC; 10]);
    // 10 001 believed, 9 500 said: within the rounding, nothing changes.
    let rounded = admissions(&[said(D::Tokens, 9_500, Some(60_000))], 10, usage);
    assert_eq!(rounded, believed);
    // 5 000 said: believed as 6 000 (the rounding's allowance), so six go at once and the
    // seventh waits for a thousand tokens' worth of pace.
    let told = admissions(&[said(D::Tokens, 5_000, Some(60_000))], 7, usage);
    let mut want = vec![SEC; 6];
    want.push(SEC + 1_000 * TOKEN);
    assert_eq!(told, want);
}

#[test]
fn remaining_zero_with_a_reset_still_holds_the_scope_until_the_reset() {
    let usage = Usage::tokens(1, 0);
    assert_eq!(admissions(&[], 1, usage), [SEC]);
    // Said at 1 s: nothing left until 5 s from then. The rounding's allowance does not
    // weaken it.
    let told = admissions(&[said(D::Tokens, 0, Some(5_000))], 1, usage);
    assert_eq!(told, [6 * SEC]);
}
