//! `GET /escalations`, `GET /escalations/{id}` and `POST /escalations/{id}/resolve`: the
//! cases a person must decide, and their decisions — what `sluice escalations list`, `show`
//! and `resolve` do, on the journal of the host that runs, with the decision carried out at
//! once ([`sluice::Escalations::resolve`]) instead of at the host's next start.
//!
//! - `/escalations` (`?all=true`: resolved ones too): `{"all", "escalations": [{"id",
//!   "kind", "state", "task", "action_id", "action", "reason", "created_ms",
//!   "resolved_ms"}]}`, oldest first;
//! - `/escalations/{id}`: `{"id", "kind", "state", "task", "action_id", "created_ms",
//!   "resolved_ms", "options", "case", "decisions"}`; `case` is the sanitized case as the
//!   library stored it ([`sluice::writes::Case`]: goal, action, endpoint, attempts, limit
//!   headers, spent budget, key, operation id, status query, options) — never the body;
//! - `/escalations/{id}/resolve` with `{"option", "by", "note", "operation_id"}`:
//!   `{"escalation", "decision", "applied", "warning"}`; `decision` is the approval record,
//!   `applied` what carrying out the decisions now did, one entry per action (`outcome`,
//!   `task`, `action`, `state`, `attempts`, `operation_id`, `status`, `escalation`).
//!
//! The decision is checked by the library exactly as the CLI's is: the option must be one
//! the case offers, `by` names who decides (one line of visible characters), the note is
//! one printable line, and an operation id goes only with `query-existing`.

use http_body_util::{BodyExt, Limited};
use hyper::Response;
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{Value, json};
use sluice::writes::WriteOutcome;
use sluice::{
    Approval, Choice, Decision, Escalation, EscalationCase, Escalations, JournalError, Refusal,
    Resolved,
};

use super::text::query;
use super::{error_reply, json_reply};
use crate::Shared;
use crate::reply::Body;

/// The largest decision body taken.
const MAX_BODY: usize = 64 * 1024;

/// The open escalations, or all with `?all=true`.
pub(super) fn list(shared: &Shared, q: Option<&str>) -> Response<Body> {
    let all = match query(q, &["all"]) {
        Ok(pairs) => match pairs.last().map(|(_, v)| v.as_str()) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return error_reply(400, "`all` is `true` or `false`"),
        },
        Err(e) => return error_reply(400, e),
    };
    match shared.sluice.escalations().list(!all) {
        Ok(list) => {
            let rows: Vec<Value> = list.iter().map(summary).collect();
            json_reply(200, &json!({"all": all, "escalations": rows}))
        }
        Err(e) => journal_failed(&e),
    }
}

/// One escalation's case and its decisions.
pub(super) fn show(shared: &Shared, raw_id: &str) -> Response<Body> {
    let id = match escalation_id(raw_id) {
        Ok(id) => id,
        Err(message) => return error_reply(400, message),
    };
    let EscalationCase {
        escalation: e,
        decisions,
        ..
    } = match shared.sluice.escalations().show(id) {
        Ok(case) => case,
        Err(e) => return refused(&e),
    };
    let decisions: Vec<Value> = decisions.iter().map(approval).collect();
    let (case, case_text) = match serde_json::from_str::<Value>(&e.case_json) {
        Ok(case) => (case, None),
        // An edited journal: shown as the text it holds, and said to be so.
        Err(_) => (Value::Null, Some(e.case_json.clone())),
    };
    let options: Vec<&str> = e.kind.options().iter().map(|c| c.name()).collect();
    let mut body = json!({
        "id": e.id,
        "kind": e.kind.name(),
        "state": state(&e),
        "task": e.task,
        "action_id": e.action_id,
        "created_ms": e.created_ms,
        "resolved_ms": e.resolved_ms,
        "options": options,
        "case": case,
        "decisions": decisions,
    });
    if let Some(text) = case_text {
        body["case_text"] = Value::String(text);
    }
    json_reply(200, &body)
}

/// A decision as the body of `POST /escalations/{id}/resolve`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveBody {
    option: String,
    by: String,
    #[serde(default)]
    note: String,
    #[serde(default)]
    operation_id: Option<String>,
}

