//! The bundled plugins' own readers (OpenAI's `x-ratelimit-*` with Go-duration resets,
//! Anthropic's RFC 3339 resets, GitHub's resources, Stripe's reconciliation, Gemini's quota
//! errors, Bedrock's binary event streams, and the generic IETF plugin), compiled natively
//! and called as the host calls their components.
//!
//! Asserts: whatever a provider answers (a whole answer, either end of a stream, or a stretch
//! of one for `count-stream`) and whatever request the host passes, a bundled
//! plugin's answer, as its component exports it (fitted by `sluice_plugin_sdk::caps`), passes
//! the host's checks on plugin output (`plugin::validate`, with the default caps): a bundled
//! plugin never gets itself declined and quarantined because of what a client or a provider
//! sent.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use sluice::plugin::Caps;
use sluice::plugin::validate;
use sluice_fuzz::{bridge, input};
use sluice_plugin_sdk::{Plugin, caps};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(which) = u.int_in_range(0..=6u8) else {
        return;
    };
    match which {
        0 => run::<sluice_plugin_openai::OpenAi>(&mut u),
        1 => run::<sluice_plugin_anthropic::Anthropic>(&mut u),
        2 => run::<sluice_plugin_github::GitHub>(&mut u),
        3 => run::<sluice_plugin_stripe::Stripe>(&mut u),
        4 => run::<sluice_plugin_ietf::Ietf>(&mut u),
        5 => run::<sluice_plugin_gemini::Gemini>(&mut u),
        _ => run::<sluice_plugin_bedrock::Bedrock>(&mut u),
    }
});

fn run<P: Plugin>(u: &mut Unstructured<'_>) {
    let caps = Caps::default();
    let (Ok(req), Ok(outcome), Ok(part), Ok(write), Ok(answer)) = (
        input::request(u),
        input::outcome(u),
        input::part(u),
        input::uncertain_write(u),
        input::response(u),
    ) else {
        return;
    };
    let name = P::describe().name;
    validate::description(&bridge::description(P::describe()), &caps).expect("describe");
    if let Ok(reading) = P::read_response(&req, &outcome, part) {
        if let Err(e) = validate::reading(&bridge::reading(caps::fit_reading(reading)), &caps) {
            panic!(
                "{name}: read-response refused by the host: {e}\n{req:?}\n{outcome:?}\n{part:?}"
            );
        }
    }
    // The stretch of a stream: the answer's body, at an offset the input picks.
    if let (Ok(at), sluice_plugin_sdk::Outcome::Response(resp)) = (u.arbitrary::<u64>(), &outcome)
        && let Ok(counted) = P::count_stream(&req, at, &resp.body)
    {
        let counted: Vec<_> = caps::fit_costs(counted)
            .into_iter()
            .map(bridge::cost)
            .collect();
        if let Err(e) = validate::counted(&counted, &caps) {
            panic!("{name}: count-stream refused by the host: {e}\n{req:?}\n{outcome:?}");
        }
    }
    if let Ok(plan) = P::plan_request(&req) {
        if let Err(e) = validate::request_plan(&bridge::request_plan(caps::fit_plan(plan)), &caps) {
            panic!("{name}: plan-request refused by the host: {e}\n{req:?}");
        }
    }
    if let Ok(plan) = P::reconcile(&write) {
        if let Err(e) = validate::reconcile_plan(
            &bridge::reconcile_plan(caps::fit_reconcile_plan(plan)),
            &caps,
        ) {
            panic!("{name}: reconcile refused by the host: {e}\n{write:?}");
        }
    }
    if let Ok(found) = P::read_reconciliation(&write, &answer) {
        if let Err(e) = validate::reconciliation(
            &bridge::reconciliation(caps::fit_reconciliation(found)),
            &caps,
        ) {
            panic!("{name}: read-reconciliation refused by the host: {e}\n{write:?}\n{answer:?}");
        }
    }
}
