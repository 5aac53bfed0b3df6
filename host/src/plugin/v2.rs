//! Plugins built against the frozen `sluice:policy@0.2.0`, answering the current API.
//!
//! 0.2.0 has the same functions as 0.3.0 (0.4.0 added `count-stream`, which it answers with
//! nothing). What differs: its request has no `digest` (it
//! is shown the body's prefix and nothing more), its classification names no `scope` (the
//! host holds the scopes its observations name, as for any classification without one), and
//! its description names no read routes and no error shape. Every other type has the same
//! shape, and its conversions are
//! [`contract_conversions!`](super::convert::contract_conversions)'s common part, the ones
//! native plugins use too (0.3.0's bindings lend the request, the outcome and the uncertain
//! write instead of owning them, and use its other parts).

use super::bindings::v0_2::sluice::policy::types as old;
use super::contract::Calls;
use crate::contract::{
    Classification, Description, PluginError, Reading, ReconcilePlan, Reconciliation, Request,
    RequestPlan, Response, ResponsePart, UncertainWrite, WireOutcome,
};

super::convert::contract_conversions!(@common old);

impl From<old::Classification> for Classification {
    fn from(c: old::Classification) -> Self {
        Self {
            verdict: c.verdict.into(),
            retry_after_ms: c.retry_after_ms,
            error_code: c.error_code,
            should_retry: c.should_retry,
            scope: None,
        }
    }
}

impl From<Classification> for old::Classification {
    fn from(c: Classification) -> Self {
        Self {
            verdict: c.verdict.into(),
            retry_after_ms: c.retry_after_ms,
            error_code: c.error_code,
            should_retry: c.should_retry,
        }
    }
}

/// The request as a 0.2.0 plugin is shown it: the body's prefix, as 0.2.0 promised.
fn request(r: &Request) -> old::Request {
    old::Request {
        method: r.method.clone(),
        url: r.url.clone(),
        class: r.class.into(),
        headers: r.headers.clone(),
        body: r.body_prefix().to_vec(),
        now_ms: r.now_ms,
    }
}

/// `describe`: 0.2.0 names no read routes and no error shape.
pub(super) fn describe(p: &impl Calls) -> Result<Description, PluginError> {
    let d = p.call("describe", |b, s| b.frozen_v0_2()?.call_describe(s))?;
    Ok(Description {
        name: d.name,
        version: d.version,
        provider: d.provider,
        hosts: d.hosts,
        routes: d.routes,
        read_routes: Vec::new(),
        error_shape: None,
        refill: None,
    })
}

super::frozen::frozen_functions!(frozen_v0_2);
