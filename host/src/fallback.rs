//! The built-in conservative policy: what the host answers when a plugin declines, fails or
//! is quarantined, or when no plugin governs a host.
//!
//! It follows generic HTTP semantics (the same rules as the `ietf` plugin, from
//! `sluice-plugin-sdk`), with one deliberate difference: it **fails closed for writes**. A
//! write that got anything but a clear answer (a success, or a 4xx that says the request
//! itself was wrong) is classified `outcome-unknown`, so the host reconciles or escalates
//! instead of resending. The plugin that knows the provider may be more precise; without
//! it, the host never guesses that a second send is harmless.

use std::sync::LazyLock;

use sluice_plugin_sdk::generic::{self, Kind};
use sluice_plugin_sdk::headers::Headers;

use crate::contract::{
    Classification, Cost, Description, Observation, PluginError, PriorityClass, ProviderPolicy,
    Reading, ReconcilePlan, Reconciliation, ReportedDimension, Request, RequestClass, RequestPlan,
    Response, ResponsePart, TransportFailure, UncertainWrite, Verdict, WireOutcome,
};

/// The built-in policy. Stateless; every call answers (it never returns an error).
#[derive(Debug, Default, Clone, Copy)]
pub struct Fallback;

/// The built-in policy's description: it governs no host of its own, only what no plugin
/// answers for.
static DESCRIPTION: LazyLock<Description> = LazyLock::new(|| Description {
    name: "built-in".into(),
    version: env!("CARGO_PKG_VERSION").into(),
    provider: "any (generic HTTP semantics)".into(),
    hosts: Vec::new(),
    routes: Vec::new(),
    read_routes: vec![],
    error_shape: None,
    refill: None,
});

impl ProviderPolicy for Fallback {
    fn description(&self) -> &Description {
        &DESCRIPTION
    }

    /// Standard class, no tenant, no deadline, and a conservative cost: one request and, for a
    /// request with a body, [`fallback_tokens`] — never a free call, so a request the plugin
    /// could not plan still counts against every token quota. A body that names a `model`
    /// (the digest reads it wherever it stands) counts in that model's scope, `model:<name>`,
    /// as the model plugins name it: its holds and its price apply.
    fn plan_request(&self, req: &Request) -> Result<RequestPlan, PluginError> {
        let mut cost = vec![Cost {
            dimension: ReportedDimension::Requests,
            amount: 1,
        }];
        if let Some((input, output)) = fallback_tokens(req) {
            cost.extend([
                Cost {
                    dimension: ReportedDimension::InputTokens,
                    amount: input,
                },
                Cost {
                    dimension: ReportedDimension::OutputTokens,
                    amount: output,
                },
            ]);
        }
        let scopes = req
            .digest
            .string("model")
            .filter(|m| !m.is_empty() && m.len() <= sluice_contract::scope::MAX_MODEL_BYTES)
            .map(|m| format!("{}{m}", crate::admission::config::MODEL_SCOPE_PREFIX))
            .into_iter()
            .collect();
        Ok(RequestPlan {
            class: PriorityClass::Standard,
            tenant: None,
            deadline_ms: None,
            cost,
            scopes,
        })
    }

    /// Generic classification, where writes fail closed (see the module docs); the IETF
    /// rate-limit fields when the headers are read (a whole answer, or a stream's start);
    /// no usage.
    fn read_response(
        &self,
        req: &Request,
        outcome: &WireOutcome,
        part: ResponsePart,
    ) -> Result<Reading, PluginError> {
        let observations = match (outcome, part) {
            (WireOutcome::Response(r), ResponsePart::Complete | ResponsePart::StreamStart) => {
                ietf_observations(&headers(&r.headers))
            }
            _ => Vec::new(),
        };
        Ok(Reading {
            classification: classify(req, outcome),
            observations,
            usage: Vec::new(),
        })
    }

    /// Unsupported: without the provider's plugin, only a human can settle a write.
    fn reconcile(&self, _write: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
        Ok(ReconcilePlan::Unsupported(
            "no working plugin for this provider: the built-in policy cannot look up writes".into(),
        ))
    }

    /// Unknown, for the same reason.
    fn read_reconciliation(
        &self,
        _write: &UncertainWrite,
        _resp: &Response,
    ) -> Result<Reconciliation, PluginError> {
        Ok(Reconciliation::Unknown(
            "the built-in policy cannot read provider lookups".into(),
        ))
    }
}

/// Output tokens the built-in policy reserves for a request with a body: what a generation
/// that names no maximum may write, as the bundled plugins assume at most.
pub const FALLBACK_OUTPUT_TOKENS: u64 = 4_096;

/// The tokens the built-in policy charges a request with a body, `(input, output)`: every
/// byte of the body at four bytes a token (the providers' own rule of thumb for text; markup
/// and base64 count as text here, so a request with media is overcharged) and
/// [`FALLBACK_OUTPUT_TOKENS`]. `None` for a request without a body. An overestimate on
/// purpose: a request the plugin could not plan is the one the host knows least about, and
/// the usage its answer reports cannot be read without the plugin.
pub fn fallback_tokens(req: &Request) -> Option<(u64, u64)> {
    let bytes = req.body_length();
    (bytes > 0).then(|| (bytes.div_ceil(4), FALLBACK_OUTPUT_TOKENS))
}

