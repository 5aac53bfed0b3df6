//! Plugins built against the frozen `sluice:policy@0.3.0`, answering the 0.4.0 API.
//!
//! 0.3.0 has the same functions as 0.4.0 but `count-stream`, and the same types but the
//! description, which names no refill: a 0.3.0 plugin counts no stream (a stream that ends
//! without its usage keeps its estimate) and declares no refill (the host takes the safe
//! one). Its types convert with [`contract_conversions!`](super::convert::contract_conversions)'s
//! parts; the request, which these bindings own, is written out below.

use super::bindings::v0_3::sluice::policy::types as old;
use super::instance::Plugin;
use crate::contract::{
    Description, PluginError, Reading, ReconcilePlan, Reconciliation, Request, RequestPlan,
    Response, ResponsePart, UncertainWrite, WireOutcome,
};

super::convert::contract_conversions!(@common old);
super::convert::contract_conversions!(@since_v3 old);
super::convert::contract_conversions!(@cases old MediaKind { Image, Document, Audio, Other });

/// The request as a 0.3.0 plugin is shown it: the body's prefix, and its digest.
fn request(r: &Request) -> old::Request {
    let d = &r.digest;
    old::Request {
        method: r.method.clone(),
        url: r.url.clone(),
        class: r.class.into(),
        headers: r.headers.clone(),
        body: r.body_prefix().to_vec(),
        digest: old::BodyDigest {
            length: d.length,
            json: d.json,
            text_chars: d.text_chars,
            media: d
                .media
                .iter()
                .map(|m| old::MediaPart {
                    kind: m.kind.into(),
                    media_type: m.media_type.clone(),
                    bytes: m.bytes,
                    width: m.width,
                    height: m.height,
                    pages: m.pages,
                    detail: m.detail.clone(),
                    by_url: m.by_url,
                })
                .collect(),
            media_omitted: d.media_omitted,
            fields: d.fields.clone(),
        },
        now_ms: r.now_ms,
    }
}

/// `describe`: 0.3.0 names no refill.
pub(super) fn describe(p: &Plugin) -> Result<Description, PluginError> {
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
