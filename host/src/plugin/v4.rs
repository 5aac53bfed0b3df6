//! Plugins built against the frozen `sluice:policy@0.4.0`, answering the current API.
//!
//! 0.4.0 has the same functions and types as 0.5.0 but the error shape, which has four cases
//! (0.5.0 added `google` and `aws`): a 0.4.0 plugin names one of those four, or none. Every
//! other type converts with [`contract_conversions!`](super::convert::contract_conversions)'s
//! parts; the request, which these bindings own, with
//! [`digest_request!`](super::frozen::digest_request).

use super::bindings::v0_4::sluice::policy::types as old;
use super::contract::Calls;
use crate::contract::{
    Cost, Description, PluginError, Reading, ReconcilePlan, Reconciliation, Request, RequestPlan,
    Response, ResponsePart, UncertainWrite, WireOutcome,
};

super::convert::contract_conversions!(@common old);
super::convert::contract_conversions!(@since_v3 old);
super::convert::contract_conversions!(@frozen_shapes old);
super::convert::contract_conversions!(@cases old MediaKind { Image, Document, Audio, Other });
super::convert::contract_conversions!(@cases old Refill { Window, Continuous });

super::frozen::digest_request!();

/// `describe`, its error shape one of the first four.
pub(super) fn describe(p: &impl Calls) -> Result<Description, PluginError> {
    let d = p.call("describe", |b, s| b.frozen_v0_4()?.call_describe(s))?;
    Ok(Description {
        name: d.name,
        version: d.version,
        provider: d.provider,
        hosts: d.hosts,
        routes: d.routes,
        read_routes: d.read_routes,
        error_shape: d.error_shape.map(Into::into),
        refill: d.refill.map(Into::into),
    })
}

/// `count-stream`, the request as 0.4.0 shows it.
pub(super) fn count_stream(
    p: &impl Calls,
    req: &Request,
    at: u64,
    stretch: &[u8],
) -> Result<Vec<Cost>, PluginError> {
    let req = request(req);
    let r = p.call("count-stream", |b, s| {
        b.frozen_v0_4()?.call_count_stream(s, &req, at, stretch)
    })?;
    p.declined("count-stream", r)
        .map(|costs| costs.into_iter().map(Into::into).collect())
}

super::frozen::frozen_functions!(frozen_v0_4);
