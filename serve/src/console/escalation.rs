//! One escalation in the console: its sanitized case, its decisions, and a form with the
//! options the case offers; deciding, and asking to see the body.
//!
//! A decision is the library's, as the admin API's and the CLI's are: recorded in the
//! journal ([`sluice::Escalations::resolve`]), with the signed-in operator's name as who
//! decided — never a name typed in the form — then carried out at once and copied into the
//! audit log ([`sluice::Escalations::apply`]). Showing the body is recorded first
//! ([`sluice::Escalations::disclose_body`], as `sluice escalations show --body --by`
//! does) and copied into the audit log before the body is sent; it is asked for by a POST
//! carrying the session's CSRF token, so no link or image elsewhere can reveal it.

use std::fmt::Write as _;

use hyper::Response;
use serde_json::Value;
use sluice::printable::printable;
use sluice::writes::WriteOutcome;
use sluice::{BodyError, Choice, Decision, Escalation, EscalationCase, JournalError, Resolved};

use super::form::Form;
use super::html::{escape, page, problem};
use super::session::Session;
use crate::Shared;
use crate::reply::Body;

/// How the console names each option: the words of the safe-retries design.
pub(crate) fn label(choice: Choice) -> &'static str {
    match choice {
        Choice::QueryExisting => "Query the provider",
        Choice::RetrySameKey => "Send with the same key",
        Choice::Cancel => "Cancel",
        Choice::SendAsNew => "Approve this action once, as a new operation",
        Choice::ContinueAccess => "Approve continued access",
        Choice::Wait => "Wait",
        Choice::RaiseQuota => "Raise the quota",
        Choice::ChangePlan => "Change the plan",
        Choice::RaiseBudget => "Raise the budget",
    }
}

/// The escalation id in the path, or why it is not one.
pub(crate) fn id_of(raw: &str) -> Result<i64, String> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| format!("`{}` is not an escalation id", printable(raw)))
}

/// What the journal's refusal means for the person: the status and the message.
fn refused(e: &JournalError) -> (u16, String) {
    let status = crate::admin::escalations::refusal_status(e).unwrap_or(500);
    (status, printable(&e.to_string()).into_owned())
}

/// `GET /console/escalations/{id}`: the case, its decisions, and the options.
pub(crate) fn show(shared: &Shared, session: &Session, id: i64) -> Response<Body> {
    case_page(shared, session, id, "")
}

/// The case's page, with `notice` (HTML) above it.
fn case_page(shared: &Shared, session: &Session, id: i64, notice: &str) -> Response<Body> {
    match view(shared, session, id, notice) {
        Ok(html) => page(
            200,
            &format!("Escalation {id}"),
            Some(session),
            &html,
            false,
        ),
        Err((status, message)) => problem(status, Some(session), &message),
    }
}

