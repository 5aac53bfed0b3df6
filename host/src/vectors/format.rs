//! The vector file format (`docs/PLUGIN-VECTORS.md`), read strictly: an unknown field, a
//! wrong type or an unknown verdict is an error that names the file, the case and the field.
//! The case itself is here; what it expects is in `expect.rs`.

use serde::Deserialize;

use super::expect::{self, Expect, RawExpect};
use crate::contract::{
    ReportedDimension, Request, RequestClass, Response, ResponsePart, TransportFailure, WireOutcome,
};

/// The wall clock a case gets when it names none: the Unix epoch plus one day.
pub const DEFAULT_NOW_MS: i64 = 86_400_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCase {
    pub name: String,
    pub now: Option<String>,
    pub request: RawRequest,
    pub response: Option<RawResponse>,
    pub transport: Option<String>,
    pub part: Option<String>,
    pub at: Option<u64>,
    pub expect: RawExpect,
    pub tolerance_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequest {
    pub method: String,
    pub url: String,
    pub class: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub body: Option<String>,
    pub body_base64: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResponse {
    pub status: u16,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub body: Option<String>,
    pub body_base64: Option<String>,
}

/// A case, validated and turned into the host's types.
#[derive(Debug, Clone)]
pub struct VectorCase {
    /// The case's name.
    pub name: String,
    /// The request.
    pub request: Request,
    /// What the plugin is given besides the request.
    pub given: Given,
    /// What must be concluded.
    pub expect: Expect,
}

/// What a case gives the plugin besides its request.
#[derive(Debug, Clone)]
pub enum Given {
    /// An attempt's outcome, which `read-response` reads as `part` (`complete` unless the
    /// case says).
    Outcome {
        /// The outcome.
        outcome: WireOutcome,
        /// Which part of the answer it is.
        part: ResponsePart,
    },
    /// A stretch of a stream (a `stream-stretch` case), which `count-stream` counts.
    Stretch {
        /// Its offset in its stream (`at`).
        at: u64,
        /// Its bytes: the case's response body.
        bytes: Vec<u8>,
    },
}

/// Turns a raw case into a [`VectorCase`], or names the field that is wrong.
pub(super) fn validate(raw: RawCase) -> Result<VectorCase, String> {
    let now_ms = now_ms(raw.now.as_deref())?;
    let class = match raw.request.class.as_str() {
        "read" => RequestClass::Read,
        "idempotent-write" => RequestClass::IdempotentWrite,
        "uncertain-write" => RequestClass::UncertainWrite,
        other => {
            return Err(format!(
                "request.class: {other:?} is not one of read, idempotent-write, uncertain-write"
            ));
        }
    };
    if raw.request.method.is_empty() {
        return Err("request.method: empty".into());
    }
    let request = Request::new(
        raw.request.method.to_ascii_uppercase(),
        raw.request.url,
        class,
        headers("request.headers", &raw.request.headers)?,
        body("request", raw.request.body, raw.request.body_base64)?,
        now_ms,
    );
    let outcome = match (raw.response, raw.transport) {
        (Some(r), None) => WireOutcome::Response(response(r)?),
        (None, Some(t)) => WireOutcome::Transport(transport(&t)?),
        (Some(_), Some(_)) => return Err("response and transport: give one, not both".into()),
        (None, None) => return Err("response: missing (or give transport)".into()),
    };
    let part = match raw.part.as_deref() {
        None | Some("complete") => ResponsePart::Complete,
        Some("stream-start") => ResponsePart::StreamStart,
        Some("stream-end" | "stream-stretch") => ResponsePart::StreamEnd,
        Some(other) => {
            return Err(format!(
                "part: {other:?} is not one of complete, stream-start, stream-end, \
                 stream-stretch"
            ));
        }
    };
    let stretch = raw.part.as_deref() == Some("stream-stretch");
    if raw.at.is_some() && !stretch {
        return Err("at: only a stream-stretch case has an offset".into());
    }
    let has_response = matches!(outcome, WireOutcome::Response(_));
    if !has_response && part != ResponsePart::Complete {
        return Err(
            "part: a transport failure is read as complete (a stream needs a response)".into(),
        );
    }
    if stretch {
        expect::counted_only(&raw.expect)?;
    }
    let expect = expect::validate(raw.expect, has_response, raw.tolerance_ms)?;
    let given = match outcome {
        WireOutcome::Response(r) if stretch => Given::Stretch {
            at: raw.at.unwrap_or(0),
            bytes: r.body,
        },
        outcome => Given::Outcome { outcome, part },
    };
    Ok(VectorCase {
        name: raw.name,
        request,
        given,
        expect,
    })
}

/// The case's wall clock: `now` read as RFC 3339, or [`DEFAULT_NOW_MS`].
pub(super) fn now_ms(now: Option<&str>) -> Result<i64, String> {
    match now {
        None => Ok(DEFAULT_NOW_MS),
        Some(s) => sluice_plugin_sdk::time::parse_rfc3339_ms(s).ok_or_else(|| {
            format!("now: {s:?} is not an RFC 3339 timestamp (like 2026-11-29T12:00:00Z)")
        }),
    }
}

/// A case's `response`, validated.
pub(super) fn response(r: RawResponse) -> Result<Response, String> {
    if !(100..=599).contains(&r.status) {
        return Err(format!(
            "response.status: {} is not an HTTP status (100 to 599)",
            r.status
        ));
    }
    Ok(Response {
        status: r.status,
        headers: headers("response.headers", &r.headers)?,
        body: body("response", r.body, r.body_base64)?,
    })
}

/// A body given as text (`body`) or as bytes in base64 (`body_base64`, for a binary body
/// such as an AWS event-stream message), never both; none is empty. `of` names the object.
pub(super) fn body(
    of: &str,
    text: Option<String>,
    base64: Option<String>,
) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    match (text, base64) {
        (Some(_), Some(_)) => Err(format!(
            "{of}.body and {of}.body_base64: give one, not both"
        )),
        (Some(t), None) => Ok(t.into_bytes()),
        (None, Some(b)) => base64::engine::general_purpose::STANDARD
            .decode(b.trim())
            .map_err(|e| {
                format!("{of}.body_base64: not base64 (the standard alphabet, padded): {e}")
            }),
        (None, None) => Ok(Vec::new()),
    }
}

/// The pairs as a `fields` block; `field` names the JSON field in the error.
pub(super) fn headers(field: &str, pairs: &[(String, String)]) -> Result<String, String> {
    crate::headers::encode_fields(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())))
        .map_err(|e| format!("{field}: {e}"))
}

fn transport(t: &str) -> Result<TransportFailure, String> {
    Ok(match t {
        "connect-failed" => TransportFailure::ConnectFailed,
        "timeout-before-send" => TransportFailure::TimeoutBeforeSend,
        "timeout-after-send" => TransportFailure::TimeoutAfterSend,
        "reset-after-send" => TransportFailure::ResetAfterSend,
        other => {
            return Err(format!(
                "transport: {other:?} is not one of connect-failed, timeout-before-send, \
                 timeout-after-send, reset-after-send"
            ));
        }
    })
}

/// The vector name of a dimension.
pub fn dimension_name(d: &ReportedDimension) -> &str {
    match d {
        ReportedDimension::Requests => "requests",
        ReportedDimension::Tokens => "tokens",
        ReportedDimension::InputTokens => "input-tokens",
        ReportedDimension::OutputTokens => "output-tokens",
        ReportedDimension::Concurrency => "concurrency",
        ReportedDimension::Other(n) => n,
    }
}
