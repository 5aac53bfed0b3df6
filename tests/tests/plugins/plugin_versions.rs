//! Plugins built against the frozen `sluice:policy@0.1.0`, `@0.2.0`, `@0.3.0` and `@0.4.0` still load,
//! and their answers come through the current API: a 0.1.0 plugin's `plan-request` from
//! `decide-priority` and `estimate-cost`, its `read-response` from `classify` and
//! `parse-quota`; a 0.2.0 plugin's through its own functions, shown a body's prefix without
//! its digest. Neither is shown more of a body than its version promised. A 0.3.0 plugin is
//! shown the digest, and counts no stream and declares no refill. A 0.4.0 plugin counts its
//! streams and names one of four error shapes. The bundled plugins speak 0.5.0.

use std::sync::Arc;

use sluice::clock::ManualClock;
use sluice::contract::{
    Cost, ErrorShape, PriorityClass, ProviderPolicy, ReconcilePlan, Reconciliation, Refill,
    ReportedDimension, RequestClass, ResponsePart, TransportFailure, UncertainWrite, Verdict,
    WireOutcome,
};
use sluice::guard::{AnsweredBy, GuardedPolicy, QuarantinePolicy};
use sluice::headers::encode_fields;
use sluice::plugin::{Contract, bundled};
use sluice_tests::{
    legacy, legacy_v2, legacy_v3, legacy_v4, plain_response, request, response, runtime,
};

#[test]
fn a_0_1_0_plugin_loads_and_says_which_contract_it_speaks() {
    let rt = runtime();
    let p = legacy(&rt);
    assert_eq!(p.contract(), Contract::V0_1);
    assert_eq!(p.name(), "legacy");
    assert!(
        p.exports()
            .iter()
            .any(|e| e == "sluice:policy/policy@0.1.0#decide-priority"),
        "{:?}",
        p.exports()
    );
    for name in bundled::names() {
        assert_eq!(
            rt.load_bundled(name).unwrap().contract(),
            Contract::V0_5,
            "{name}"
        );
    }
}

#[test]
fn its_plan_comes_from_decide_priority_and_estimate_cost() {
    let rt = runtime();
    let p = legacy(&rt);
    let mut req = request("POST", "https://legacy.test/v1/x", RequestClass::Read)
        .with_body(b"12345".to_vec());
    req.headers = encode_fields([("x-tenant", "acme")]).unwrap();
    let plan = p.plan_request(&req).unwrap();
    assert_eq!(plan.class, PriorityClass::Interactive);
    assert_eq!(plan.tenant.as_deref(), Some("acme"));
    assert_eq!(plan.deadline_ms, Some(req.now_ms + 1000));
    assert_eq!(
        plan.cost,
        vec![
            Cost {
                dimension: ReportedDimension::Requests,
                amount: 1
            },
            Cost {
                dimension: ReportedDimension::Tokens,
                amount: 5
            }
        ]
    );
    assert!(plan.scopes.is_empty(), "0.1.0 cannot name scopes");
}

#[test]
fn its_reading_comes_from_classify_and_parse_quota() {
    let rt = runtime();
    let p = legacy(&rt);
    let req = request("POST", "https://legacy.test/v1/x", RequestClass::Read);
    let limited = response(429, &[("x-legacy-remaining", "42")]);
    for part in [ResponsePart::Complete, ResponsePart::StreamStart] {
        let r = p.read_response(&req, &limited, part).unwrap();
        assert_eq!(r.classification.verdict, Verdict::RateLimited, "{part:?}");
        assert_eq!(r.classification.retry_after_ms, Some(1500));
        assert_eq!(r.classification.error_code.as_deref(), Some("legacy_429"));
        assert_eq!(r.observations.len(), 1, "{part:?}");
        assert_eq!(r.observations[0].scope.as_deref(), Some("legacy-bucket"));
        assert_eq!(r.observations[0].remaining, Some(42));
        assert!(r.usage.is_empty(), "0.1.0 cannot report usage");
    }
    // At a stream's end only `classify` runs: the headers were read at its start.
    let end = p
        .read_response(&req, &limited, ResponsePart::StreamEnd)
        .unwrap();
    assert_eq!(end.classification.verdict, Verdict::RateLimited);
    assert!(end.observations.is_empty());
    // A transport failure has no response to read quotas from.
    let reset = WireOutcome::Transport(TransportFailure::ResetAfterSend);
    let r = p
        .read_response(&req, &reset, ResponsePart::Complete)
        .unwrap();
    assert_eq!(r.classification.verdict, Verdict::OutcomeUnknown);
    assert!(r.observations.is_empty());
}

