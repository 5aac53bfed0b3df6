//! `GET /scopes` and `GET /queue`: admission as it stands, from one snapshot
//! ([`sluice::admission::Snapshot`]), whose types are serialized as they are: their field
//! names are the contract (see `host/src/admission/snapshot.rs`).
//!
//! - `/scopes`: `{"scopes": [ScopeStatus], "queued", "in_flight"}`; each scope has `key`,
//!   `kind`, `provider`, `credential`, `scope`, `tenant`, `configured`, `quotas` (`key`,
//!   `dimension`, `window_ms`, `limit`, `paced`, `burst`, `available`, `origin`,
//!   `observed_from`), `concurrency`, `remaining` (what the provider last reported),
//!   `held` (`reason`, `left_ms`), `next_allowed_ms`, `waiting_because`, `queued`,
//!   `in_flight`;
//! - `/queue`: `{"queue": [QueueRow], "queued", "in_flight"}`; each row has `tenant`,
//!   `tier`, `class`, `queued`, `in_flight`.
//!
//! Taking a snapshot changes nothing: looking never admits or delays a request.

use hyper::Response;
use serde_json::json;

use super::json_reply;
use crate::Shared;
use crate::reply::Body;

/// Every scope, and the totals.
pub(super) fn scopes(shared: &Shared) -> Response<Body> {
    let snapshot = shared.sluice.admission().snapshot();
    json_reply(
        200,
        &json!({
            "scopes": snapshot.scopes,
            "pools": snapshot.pools,
            "queued": snapshot.queued,
            "in_flight": snapshot.in_flight,
        }),
    )
}

/// The queue by tenant and class, and the totals.
pub(super) fn queue(shared: &Shared) -> Response<Body> {
    let snapshot = shared.sluice.admission().snapshot();
    json_reply(
        200,
        &json!({
            "queue": snapshot.queue,
            "queued": snapshot.queued,
            "in_flight": snapshot.in_flight,
        }),
    )
}