/// Resolves an escalation with the decision in `body`, then carries out the decisions not
/// yet carried out.
pub(super) async fn resolve(shared: &Shared, raw_id: &str, body: Incoming) -> Response<Body> {
    let id = match escalation_id(raw_id) {
        Ok(id) => id,
        Err(message) => return error_reply(400, message),
    };
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return error_reply(413, format!("a decision is at most {MAX_BODY} bytes"));
        }
        Err(e) => return error_reply(400, format!("the request body: {e}")),
    };
    let asked: ResolveBody = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => {
            return error_reply(
                400,
                format!(
                    "the body must be JSON {{\"option\": \"...\", \"by\": \"...\", \"note\": \
                     \"...\", \"operation_id\": \"...\"}} (note and operation_id optional): {e}"
                ),
            );
        }
    };
    let Some(choice) = Choice::parse(&asked.option) else {
        let names: Vec<&str> = Choice::ALL.iter().map(|c| c.name()).collect();
        return error_reply(
            400,
            format!(
                "`{}` is not an option: use one of {} (GET /escalations/{id} lists the case's)",
                sluice::printable::printable_cut(&asked.option, 100),
                names.join(", ")
            ),
        );
    };
    let decision = Decision {
        choice,
        decided_by: asked.by,
        operation_id: asked.operation_id,
        note: asked.note,
    };
    let Resolved { recorded, applied } =
        match shared.sluice.escalations().resolve(id, &decision).await {
            Ok(r) => r,
            Err(e) => return refused(&e),
        };
    tracing::info!(
        escalation = id,
        decision = %recorded.summary(),
        "escalation resolved through the admin API"
    );
    let applied = match applied {
        Ok(outcomes) => outcomes,
        Err(e) => {
            return error_reply(
                500,
                format!(
                    "escalation {id}: the decision ({}) is recorded, but carrying it out failed: \
                     {}; the host carries it out at its next start",
                    recorded.summary(),
                    sluice::printable::printable(&e.to_string())
                ),
            );
        }
    };
    let applied: Vec<Value> = applied.iter().map(outcome).collect();
    let warning = choice
        .may_duplicate()
        .then_some("send-as-new may create a second side effect");
    json_reply(
        200,
        &json!({
            "escalation": id,
            "decision": approval(&recorded),
            "applied": applied,
            "warning": warning,
        }),
    )
}

/// The escalation id in the path, or why it is not one.
fn escalation_id(raw: &str) -> Result<i64, String> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        format!(
            "`{}` is not an escalation id: give the number GET /escalations lists",
            sluice::printable::printable_cut(raw, 100)
        )
    })
}

fn state(e: &Escalation) -> &'static str {
    if e.resolved_ms.is_some() {
        "resolved"
    } else {
        "open"
    }
}

/// One line of the list.
fn summary(e: &Escalation) -> Value {
    let case: Value = serde_json::from_str(&e.case_json).unwrap_or_default();
    json!({
        "id": e.id,
        "kind": e.kind.name(),
        "state": state(e),
        "task": e.task,
        "action_id": e.action_id,
        "action": case["action"],
        "reason": case["reason"],
        "created_ms": e.created_ms,
        "resolved_ms": e.resolved_ms,
    })
}

/// An approval record.
fn approval(a: &Approval) -> Value {
    json!({
        "id": a.id,
        "escalation_id": a.escalation_id,
        "kind": a.kind,
        "task": a.task,
        "action_id": a.action_id,
        "option": a.decision.choice.name(),
        "by": a.decision.decided_by,
        "note": a.decision.note,
        "operation_id": a.decision.operation_id,
        "at_ms": a.at_ms,
        "summary": a.summary(),
    })
}

/// What carrying out a decision did to one action.
fn outcome(o: &WriteOutcome) -> Value {
    let (name, status, escalation) = match o {
        WriteOutcome::Succeeded { response, .. } => {
            ("succeeded", response.as_ref().map(|r| r.status), None)
        }
        WriteOutcome::Failed { .. } => ("failed", None, None),
        WriteOutcome::Escalated { escalation, .. } => ("escalated", None, Some(*escalation)),
        WriteOutcome::Cancelled { .. } => ("cancelled", None, None),
        WriteOutcome::Refused { .. } => ("refused", None, None),
        WriteOutcome::Deferred { .. } => ("deferred", None, None),
    };
    let a = o.action();
    json!({
        "outcome": name,
        "task": a.task,
        "action": a.action,
        "state": a.state.name(),
        "attempts": a.attempts,
        "operation_id": a.operation_id,
        "status": status,
        "escalation": escalation,
    })
}

/// A journal refusal: what the operator asked cannot be done (400, 404, 409), or the
/// journal failed (500).
fn refused(e: &JournalError) -> Response<Body> {
    match refusal_status(e) {
        Some(status) => error_reply(status, sluice::printable::printable(&e.to_string())),
        None => journal_failed(e),
    }
}

/// The status of an operator's request the escalations door refused (400, 404, 409), the
/// same for the admin API and the console; `None` when the journal failed.
pub(crate) fn refusal_status(e: &JournalError) -> Option<u16> {
    Some(match Escalations::refusal(e)? {
        Refusal::Invalid => 400,
        Refusal::NoSuchCase => 404,
        Refusal::AlreadyResolved => 409,
        _ => return None,
    })
}

fn journal_failed(e: &JournalError) -> Response<Body> {
    error_reply(
        500,
        format!(
            "the journal: {}",
            sluice::printable::printable(&e.to_string())
        ),
    )
}
