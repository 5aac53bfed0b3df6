//! Answers to agents: the provider's own answer passed back, or — for a call that ended
//! without success — the provider's error shape with sluice's account in it: why the call
//! ended, the next safe action, attempts and time waited.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use sluice::contract;
use sluice::contract::ErrorShape;
use sluice::execute::{NextAction, Reason, Terminal};
use sluice::writes::WriteOutcome;

use crate::hints;
use crate::shape::SluiceError;

/// What the body of an answer may fail with (a stream that broke off).
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;
/// The body of an answer.
pub type Body = BoxBody<Bytes, BodyError>;

/// `response`, keeping `kept` until its body has been sent or dropped.
pub fn keeping<T: Send + Sync + 'static>(response: Response<Body>, kept: T) -> Response<Body> {
    response.map(|body| {
        body.map_frame(move |frame| {
            let _ = &kept;
            frame
        })
        .boxed()
    })
}

/// A whole body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// Headers a proxy never passes on (RFC 9110 §7.6.1), and the length, which hyper sets.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "host"
    )
}

/// Whether a request header is passed on to the provider: neither hop-by-hop nor a
/// routing header ([`sluice::headers::is_routing`]: a client's address, a proxy's route).
pub fn forwarded(name: &str) -> bool {
    // The body is read by the provider's plugin: it must come back unencoded.
    !hop_by_hop(name) && name != "accept-encoding" && !sluice::headers::is_routing(name)
}

/// Whether a provider's answer header is held back from the agent: hop-by-hop, or a cookie
/// the provider sets (`set-cookie`), which would be the sidecar's session with the provider,
/// not the agent's.
fn held_back(name: &str) -> bool {
    hop_by_hop(name) || name == "set-cookie" || name == "set-cookie2"
}

/// A header value of visible ASCII, at most `max` characters (others become `?`).
fn header_text(text: &str, max: usize) -> HeaderValue {
    let s: String = text
        .chars()
        .take(max)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    HeaderValue::from_str(&s).unwrap_or_else(|_| HeaderValue::from_static("?"))
}

/// A response of `status` with `body`, and the provider's headers from a `fields` block.
/// Each value is a slice of the block, not a copy of its own.
pub fn with_fields(status: u16, fields: Bytes, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let h = r.headers_mut();
    let Ok(text) = std::str::from_utf8(&fields) else {
        return r;
    };
    for (name, value) in sluice::headers::field_pairs(text) {
        // Lower case, as every name `HeaderName` makes.
        let Ok(name) = HeaderName::from_bytes(name.trim().as_bytes()) else {
            continue;
        };
        if held_back(name.as_str()) {
            continue;
        }
        if let Ok(v) = HeaderValue::from_maybe_shared(fields.slice_ref(value.trim().as_bytes())) {
            h.append(name, v);
        }
    }
    r
}

/// Adds the attempts and the time waited to an answer.
pub fn tally(r: &mut Response<Body>, attempts: u32, waited: Duration) {
    let h = r.headers_mut();
    h.insert(hints::ATTEMPTS, number(u64::from(attempts)));
    h.insert(
        hints::WAITED_MS,
        number(u64::try_from(waited.as_millis()).unwrap_or(u64::MAX)),
    );
}

/// `n` as a header value; the numbers nearly every answer carries (one attempt, no wait)
/// without an allocation.
fn number(n: u64) -> HeaderValue {
    const SMALL: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    usize::try_from(n)
        .ok()
        .and_then(|i| SMALL.get(i))
        .map_or_else(|| HeaderValue::from(n), |s| HeaderValue::from_static(s))
}

/// The provider's answer, passed back.
pub fn provider(resp: contract::Response, attempts: u32, waited: Duration) -> Response<Body> {
    let mut r = with_fields(resp.status, Bytes::from(resp.headers), full(resp.body));
    tally(&mut r, attempts, waited);
    r
}

