//! Plugins built against the frozen `sluice:policy@0.3.0`, answering the current API.
//!
//! 0.3.0 has the same functions as 0.4.0 but `count-stream`, and the same types but the
//! description, which names no refill: a 0.3.0 plugin counts no stream (a stream that ends
//! without its usage keeps its estimate) and declares no refill (the host takes the safe
//! one). Its types convert with [`contract_conversions!`](super::convert::contract_conversions)'s
//! parts; the request, which these bindings own, with [`digest_request!`](super::frozen::digest_request).

use super::bindings::v0_3::sluice::policy::types as old;
use super::contract::Calls;
use crate::contract::{
    Description, PluginError, Reading, ReconcilePlan, Reconciliation, Request, RequestPlan,
    Response, ResponsePart, UncertainWrite, WireOutcome,
};

super::convert::contract_conversions!(@common old);
super::convert::contract_conversions!(@since_v3 old);
super::convert::contract_conversions!(@frozen_shapes old);
super::convert::contract_conversions!(@cases old MediaKind { Image, Document, Audio, Other });

super::frozen::digest_request!();

/// `describe`: 0.3.0 names no refill.
pub(super) fn describe(p: &impl Calls) -> Result<Description, PluginError> {
    let d = p.call("describe", |b, s| b.frozen_v0_3()?.call_describe(s))?;
    Ok(Description {
        name: d.name,
        version: d.version,
        provider: d.provider,
        hosts: d.hosts,
        routes: d.routes,
        read_routes: d.read_routes,
        error_shape: d.error_shape.map(Into::into),
        refill: None,
    })
}

super::frozen::frozen_functions!(frozen_v0_3);