/// Generic classification; writes fail closed.
fn classify(req: &Request, outcome: &WireOutcome) -> Classification {
    let (kind, retry_after_ms) = match outcome {
        WireOutcome::Transport(t) => (generic::transport_kind(transport(*t)), None),
        WireOutcome::Response(r) => (
            generic::status_kind(r.status),
            generic::requested_delay_ms(r.status, &headers(&r.headers), req.now_ms),
        ),
    };
    let is_write = req.class != RequestClass::Read;
    let surely_not_sent =
        matches!(outcome, WireOutcome::Transport(t) if transport(*t).surely_not_sent());
    let closed = is_write
        && !surely_not_sent
        && !matches!(
            kind,
            Kind::Success | Kind::ClientError | Kind::AuthError | Kind::QuotaExhausted
        );
    Classification {
        verdict: if closed {
            Verdict::OutcomeUnknown
        } else {
            verdict(kind)
        },
        retry_after_ms,
        error_code: None,
        should_retry: closed.then_some(false),
        scope: None,
    }
}

fn headers(block: &str) -> Headers<'_> {
    Headers::parse(block)
}

sluice_plugin_sdk::wit_conversions!(Verdict, TransportFailure, Observation, ReportedDimension);

#[cfg(test)]
mod tests {
    use super::*;

    fn req(class: RequestClass) -> Request {
        Request::new(
            "POST",
            "https://api.example.com/v1/things",
            class,
            String::new(),
            vec![],
            0,
        )
    }

    fn classify(req: &Request, outcome: &WireOutcome) -> Classification {
        Fallback
            .read_response(req, outcome, ResponsePart::Complete)
            .expect("the built-in policy answers")
            .classification
    }

    fn status(s: u16, headers: &str) -> WireOutcome {
        WireOutcome::Response(Response {
            status: s,
            headers: headers.into(),
            body: vec![],
        })
    }

    #[test]
    fn reads_follow_http_semantics() {
        let c = classify(&req(RequestClass::Read), &status(429, "Retry-After:10\n"));
        assert_eq!(c.verdict, Verdict::RateLimited);
        assert_eq!(c.retry_after_ms, Some(10_000));
        assert_eq!(
            classify(&req(RequestClass::Read), &status(503, "")).verdict,
            Verdict::Overloaded
        );
    }

    #[test]
    fn writes_fail_closed() {
        for class in [RequestClass::UncertainWrite, RequestClass::IdempotentWrite] {
            for s in [429, 500, 502, 503, 408, 409] {
                let c = classify(&req(class), &status(s, ""));
                assert_eq!(c.verdict, Verdict::OutcomeUnknown, "{class:?} {s}");
                assert_eq!(c.should_retry, Some(false));
            }
            let reset = WireOutcome::Transport(TransportFailure::ResetAfterSend);
            assert_eq!(
                classify(&req(class), &reset).verdict,
                Verdict::OutcomeUnknown
            );
        }
    }

    #[test]
    fn writes_keep_clear_answers() {
        let w = req(RequestClass::UncertainWrite);
        assert_eq!(classify(&w, &status(201, "")).verdict, Verdict::Success);
        assert_eq!(classify(&w, &status(422, "")).verdict, Verdict::ClientError);
        assert_eq!(classify(&w, &status(401, "")).verdict, Verdict::AuthError);
        let not_sent = WireOutcome::Transport(TransportFailure::ConnectFailed);
        assert_eq!(classify(&w, &not_sent).verdict, Verdict::Transient);
    }

    #[test]
    fn reads_ietf_quotas_from_headers_but_not_again_at_a_stream_s_end() {
        let r = req(RequestClass::Read);
        let limited = status(200, "RateLimit-Limit:10\nRateLimit-Remaining:3\n");
        for (part, expected) in [
            (ResponsePart::Complete, 1),
            (ResponsePart::StreamStart, 1),
            (ResponsePart::StreamEnd, 0),
        ] {
            let reading = Fallback.read_response(&r, &limited, part).unwrap();
            assert_eq!(reading.observations.len(), expected, "{part:?}");
            assert!(reading.usage.is_empty());
        }
    }

    #[test]
    fn plans_one_request_in_no_scope() {
        let plan = Fallback.plan_request(&req(RequestClass::Read)).unwrap();
        assert_eq!(plan.class, PriorityClass::Standard);
        assert!(plan.scopes.is_empty() && plan.tenant.is_none());
        assert_eq!(
            plan.cost,
            vec![Cost {
                dimension: ReportedDimension::Requests,
                amount: 1
            }]
        );
    }

    #[test]
    fn a_request_with_a_body_is_never_planned_free() {
        let r = req(RequestClass::Read).with_body(vec![b'x'; 20 << 20]);
        let plan = Fallback.plan_request(&r).unwrap();
        assert!(plan.scopes.is_empty(), "no model named");
        let amount = |d: ReportedDimension| {
            plan.cost
                .iter()
                .find(|c| c.dimension == d)
                .map(|c| c.amount)
        };
        assert_eq!(amount(ReportedDimension::Requests), Some(1));
        assert_eq!(amount(ReportedDimension::InputTokens), Some(5 << 20));
        assert_eq!(
            amount(ReportedDimension::OutputTokens),
            Some(FALLBACK_OUTPUT_TOKENS)
        );
    }

    #[test]
    fn a_body_that_names_a_model_counts_in_its_scope() {
        let r = req(RequestClass::Read)
            .with_body(br#"{"messages":[],"model":"gpt-4o","max_tokens":5}"#.to_vec());
        let plan = Fallback.plan_request(&r).unwrap();
        assert_eq!(plan.scopes, vec!["model:gpt-4o".to_owned()]);
    }

    #[test]
    fn cannot_reconcile() {
        let w = UncertainWrite {
            method: "POST".into(),
            url: "https://x/".into(),
            idempotency_key: Some("k".into()),
            client_reference: None,
            operation_id: None,
            now_ms: 0,
        };
        assert!(matches!(
            Fallback.reconcile(&w),
            Ok(ReconcilePlan::Unsupported(_))
        ));
    }
}
