//! The case a person is asked to decide: everything needed to decide without reading
//! logs, and nothing secret — no body, no credential, no header but quota headers.

use serde::{Deserialize, Serialize};

use super::request::StoredRequest;
use super::{WriteError, Writes};
use crate::execute::Terminal;
use crate::headers::field_pairs;
use crate::journal::escalations::Kind;
use crate::journal::{Action, AttemptRecord};

/// One option a person may choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseOption {
    /// Its name (`sluice escalations resolve ID --option NAME`).
    pub name: String,
    /// What it does.
    pub does: String,
    /// Whether it can create a second side effect.
    pub may_create_second_side_effect: bool,
}

/// What was spent before the escalation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseSpent {
    /// Attempts sent for the action, over all runs.
    pub attempts: u32,
    /// Time the last call waited between attempts, in milliseconds.
    pub waited_ms: u64,
    /// The call's time budget, in milliseconds.
    pub time_budget_ms: Option<u64>,
    /// Whether any attempt was sent.
    pub sent: bool,
    /// Whether any attempt got an answer.
    pub answered: bool,
}

/// A sanitized escalation case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    /// What must be decided (`uncertain_write`, `time_budget`).
    pub kind: String,
    /// Why a person is asked.
    pub reason: String,
    /// The task's goal.
    pub goal: String,
    /// The task.
    pub task: String,
    /// The logical action.
    pub action: String,
    /// The provider.
    pub provider: String,
    /// The endpoint, as a route template (no ids, no query).
    pub endpoint: String,
    /// The HTTP method.
    pub method: String,
    /// The scope: the credential's label and the narrower scopes it charges.
    pub scope: String,
    /// The tenant.
    pub tenant: String,
    /// The request's fingerprint: the SHA-256 of its body (the body itself is not shown).
    pub fingerprint: String,
    /// The idempotency key sent with every attempt.
    pub idempotency_key: String,
    /// The client reference.
    pub client_reference: String,
    /// The provider's operation id, if one came back.
    pub operation_id: Option<String>,
    /// The status query that was (or would have been) sent.
    pub reconciliation_query: Option<String>,
    /// Every attempt: time, status, `Retry-After`.
    pub attempts: Vec<AttemptRecord>,
    /// The last answer's `Retry-After` and rate-limit headers.
    pub limit_headers: Vec<(String, String)>,
    /// What was spent.
    pub spent: CaseSpent,
    /// The options.
    pub options: Vec<CaseOption>,
}

/// Whether a response header says something about limits (and nothing else).
fn is_limit_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "retry-after"
        || n == "retry-after-ms"
        || n.starts_with("ratelimit")
        || n.starts_with("x-ratelimit")
        || n.starts_with("anthropic-ratelimit")
}

/// Builds the case about `action`.
pub(super) fn build(
    writes: &Writes,
    action: &Action,
    kind: Kind,
    reason: &str,
    terminal: Option<&Terminal>,
    query: Option<String>,
) -> Result<Case, WriteError> {
    let stored = StoredRequest::load(action)?;
    let mut scope = format!("{}/{}", action.provider, stored.credential);
    for s in &stored.scopes {
        scope.push_str(" + ");
        scope.push_str(s);
    }
    let limit_headers = terminal
        .and_then(|t| t.last_response.as_ref())
        .map(|r| {
            field_pairs(&r.headers)
                .filter(|(n, _)| is_limit_header(n))
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let attempts = writes.journal.attempts_of(action.id)?;
    Ok(Case {
        kind: kind.name().to_owned(),
        reason: reason.to_owned(),
        goal: action.goal.clone(),
        task: action.task.clone(),
        action: action.action.clone(),
        provider: action.provider.clone(),
        endpoint: action.route.clone(),
        method: action.method.clone(),
        scope,
        tenant: stored.tenant.clone(),
        fingerprint: format!("sha256:{}", action.body_sha256),
        idempotency_key: action.idempotency_key.clone(),
        client_reference: action.client_reference.clone(),
        operation_id: action.operation_id.clone(),
        reconciliation_query: query,
        spent: CaseSpent {
            attempts: action.attempts,
            waited_ms: terminal.map_or(0, |t| {
                u64::try_from(t.waited.as_millis()).unwrap_or(u64::MAX)
            }),
            time_budget_ms: stored.deadline_ms,
            sent: action.attempts > 0,
            answered: attempts.iter().any(|a| a.status.is_some()),
        },
        attempts,
        limit_headers,
        options: kind
            .options()
            .iter()
            .map(|c| CaseOption {
                name: c.name().to_owned(),
                does: c.describe().to_owned(),
                may_create_second_side_effect: c.may_duplicate(),
            })
            .collect(),
    })
}
