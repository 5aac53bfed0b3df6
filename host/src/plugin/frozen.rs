//! What a frozen contract version shares with the current one: `plan-request`,
//! `read-response`, `reconcile` and `read-reconciliation`, the same four functions through
//! its own bindings. [`frozen_functions!`] writes them for a version's module (`v2.rs`,
//! `v3.rs`, `v4.rs`), which supplies what differs: `request` (the request as that version
//! shows it; [`digest_request!`] for the versions with a digest) and `old` (its generated
//! types, converted to and from the contract's).

/// The four functions of a frozen version whose exports are reached through `$bindings`
/// (`Bindings::frozen_v0_2`...), in the module that invokes it.
macro_rules! frozen_functions {
    ($bindings:ident) => {
        /// `plan-request`, the request as this version shows it.
        pub(super) fn plan_request(
            p: &impl Calls,
            req: &Request,
        ) -> Result<RequestPlan, PluginError> {
            let req = request(req);
            let r = p.call("plan-request", |b, s| {
                b.$bindings()?.call_plan_request(s, &req)
            })?;
            p.declined("plan-request", r).map(Into::into)
        }

        /// `read-response`, the request as this version shows it.
        pub(super) fn read_response(
            p: &impl Calls,
            req: &Request,
            outcome: &WireOutcome,
            part: ResponsePart,
        ) -> Result<Reading, PluginError> {
            let (req, outcome) = (request(req), old::Outcome::from(outcome.clone()));
            let r = p.call("read-response", |b, s| {
                b.$bindings()?
                    .call_read_response(s, &req, &outcome, part.into())
            })?;
            p.declined("read-response", r).map(Into::into)
        }

        /// `reconcile`, unchanged.
        pub(super) fn reconcile(
            p: &impl Calls,
            write: &UncertainWrite,
        ) -> Result<ReconcilePlan, PluginError> {
            let write = old::UncertainWrite::from(write.clone());
            let r = p.call("reconcile", |b, s| b.$bindings()?.call_reconcile(s, &write))?;
            p.declined("reconcile", r).map(Into::into)
        }

        /// `read-reconciliation`, unchanged.
        pub(super) fn read_reconciliation(
            p: &impl Calls,
            write: &UncertainWrite,
            resp: &Response,
        ) -> Result<Reconciliation, PluginError> {
            let (write, resp) = (
                old::UncertainWrite::from(write.clone()),
                old::Response::from(resp.clone()),
            );
            let r = p.call("read-reconciliation", |b, s| {
                b.$bindings()?.call_read_reconciliation(s, &write, &resp)
            })?;
            p.declined("read-reconciliation", r).map(Into::into)
        }
    };
}
pub(super) use frozen_functions;

/// The request as 0.3.0 and 0.4.0 show it, owned by their bindings: the body's prefix, and
/// its digest, converted into the module's `old` types.
macro_rules! digest_request {
    () => {
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
    };
}
pub(super) use digest_request;
