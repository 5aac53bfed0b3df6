//! Plugins built against the frozen `sluice:policy@0.1.0`, answering the current API.
//!
//! 0.1.0 has four per-request functions where 0.2.0 has two, so each current call becomes the
//! 0.1.0 calls that answer it:
//!
//! - `plan-request` = `decide-priority` + `estimate-cost`. 0.1.0 has no scopes, so the plan
//!   names none; its `weight` is dropped (the host never honoured it).
//! - `read-response` = `classify`, plus `parse-quota` for a response read whole
//!   (`complete`) or at the start of a stream (`stream-start`). At `stream-end` only
//!   `classify` runs: the headers were read at the start. 0.1.0 cannot report usage, so the
//!   reading has none and the host keeps its estimate.
//!
//! Each 0.1.0 call is a crossing of its own with its own deadline, and a failure or a decline
//! in any of them fails the whole current call (the host's fallback then answers all of it).
//! The conversions between the two versions' types are written once, here; the types are
//! the same record for record but for `priority`.

use super::bindings::v0_1::sluice::policy::types as old;
use super::contract::Calls;
use crate::contract::{
    Classification, Cost, Description, Observation, PluginError, PriorityClass, Reading,
    ReconcilePlan, Reconciliation, ReportedDimension, Request, RequestClass, RequestPlan, Response,
    ResponsePart, StatusQuery, TransportFailure, UncertainWrite, Verdict, WireOutcome,
};

/// `describe` of a 0.1.0 plugin.
pub(super) fn describe(p: &impl Calls) -> Result<Description, PluginError> {
    let d = p.call("describe", |b, s| b.frozen_v0_1()?.call_describe(s))?;
    Ok(Description {
        name: d.name,
        version: d.version,
        provider: d.provider,
        hosts: d.hosts,
        routes: d.routes,
        read_routes: vec![],
        error_shape: None,
        refill: None,
    })
}

/// `plan-request` through `decide-priority` and `estimate-cost`.
pub(super) fn plan_request(p: &impl Calls, req: &Request) -> Result<RequestPlan, PluginError> {
    let req = request(req);
    let r = p.call("decide-priority", |b, s| {
        b.frozen_v0_1()?.call_decide_priority(s, &req)
    })?;
    let priority = p.declined("decide-priority", r)?;
    let r = p.call("estimate-cost", |b, s| {
        b.frozen_v0_1()?.call_estimate_cost(s, &req)
    })?;
    let cost = p.declined("estimate-cost", r)?;
    Ok(RequestPlan {
        class: match priority.class {
            old::PriorityClass::Interactive => PriorityClass::Interactive,
            old::PriorityClass::Standard => PriorityClass::Standard,
            old::PriorityClass::Background => PriorityClass::Background,
        },
        tenant: priority.tenant,
        deadline_ms: priority.deadline_ms,
        cost: cost.into_iter().map(self::cost).collect(),
        scopes: Vec::new(),
    })
}

