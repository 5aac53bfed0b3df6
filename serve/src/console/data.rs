//! What the console's page polls: `GET /console/data` (every two seconds) and
//! `GET /console/audit` (less often: it reads the whole log). Both answer JSON to a
//! signed-in session only; the admin API's own routes keep their Bearer token.
//!
//! `/console/data` is one snapshot of everything live, so the page's tables agree with
//! each other: `now_ms`, `scopes` and `queue` (the admission snapshot, as `GET /scopes`
//! and `GET /queue` give it), `queued`, `in_flight`, `holds` (the held scopes), `pools` (each
//! pool's members: their calls and holds), `recent_429s`,
//! `breakers`, `escalations` (the open ones), `history` (the sampled ring, see
//! [`super::history`]). `/console/audit` is `GET /audit/verify`'s answer.

use hyper::Response;
use serde_json::{Value, json};

use super::history::History;
use crate::Shared;
use crate::admin::json_reply;
use crate::reply::Body;

/// Everything live, in one answer.
pub(crate) fn live(shared: &Shared, history: &History) -> Response<Body> {
    let sluice = &shared.sluice;
    let snapshot = sluice.admission().snapshot();
    let holds: Vec<Value> = snapshot
        .scopes
        .iter()
        .filter_map(|s| {
            s.held
                .as_ref()
                .map(|h| json!({"scope": s.key, "reason": h.reason, "left_ms": h.left_ms}))
        })
        .collect();
    let escalations: Vec<Value> = match sluice.escalations().list(true) {
        Ok(list) => list
            .iter()
            .map(|e| {
                let case: Value = serde_json::from_str(&e.case_json).unwrap_or_default();
                json!({
                    "id": e.id,
                    "kind": e.kind.name(),
                    "task": e.task,
                    "action": case["action"],
                    "reason": case["reason"],
                    "created_ms": e.created_ms,
                })
            })
            .collect(),
        Err(e) => {
            tracing::warn!("the console could not list escalations: {e}");
            Vec::new()
        }
    };
    json_reply(
        200,
        &json!({
            "now_ms": sluice.clock().wall_ms(),
            "scopes": snapshot.scopes,
            "queue": snapshot.queue,
            "queued": snapshot.queued,
            "in_flight": snapshot.in_flight,
            "holds": holds,
            "pools": snapshot.pools,
            "recent_429s": sluice.executor().recent_429s(),
            "breakers": sluice.executor().breakers(),
            "escalations": escalations,
            "history": history.samples(),
        }),
    )
}