/// One of the sidecar's own errors, in `shape`.
pub fn error(shape: ErrorShape, e: &SluiceError) -> Response<Body> {
    let mut r = Response::new(full(e.body(shape)));
    *r.status_mut() = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_GATEWAY);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = e.retry_after {
        r.headers_mut()
            .insert(hyper::header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if shape == ErrorShape::Aws {
        // What an AWS SDK reads to decide on a retry, before the body.
        r.headers_mut().insert(
            "x-amzn-errortype",
            HeaderValue::from_static(crate::shape::aws_error_type(e.status)),
        );
    }
    if e.close {
        r.headers_mut()
            .insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

/// The next action's name (`retry-later`) and how long to wait first, if known.
pub fn next_action(next: &NextAction) -> (&'static str, Option<Duration>) {
    (next.name(), next.after())
}

/// The status an agent sees for a call that ended: the provider's, when it answered with
/// an error; else what the reason means in HTTP.
fn status_of(t: &Terminal) -> u16 {
    if let Some(s) = t.last_status.filter(|s| *s >= 400) {
        return s;
    }
    match &t.reason {
        Reason::OutOfTime(_) => 504,
        Reason::Cancelled => 409,
        Reason::UnknownProvider(_) => 404,
        Reason::UnknownCredential { .. } | Reason::NotRecorded(_) => 500,
        // The operator has not priced the model: a configuration the agent cannot fix.
        Reason::Unpriced(_) => 403,
        // The agent's request, as it is, is not sent: it must change it.
        Reason::Malformed(_) => 400,
        // The tenant's budget is spent until its reset: a quota refusal.
        Reason::BudgetSpent(_) => 429,
        Reason::Refused(_)
        | Reason::BreakerOpen(_)
        | Reason::ScopeRetriesFull { .. }
        | Reason::TaskBudgetExhausted { .. } => 503,
        // No answer, or one the plugin read as a failure: the gateway failed.
        Reason::Stopped(_) => 502,
        // A reason this sidecar does not know yet: the host's failure, not the agent's.
        _ => 500,
    }
}

/// sluice's account of a call that ended.
fn account(t: &Terminal) -> Value {
    let (next, after) = next_action(&t.next_action);
    json!({
        "reason": sluice::printable::printable(&t.reason.to_string()),
        "next_action": next,
        "retry_after_ms": after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        "attempts": t.attempts,
        "waited_ms": u64::try_from(t.waited.as_millis()).unwrap_or(u64::MAX),
        "sent": t.sent,
        "last_status": t.last_status,
        "provider_error_code": t.error_code,
        "transport_error": t.transport_error,
    })
}

/// The provider's own error body with `account` put in it (under the error object, where
/// the shape has one), when the body is a JSON object.
fn annotated(shape: ErrorShape, body: &[u8], account: &Value) -> Option<String> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    let obj = v.as_object_mut()?;
    let target = match shape {
        ErrorShape::GitHub | ErrorShape::Aws => obj,
        _ => obj.get_mut("error")?.as_object_mut()?,
    };
    target.insert("sluice".into(), account.clone());
    Some(v.to_string())
}

/// The answer to a call that ended without success: the provider's error (its status, its
/// headers, its body with sluice's account in it) when it answered with one, else a
/// `call_ended` error in its shape; with the reason and the next action as headers.
pub fn ended(shape: ErrorShape, t: &Terminal) -> Response<Body> {
    let status = status_of(t);
    let account = account(t);
    let (next, after) = next_action(&t.next_action);
    let from_provider = t
        .last_response
        .as_ref()
        .filter(|r| r.status >= 400)
        .and_then(|r| Some((r, annotated(shape, &r.body, &account)?)));
    let mut r = match from_provider {
        Some((resp, body)) => with_fields(
            resp.status,
            Bytes::copy_from_slice(resp.headers.as_bytes()),
            full(body),
        ),
        None => {
            let message = format!(
                "sluice: the call ended without success ({}); next: {next}",
                sluice::printable::printable(&t.reason.to_string())
            );
            error(
                shape,
                &SluiceError::new(status, "call_ended", message).detail(account),
            )
        }
    };
    told(&mut r, t, next, after);
    r
}

/// Tells, in `r`'s headers, how the call `t` went: its tally, its reason, its next action
/// (`next`) and how long to wait first (`after`).
fn told(r: &mut Response<Body>, t: &Terminal, next: &'static str, after: Option<Duration>) {
    tally(r, t.attempts, t.waited);
    let h = r.headers_mut();
    h.insert(hints::REASON, header_text(&t.reason.to_string(), 300));
    h.insert(hints::NEXT_ACTION, HeaderValue::from_static(next));
    if let Some(d) = after {
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        h.insert(hyper::header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    }
}

/// The answer to a write refused before its first byte: nothing was sent (`sent: false`
/// in the error's detail), and nothing will be unless the agent submits the same action
/// again. Said with the call's own status, tally and next action when this run made it.
fn refused(shape: ErrorShape, t: Option<&Terminal>, mut described: Value) -> Response<Body> {
    described["sent"] = Value::Bool(false);
    let why = t.map_or_else(
        || "it was refused before it was sent, earlier".to_owned(),
        |t| sluice::printable::printable(&t.reason.to_string()).into_owned(),
    );
    let message = format!(
        "sluice: the write was refused before it was sent ({why}); nothing was sent, and \
         nothing will be unless this action is submitted again"
    );
    let status = t.map_or(409, status_of);
    let mut r = error(
        shape,
        &SluiceError::new(status, "write_not_sent", message).detail(described),
    );
    if let Some(t) = t {
        let (next, after) = next_action(&t.next_action);
        told(&mut r, t, next, after);
    }
    r
}

/// The answer to a journaled write.
pub fn write(shape: ErrorShape, outcome: WriteOutcome) -> Response<Body> {
    let state = outcome.action().state.name();
    let action = outcome.action().clone();
    let described = json!({
        "task": action.task, "action": action.action, "state": state,
        "attempts": action.attempts, "operation_id": action.operation_id,
    });
    let mut r = match outcome {
        WriteOutcome::Succeeded {
            response: Some(resp),
            action,
            replayed,
        } => {
            // Done now, or before (an earlier submit, a run before a restart): the
            // provider's own answer either way, kept with the journal's action.
            let mut r = provider(*resp, action.attempts, Duration::ZERO);
            if replayed {
                r.headers_mut()
                    .insert("x-sluice-replayed", HeaderValue::from_static("true"));
            }
            r
        }
        WriteOutcome::Succeeded { action, .. } => {
            // Done longer ago than answers are kept, or settled by a status query: the
            // journal's account stands in for the answer.
            let body = json!({"id": action.operation_id, "object": "sluice.action",
                              "sluice": described});
            let mut r = Response::new(full(body.to_string()));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r.headers_mut()
                .insert("x-sluice-replayed", HeaderValue::from_static("true"));
            r
        }
        WriteOutcome::Failed {
            terminal: Some(t), ..
        }
        | WriteOutcome::Deferred {
            terminal: Some(t), ..
        } => ended(shape, &t),
        WriteOutcome::Refused { terminal, .. } => refused(shape, terminal.as_deref(), described),
        WriteOutcome::Failed { .. } => error(
            shape,
            &SluiceError::new(
                409,
                "write_failed",
                "sluice: this action was refused by the provider before; nothing of it happened",
            )
            .detail(described),
        ),
        WriteOutcome::Deferred { .. } => error(
            shape,
            &SluiceError::new(
                409,
                "write_held",
                "sluice: nothing was sent; the action's task waits for a person's decision \
                 (sluice escalations list)",
            )
            .detail(described),
        ),
        WriteOutcome::Escalated { escalation, .. } => {
            let mut r = error(
                shape,
                &SluiceError::new(
                    409,
                    "write_escalated",
                    format!(
                        "sluice: whether the write happened is not known yet and a person \
                         decides (escalation {escalation}); do not send it again under another \
                         action name"
                    ),
                )
                .detail(described),
            );
            r.headers_mut()
                .insert(hints::ESCALATION, HeaderValue::from(escalation));
            r
        }
        WriteOutcome::Cancelled { .. } => error(
            shape,
            &SluiceError::new(
                409,
                "write_cancelled",
                "sluice: the action or its task was cancelled; nothing more is sent for it",
            )
            .detail(described),
        ),
    };
    r.headers_mut()
        .insert(hints::ACTION_STATE, HeaderValue::from_static(state));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_providers_cookies_and_hop_by_hop_headers_stay_with_the_sidecar() {
        let fields = Bytes::from_static(
            b"content-type:application/json\nset-cookie:__cf_bm=abc; Path=/\nSet-Cookie2:x=1\n\
              connection:keep-alive\nx-request-id:req_1\n",
        );
        let r = with_fields(200, fields, full(""));
        let names: Vec<&str> = r.headers().keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["content-type", "x-request-id"]);
    }

    #[test]
    fn routing_headers_are_not_forwarded_and_the_others_are() {
        for name in [
            "x-forwarded-for",
            "forwarded",
            "cf-connecting-ip",
            "host",
            "connection",
        ] {
            assert!(!forwarded(name), "{name}");
        }
        for name in [
            "content-type",
            "anthropic-version",
            "idempotency-key",
            "user-agent",
        ] {
            assert!(forwarded(name), "{name}");
        }
    }

    #[test]
    fn a_number_reads_the_same_kept_or_made() {
        for n in [0, 1, 9, 10, 11, 250, u64::MAX] {
            assert_eq!(number(n), HeaderValue::from(n), "{n}");
        }
    }
}