#[test]
fn its_writes_reconcile_through_the_old_functions() {
    let rt = runtime();
    let p = legacy(&rt);
    let write = UncertainWrite {
        method: "POST".into(),
        url: "https://legacy.test/v1/x".into(),
        idempotency_key: Some("k".into()),
        client_reference: None,
        operation_id: None,
        now_ms: 0,
    };
    assert_eq!(p.reconcile(&write).unwrap(), ReconcilePlan::ResendSameKey);
    assert_eq!(
        p.read_reconciliation(&write, &plain_response(200, &[]))
            .unwrap(),
        Reconciliation::Found(Some("legacy-op".into()))
    );
}

#[test]
fn a_0_1_0_plugin_that_declines_is_answered_by_the_fallback() {
    let rt = runtime();
    let g = GuardedPolicy::new(
        Arc::new(legacy(&rt)),
        QuarantinePolicy::default(),
        Arc::new(ManualClock::starting_at(0)),
    );
    let ok = request("GET", "https://legacy.test/ok", RequestClass::Read);
    let a = g.read_response(&ok, &response(429, &[]), ResponsePart::Complete);
    assert!(matches!(a.by, AnsweredBy::Plugin), "{:?}", a.by);
    let decline = request("GET", "https://legacy.test/decline", RequestClass::Read);
    let a = g.read_response(
        &decline,
        &response(429, &[("retry-after", "3")]),
        ResponsePart::Complete,
    );
    assert!(
        matches!(&a.by, AnsweredBy::Fallback(e) if e.function == "classify"),
        "{:?}",
        a.by
    );
    assert_eq!(a.value.classification.retry_after_ms, Some(3000));
    assert_eq!(g.health().total_failures, 0, "declining is not a fault");
}

#[test]
fn a_0_2_0_plugin_loads_and_answers_through_its_own_functions() {
    let rt = runtime();
    let p = legacy_v2(&rt);
    assert_eq!(p.contract(), Contract::V0_2);
    assert_eq!(p.name(), "legacy-v2");
    let req = request("POST", "https://legacy-v2.test/v1/x", RequestClass::Read)
        .with_body(b"12345".to_vec());
    let plan = p.plan_request(&req).unwrap();
    assert_eq!(plan.class, PriorityClass::Interactive);
    assert_eq!(plan.scopes, vec!["v2-bucket".to_owned()]);
    assert_eq!(
        plan.cost[1].amount, 5,
        "one token a byte of the body it was shown"
    );
    let limited = response(429, &[("x-v2-remaining", "9")]);
    let r = p
        .read_response(&req, &limited, ResponsePart::Complete)
        .unwrap();
    assert_eq!(r.classification.verdict, Verdict::RateLimited);
    assert_eq!(r.classification.error_code.as_deref(), Some("v2_429"));
    assert_eq!(r.classification.scope, None, "0.2.0 names no scope");
    assert_eq!(r.observations[0].remaining, Some(9));
    let write = UncertainWrite {
        method: "POST".into(),
        url: "https://legacy-v2.test/v1/x".into(),
        idempotency_key: Some("k".into()),
        client_reference: None,
        operation_id: None,
        now_ms: 0,
    };
    assert_eq!(p.reconcile(&write).unwrap(), ReconcilePlan::ResendSameKey);
}

/// A 0.3.0 plugin is shown a long body's digest as before, answers through its own
/// functions, declares no refill (the host takes the safe one) and counts no stream (a
/// stream that ends early keeps its estimate); the bundled plugins speak 0.5.0, and
/// Anthropic's declares the continuous refill its provider documents.
#[test]
fn a_0_3_0_plugin_loads_plans_from_the_digest_and_counts_no_stream() {
    let rt = runtime();
    let p = legacy_v3(&rt);
    assert_eq!(p.contract(), Contract::V0_3);
    assert_eq!(p.name(), "legacy-v3");
    let d = p.description();
    assert_eq!(d.refill, None, "0.3.0 declares no refill");
    assert_eq!(d.read_routes, vec!["POST /v1/generate".to_owned()]);
    let req = request("POST", "https://legacy-v3.test/v1/x", RequestClass::Read)
        .with_body(vec![b'x'; 100 << 10]);
    let plan = p.plan_request(&req).unwrap();
    assert_eq!(plan.scopes, vec!["v3-bucket".to_owned()]);
    assert_eq!(
        plan.cost[1].amount,
        100 << 10,
        "a body past the prefix is planned from its digest"
    );
    let limited = response(429, &[("x-v3-remaining", "9")]);
    let r = p
        .read_response(&req, &limited, ResponsePart::Complete)
        .unwrap();
    assert_eq!(r.classification.error_code.as_deref(), Some("v3_429"));
    assert_eq!(r.observations[0].remaining, Some(9));
    // A credential in the URL's query is never shown to a plugin.
    let keyed = UncertainWrite {
        method: "POST".into(),
        url: "https://legacy-v3.test/v1/x?key=AIzaSecret&alt=sse".into(),
        idempotency_key: None,
        client_reference: None,
        operation_id: None,
        now_ms: 0,
    };
    assert_eq!(
        p.reconcile(&keyed).unwrap(),
        ReconcilePlan::Unsupported(
            "no key for https://legacy-v3.test/v1/x?key=[redacted]&alt=sse".into()
        )
    );
    let stretch = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\n";
    assert_eq!(p.count_stream(&req, 0, stretch).unwrap(), Vec::new());
    let refill = |name: &str| rt.load_bundled(name).unwrap().description().refill;
    assert_eq!(refill("anthropic"), Some(Refill::Continuous));
    assert_eq!(refill("openai"), None, "OpenAI documents no refill");
}

