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

/// `plan-request`, unchanged.
pub(super) fn plan_request(p: &Plugin, req: &Request) -> Result<RequestPlan, PluginError> {
    let req = request(req);
    let r = p.call("plan-request", |b, s| {
        b.frozen_v0_3()?.call_plan_request(s, &req)
    })?;
    p.declined("plan-request", r).map(Into::into)
}

/// `read-response`, unchanged.
pub(super) fn read_response(
    p: &Plugin,
    req: &Request,
    outcome: &WireOutcome,
    part: ResponsePart,
) -> Result<Reading, PluginError> {
    let (req, outcome) = (request(req), old::Outcome::from(outcome.clone()));
    let r = p.call("read-response", |b, s| {
        b.frozen_v0_3()?
            .call_read_response(s, &req, &outcome, part.into())
    })?;
    p.declined("read-response", r).map(Into::into)
}

/// `reconcile`, unchanged.
pub(super) fn reconcile(p: &Plugin, write: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
    let write = old::UncertainWrite::from(write.clone());
    let r = p.call("reconcile", |b, s| {
        b.frozen_v0_3()?.call_reconcile(s, &write)
    })?;
    p.declined("reconcile", r).map(Into::into)
}

/// `read-reconciliation`, unchanged.
pub(super) fn read_reconciliation(
    p: &Plugin,
    write: &UncertainWrite,
    resp: &Response,
) -> Result<Reconciliation, PluginError> {
    let (write, resp) = (
        old::UncertainWrite::from(write.clone()),
        old::Response::from(resp.clone()),
    );
    let r = p.call("read-reconciliation", |b, s| {
        b.frozen_v0_3()?.call_read_reconciliation(s, &write, &resp)
    })?;
    p.declined("read-reconciliation", r).map(Into::into)
}