/// `read-response` through `classify` and, when headers are read, `parse-quota`.
pub(super) fn read_response(
    p: &impl Calls,
    req: &Request,
    outcome: &WireOutcome,
    part: ResponsePart,
) -> Result<Reading, PluginError> {
    let req = request(req);
    let old_outcome = match outcome {
        WireOutcome::Response(r) => old::Outcome::Response(response(r)),
        WireOutcome::Transport(t) => old::Outcome::Transport(transport(*t)),
    };
    let r = p.call("classify", |b, s| {
        b.frozen_v0_1()?.call_classify(s, &req, &old_outcome)
    })?;
    let c = p.declined("classify", r)?;
    let observations = match (&old_outcome, part) {
        (old::Outcome::Response(resp), ResponsePart::Complete | ResponsePart::StreamStart) => {
            let r = p.call("parse-quota", |b, s| {
                b.frozen_v0_1()?.call_parse_quota(s, &req, resp)
            })?;
            p.declined("parse-quota", r)?
                .into_iter()
                .map(observation)
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(Reading {
        classification: Classification {
            verdict: verdict(c.verdict),
            retry_after_ms: c.retry_after_ms,
            error_code: c.error_code,
            should_retry: c.should_retry,
            scope: None,
        },
        observations,
        usage: Vec::new(),
    })
}

/// `reconcile`, unchanged but for the types.
pub(super) fn reconcile(
    p: &impl Calls,
    write: &UncertainWrite,
) -> Result<ReconcilePlan, PluginError> {
    let write = uncertain_write(write);
    let r = p.call("reconcile", |b, s| {
        b.frozen_v0_1()?.call_reconcile(s, &write)
    })?;
    Ok(match p.declined("reconcile", r)? {
        old::ReconcilePlan::Query(q) => ReconcilePlan::Query(StatusQuery {
            method: q.method,
            url: q.url,
            headers: q.headers,
            body: q.body,
        }),
        old::ReconcilePlan::ResendSameKey => ReconcilePlan::ResendSameKey,
        old::ReconcilePlan::Unsupported(why) => ReconcilePlan::Unsupported(why),
    })
}

/// `read-reconciliation`, unchanged but for the types.
pub(super) fn read_reconciliation(
    p: &impl Calls,
    write: &UncertainWrite,
    resp: &Response,
) -> Result<Reconciliation, PluginError> {
    let (write, resp) = (uncertain_write(write), response(resp));
    let r = p.call("read-reconciliation", |b, s| {
        b.frozen_v0_1()?.call_read_reconciliation(s, &write, &resp)
    })?;
    Ok(match p.declined("read-reconciliation", r)? {
        old::Reconciliation::Found(id) => Reconciliation::Found(id),
        old::Reconciliation::NotFound => Reconciliation::NotFound,
        old::Reconciliation::Unknown(why) => Reconciliation::Unknown(why),
    })
}

/// A 0.1.0 `policy-error`, as the current one: a 0.1.0 plugin declines the same way.
impl From<old::PolicyError> for crate::contract::PolicyError {
    fn from(e: old::PolicyError) -> Self {
        match e {
            old::PolicyError::Unsupported(m) => Self::Unsupported(m),
            old::PolicyError::InvalidInput(m) => Self::InvalidInput(m),
            old::PolicyError::Other(m) => Self::Other(m),
        }
    }
}

fn request(r: &Request) -> old::Request {
    old::Request {
        method: r.method.clone(),
        url: r.url.clone(),
        class: match r.class {
            RequestClass::Read => old::RequestClass::Read,
            RequestClass::IdempotentWrite => old::RequestClass::IdempotentWrite,
            RequestClass::UncertainWrite => old::RequestClass::UncertainWrite,
        },
        headers: r.headers.clone(),
        body: r.body_prefix().to_vec(),
        now_ms: r.now_ms,
    }
}

fn response(r: &Response) -> old::Response {
    old::Response {
        status: r.status,
        headers: r.headers.clone(),
        body: r.body.clone(),
    }
}

fn transport(t: TransportFailure) -> old::TransportFailure {
    match t {
        TransportFailure::ConnectFailed => old::TransportFailure::ConnectFailed,
        TransportFailure::TimeoutBeforeSend => old::TransportFailure::TimeoutBeforeSend,
        TransportFailure::TimeoutAfterSend => old::TransportFailure::TimeoutAfterSend,
        TransportFailure::ResetAfterSend => old::TransportFailure::ResetAfterSend,
    }
}

fn uncertain_write(w: &UncertainWrite) -> old::UncertainWrite {
    old::UncertainWrite {
        method: w.method.clone(),
        url: w.url.clone(),
        idempotency_key: w.idempotency_key.clone(),
        client_reference: w.client_reference.clone(),
        operation_id: w.operation_id.clone(),
        now_ms: w.now_ms,
    }
}

fn verdict(v: old::Verdict) -> Verdict {
    match v {
        old::Verdict::Success => Verdict::Success,
        old::Verdict::RateLimited => Verdict::RateLimited,
        old::Verdict::QuotaExhausted => Verdict::QuotaExhausted,
        old::Verdict::Overloaded => Verdict::Overloaded,
        old::Verdict::Transient => Verdict::Transient,
        old::Verdict::Conflict => Verdict::Conflict,
        old::Verdict::ClientError => Verdict::ClientError,
        old::Verdict::AuthError => Verdict::AuthError,
        old::Verdict::OutcomeUnknown => Verdict::OutcomeUnknown,
    }
}

fn dimension(d: old::Dimension) -> ReportedDimension {
    match d {
        old::Dimension::Requests => ReportedDimension::Requests,
        old::Dimension::Tokens => ReportedDimension::Tokens,
        old::Dimension::InputTokens => ReportedDimension::InputTokens,
        old::Dimension::OutputTokens => ReportedDimension::OutputTokens,
        old::Dimension::Concurrency => ReportedDimension::Concurrency,
        old::Dimension::Other(name) => ReportedDimension::Other(name),
    }
}

fn cost(c: old::Cost) -> Cost {
    Cost {
        dimension: dimension(c.dimension),
        amount: c.amount,
    }
}

fn observation(o: old::Observation) -> Observation {
    Observation {
        scope: o.scope,
        dimension: dimension(o.dimension),
        limit: o.limit,
        remaining: o.remaining,
        used: o.used,
        reset_after_ms: o.reset_after_ms,
        window_ms: o.window_ms,
        source: o.source,
    }
}
