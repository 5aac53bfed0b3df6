//! `GET /tasks` and `POST /tasks/{name}/cancel`: the tasks agents named (`x-sluice-task`),
//! and cancelling one.
//!
//! - `/tasks`: `{"tasks": [TaskRow]}`, most recently seen first; each row has `task`,
//!   `agent`, `tenant`, `in_flight`, `calls`, `last_seen_ms`, `cancelled`
//!   ([`crate::tasks::TaskRow`]);
//! - `/tasks/{name}/cancel` (the name percent-encoded): `{"task", "seen_here",
//!   "waiting_calls", "unsent_writes"}`. The cancel is the library's
//!   ([`sluice::Sluice::cancel_task`]): the task's waiting calls are refused at once, its
//!   journaled writes that sent nothing never go (in this run or after a restart), and it
//!   starts no new ones; a write that may already have happened is still settled by reading,
//!   never resent. A task this sidecar never saw is cancelled all the same (its writes may
//!   be in the journal from an earlier run), and `seen_here` says so.

use hyper::Response;
use serde_json::json;

use super::text::decode;
use super::{error_reply, json_reply};
use crate::Shared;
use crate::reply::Body;

/// Every task the sidecar saw.
pub(super) fn list(shared: &Shared) -> Response<Body> {
    json_reply(200, &json!({"tasks": shared.tasks.list()}))
}

/// Cancels the task whose percent-encoded name is `raw`.
pub(super) fn cancel(shared: &Shared, raw: &str) -> Response<Body> {
    let task = match decode("the task's name in the path", raw) {
        Ok(t) => t,
        Err(e) => {
            return error_reply(
                400,
                format!("{e}: POST /tasks/{{name}}/cancel with the name percent-encoded"),
            );
        }
    };
    match shared.sluice.cancel_task(&task) {
        Ok(cancelled) => {
            let seen_here = shared.tasks.cancelled(&task);
            tracing::info!(
                task = %sluice::printable::printable(&task),
                waiting_calls = cancelled.waiting_calls,
                unsent_writes = cancelled.unsent_actions,
                "task cancelled through the admin API"
            );
            json_reply(
                200,
                &json!({
                    "task": task,
                    "seen_here": seen_here,
                    "waiting_calls": cancelled.waiting_calls,
                    "unsent_writes": cancelled.unsent_actions,
                }),
            )
        }
        Err(e) => error_reply(
            500,
            format!(
                "cancelling task `{}` failed: {}; try again (cancelling twice is harmless)",
                sluice::printable::printable(&task),
                sluice::printable::printable(&e.to_string())
            ),
        ),
    }
}