/// A 0.4.0 plugin loads, counts its streams and declares its refill through its own
/// functions, and names one of the four error shapes 0.4.0 has; a bundled plugin of 0.5.0
/// names Google's.
#[test]
fn a_0_4_0_plugin_loads_counts_its_streams_and_names_its_error_shape() {
    let rt = runtime();
    let p = legacy_v4(&rt);
    assert_eq!(p.contract(), Contract::V0_4);
    assert_eq!(p.name(), "legacy-v4");
    let d = p.description();
    assert_eq!(d.refill, Some(Refill::Continuous));
    assert_eq!(d.error_shape, Some(ErrorShape::Stripe));
    let req = request("POST", "https://legacy-v4.test/v1/x", RequestClass::Read)
        .with_body(vec![b'x'; 100 << 10]);
    let plan = p.plan_request(&req).unwrap();
    assert_eq!(plan.scopes, vec!["v4-bucket".to_owned()]);
    assert_eq!(plan.cost[1].amount, 100 << 10);
    let limited = response(429, &[("x-v4-remaining", "9")]);
    let r = p
        .read_response(&req, &limited, ResponsePart::Complete)
        .unwrap();
    assert_eq!(r.classification.error_code.as_deref(), Some("v4_429"));
    assert_eq!(r.observations[0].remaining, Some(9));
    assert!(p.counts_streams());
    let counted = p.count_stream(&req, 4_096, b"data: x\n\n").unwrap();
    let amount = |d: ReportedDimension| counted.iter().find(|c| c.dimension == d).map(|c| c.amount);
    assert_eq!(amount(ReportedDimension::OutputTokens), Some(9));
    assert_eq!(amount(ReportedDimension::InputTokens), Some(4_096));
    let write = UncertainWrite {
        method: "POST".into(),
        url: "https://legacy-v4.test/v1/x".into(),
        idempotency_key: Some("k".into()),
        client_reference: None,
        operation_id: None,
        now_ms: 0,
    };
    assert_eq!(p.reconcile(&write).unwrap(), ReconcilePlan::ResendSameKey);
    let gemini = rt.load_bundled("gemini").unwrap();
    assert_eq!(gemini.contract(), Contract::V0_5);
    assert_eq!(gemini.description().error_shape, Some(ErrorShape::Google));
}

#[test]
fn a_frozen_plugin_is_never_shown_more_than_its_prefix_and_the_built_in_policy_plans_longer_bodies()
{
    let rt = runtime();
    for p in [legacy(&rt), legacy_v2(&rt)] {
        let contract = p.contract();
        let g = GuardedPolicy::new(
            Arc::new(p),
            QuarantinePolicy::default(),
            Arc::new(ManualClock::starting_at(0)),
        );
        let at_the_prefix = request("POST", "https://legacy.test/v1/x", RequestClass::Read)
            .with_body(vec![b'x'; 64 << 10]);
        let a = g.plan_request(&at_the_prefix);
        assert!(matches!(a.by, AnsweredBy::Plugin), "{contract}: {:?}", a.by);
        let longer = at_the_prefix.with_body(vec![b'x'; 100 << 10]);
        let a = g.plan_request(&longer);
        assert!(
            matches!(&a.by, AnsweredBy::Fallback(e) if !e.failure.is_fault()
                && e.to_string().contains("0.5.0")),
            "{contract}: {:?}",
            a.by
        );
        let input = a
            .value
            .cost
            .iter()
            .find(|c| c.dimension == ReportedDimension::InputTokens)
            .map(|c| c.amount);
        assert_eq!(
            input,
            Some(25_600),
            "{contract}: the built-in policy charges the body"
        );
        assert_eq!(g.health().total_failures, 0, "a decline is not a fault");
    }
}