/// The escalation's section: `notice` (HTML) first.
fn view(
    shared: &Shared,
    session: &Session,
    id: i64,
    notice: &str,
) -> Result<String, (u16, String)> {
    let EscalationCase {
        escalation: e,
        decisions,
        ..
    } = shared
        .sluice
        .escalations()
        .show(id)
        .map_err(|e| refused(&e))?;
    let open = e.resolved_ms.is_none();
    let mut html = format!(
        r#"<section id="escalation" data-id="{id}"><h1>Escalation {id}: {kind}, <span id="state">{state}</span></h1>{notice}
<p>Task <b>{task}</b>, raised at <span class="time" data-ms="{created}">{created} ms</span>.</p>"#,
        kind = escape(e.kind.name()),
        state = if open { "open" } else { "resolved" },
        task = escape(&e.task),
        created = e.created_ms,
    );
    html.push_str(&case(&e));
    if !decisions.is_empty() {
        html.push_str(r#"<h2>Decisions</h2><ul id="decisions">"#);
        for a in &decisions {
            let _ = write!(
                html,
                r#"<li class="decision">{} <span class="by">by {}</span>{}</li>"#,
                escape(label(a.decision.choice)),
                escape(&a.decision.decided_by),
                escape(&a.note_after(": "))
            );
        }
        html.push_str("</ul>");
    }
    if open {
        html.push_str(&options_form(&e, session));
    }
    if e.action_id.is_some() {
        let _ = write!(
            html,
            r#"<h2>The action's body</h2><p>The case above never holds the body. Showing it is
recorded, with your name, in the journal and the audit log.</p>
<form method="post" action="/console/escalations/{id}/body">
<input type="hidden" name="csrf" value="{csrf}">
<button type="submit" id="show-body">Show the body (recorded)</button></form>"#,
            csrf = escape(&session.csrf)
        );
    }
    html.push_str("</section>");
    Ok(html)
}

/// The sanitized case, field by field.
fn case(e: &Escalation) -> String {
    let mut html = String::from(r#"<h2>The case</h2><dl id="case">"#);
    match serde_json::from_str::<Value>(&e.case_json) {
        Ok(Value::Object(fields)) => {
            for (name, value) in fields {
                let text = match value {
                    Value::String(s) => s,
                    Value::Null => continue,
                    v => serde_json::to_string_pretty(&v).unwrap_or_default(),
                };
                let _ = write!(
                    html,
                    "<dt>{}</dt><dd><pre>{}</pre></dd>",
                    escape(&name),
                    escape(&printable(&text))
                );
            }
        }
        // An edited journal: shown as the text it holds, and said to be so.
        _ => {
            let _ = write!(
                html,
                "<dt>(not JSON)</dt><dd><pre>{}</pre></dd>",
                escape(&printable(&e.case_json))
            );
        }
    }
    html.push_str("</dl>");
    html
}

/// The decision form: one radio button per option the case offers.
fn options_form(e: &Escalation, session: &Session) -> String {
    let mut html = format!(
        r#"<h2>Decide</h2><form method="post" action="/console/escalations/{id}/resolve" id="decide">
<input type="hidden" name="csrf" value="{csrf}"><fieldset>"#,
        id = e.id,
        csrf = escape(&session.csrf),
    );
    for choice in e.kind.options() {
        let warn = if choice.may_duplicate() { " warn" } else { "" };
        let _ = write!(
            html,
            r#"<label class="option{warn}"><input type="radio" name="option" value="{name}" id="option-{name}" required>
<b>{label}</b> <code>{name}</code><br><small>{describe}</small></label>"#,
            name = choice.name(),
            label = escape(label(*choice)),
            describe = escape(choice.describe()),
        );
    }
    html.push_str("</fieldset>");
    if e.kind.options().iter().any(|c| c.takes_operation_id()) {
        html.push_str(
            r#"<label>Operation id found at the provider (query only, optional)
<input type="text" name="operation_id" id="operation_id"></label>"#,
        );
    }
    let _ = write!(
        html,
        r#"<label>Note (why, one line) <input type="text" name="note" id="note" maxlength="1000"></label>
<p>Decided by <b>{who}</b> (your sign-in).</p><button type="submit" id="submit-decision">Record the decision</button></form>"#,
        who = escape(&session.operator)
    );
    html
}

/// `POST /console/escalations/{id}/resolve`: records the decision under the operator's
/// name, carries it out, and shows what it did.
pub(crate) async fn resolve(
    shared: &Shared,
    session: &Session,
    id: i64,
    form: &Form,
) -> Response<Body> {
    let Some(choice) = form.get("option").and_then(Choice::parse) else {
        return problem(
            400,
            Some(session),
            "choose one of the options the case offers",
        );
    };
    let decision = Decision {
        choice,
        decided_by: session.operator.clone(),
        operation_id: form
            .get("operation_id")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        note: form.get("note").unwrap_or("").trim().to_owned(),
    };
    let Resolved {
        recorded,
        applied: outcomes,
    } = match shared.sluice.escalations().resolve(id, &decision).await {
        Ok(r) => r,
        Err(e) => {
            let (status, message) = refused(&e);
            return problem(status, Some(session), &message);
        }
    };
    tracing::info!(
        escalation = id,
        decision = %recorded.summary(),
        "escalation resolved through the console"
    );
    let mut notice = format!(
        r#"<div class="notice" id="notice"><p id="recorded">Recorded: {}{}.</p>"#,
        escape(&recorded.summary()),
        escape(&recorded.note_after(": "))
    );
    match outcomes {
        Ok(outcomes) => {
            for o in &outcomes {
                let _ = write!(notice, r#"<p class="applied">{}</p>"#, escape(&applied(o)));
            }
        }
        Err(e) => {
            let _ = write!(
                notice,
                r#"<p class="error">Carrying it out failed: {}; the host carries it out at its next start.</p>"#,
                escape(&printable(&e.to_string()))
            );
        }
    }
    if choice.may_duplicate() {
        notice.push_str(r#"<p class="error">send-as-new may create a second side effect.</p>"#);
    }
    notice.push_str("</div>");
    case_page(shared, session, id, &notice)
}

/// What carrying out a decision did to one action, in words.
fn applied(o: &WriteOutcome) -> String {
    let a = o.action();
    let what = match o {
        WriteOutcome::Succeeded { .. } => "succeeded".to_owned(),
        WriteOutcome::Failed { .. } => "failed".to_owned(),
        WriteOutcome::Escalated { escalation, .. } => format!("escalated again ({escalation})"),
        WriteOutcome::Cancelled { .. } => "cancelled".to_owned(),
        WriteOutcome::Refused { .. } => "refused before it was sent".to_owned(),
        WriteOutcome::Deferred { .. } => "deferred".to_owned(),
    };
    format!(
        "{}/{}: {what} after {} attempts{}",
        printable(&a.task),
        printable(&a.action),
        a.attempts,
        a.operation_id
            .as_deref()
            .map(|o| format!(", operation {}", printable(o)))
            .unwrap_or_default()
    )
}

/// `POST /console/escalations/{id}/body`: records that the operator asked, copies the
/// record into the audit log, then shows the body (escaped).
pub(crate) fn body(shared: &Shared, session: &Session, id: i64) -> Response<Body> {
    let body = match shared
        .sluice
        .escalations()
        .disclose_body(id, &session.operator)
    {
        Ok(b) => b,
        Err(BodyError::Journal(e)) => {
            let (status, message) = refused(&e);
            return problem(status, Some(session), &message);
        }
        Err(e) => return problem(500, Some(session), &printable(&e.to_string())),
    };
    tracing::info!(escalation = id, operator = %printable(&session.operator), "an action's body was shown through the console");
    let html = format!(
        r#"<section><h1>Escalation {id}: the action's body</h1>
<p class="notice">Shown to <b>{who}</b>; this is recorded in the journal and the audit log.</p>
<pre id="body">{body}</pre><p><a href="/console/escalations/{id}">Back to the escalation</a></p></section>"#,
        who = escape(&session.operator),
        body = escape(&printable(&String::from_utf8_lossy(&body))),
    );
    page(
        200,
        &format!("Escalation {id}: body"),
        Some(session),
        &html,
        false,
    )
}
