//! The vector file format (`PLUGIN-VECTORS.md`), read strictly: an unknown field, a wrong
//! type or an unknown verdict is an error that names the file, the case and the field.

use serde::Deserialize;

use crate::policy::{
    Dimension, Outcome, Request, RequestClass, Response, TransportFailure, Verdict,
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
    pub body: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResponse {
    pub status: u16,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub body: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub verdict: Option<String>,
    #[serde(default, deserialize_with = "present")]
    pub retry_after_ms: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub error_code: Option<Option<String>>,
    pub observations: Option<Vec<ExpectedObservation>>,
    #[serde(default)]
    pub observations_exact: bool,
    pub tolerance_ms: Option<u64>,
}

/// One expected observation: only the fields present are checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedObservation {
    /// The dimension's name (`requests`, `tokens`, `input-tokens`, ...).
    pub dimension: String,
    /// The scope, when checked (`null` expects none).
    #[serde(default, deserialize_with = "present")]
    pub scope: Option<Option<String>>,
    /// The limit, when checked.
    #[serde(default, deserialize_with = "present")]
    pub limit: Option<Option<u64>>,
    /// The remaining amount, when checked.
    #[serde(default, deserialize_with = "present")]
    pub remaining: Option<Option<u64>>,
    /// The used amount, when checked.
    #[serde(default, deserialize_with = "present")]
    pub used: Option<Option<u64>>,
    /// Milliseconds until reset, when checked.
    #[serde(default, deserialize_with = "present")]
    pub reset_after_ms: Option<Option<u64>>,
    /// The window length, when checked.
    #[serde(default, deserialize_with = "present")]
    pub window_ms: Option<Option<u64>>,
    /// The source, when checked.
    pub source: Option<String>,
    /// Allowed difference for durations, overriding the case's.
    pub tolerance_ms: Option<u64>,
}

/// A field that is present (even as `null`) deserializes to `Some(value)`; an absent one
/// stays `None` through `#[serde(default)]`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A case, validated and turned into the host's types.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case's name.
    pub name: String,
    /// The request.
    pub request: Request,
    /// The outcome of the attempt.
    pub outcome: Outcome,
    /// What must be concluded.
    pub expect: Expect,
}

/// A case's expectations.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The verdict, when checked.
    pub verdict: Option<Verdict>,
    /// The requested delay, when checked (`Some(None)`: none expected).
    pub retry_after_ms: Option<Option<u64>>,
    /// The error code, when checked (`Some(None)`: none expected).
    pub error_code: Option<Option<String>>,
    /// Expected observations, when checked.
    pub observations: Option<Vec<ExpectedObservation>>,
    /// Whether reported observations beyond the expected ones fail the case.
    pub observations_exact: bool,
    /// Allowed difference for durations computed from dates.
    pub tolerance_ms: u64,
}

impl Expect {
    /// Whether `classify` must be called.
    pub fn checks_classification(&self) -> bool {
        self.verdict.is_some() || self.retry_after_ms.is_some() || self.error_code.is_some()
    }
}

/// Turns a raw case into a [`Case`], or names the field that is wrong.
pub(super) fn validate(raw: RawCase) -> Result<Case, String> {
    let now_ms = match &raw.now {
        None => DEFAULT_NOW_MS,
        Some(s) => sluice_plugin_sdk::time::parse_rfc3339_ms(s).ok_or_else(|| {
            format!("now: {s:?} is not an RFC 3339 timestamp (like 2026-11-29T12:00:00Z)")
        })?,
    };
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
    let request = Request {
        method: raw.request.method.to_ascii_uppercase(),
        url: raw.request.url,
        class,
        headers: headers("request.headers", &raw.request.headers)?,
        body: raw.request.body.into_bytes(),
        now_ms,
    };
    let outcome = match (raw.response, raw.transport) {
        (Some(r), None) => Outcome::Response(Response {
            status: r.status,
            headers: headers("response.headers", &r.headers)?,
            body: r.body.into_bytes(),
        }),
        (None, Some(t)) => Outcome::Transport(transport(&t)?),
        (Some(_), Some(_)) => return Err("response and transport: give one, not both".into()),
        (None, None) => return Err("response: missing (or give transport)".into()),
    };
    let verdict = raw.expect.verdict.as_deref().map(verdict).transpose()?;
    if let Some(obs) = &raw.expect.observations {
        if matches!(outcome, Outcome::Transport(_)) {
            return Err(
                "expect.observations: a transport failure has no response to read quotas from"
                    .into(),
            );
        }
        for (i, o) in obs.iter().enumerate() {
            if o.dimension.is_empty() {
                return Err(format!("expect.observations[{i}].dimension: empty"));
            }
        }
    }
    Ok(Case {
        name: raw.name,
        request,
        outcome,
        expect: Expect {
            verdict,
            retry_after_ms: raw.expect.retry_after_ms,
            error_code: raw.expect.error_code,
            observations: raw.expect.observations,
            observations_exact: raw.expect.observations_exact,
            tolerance_ms: raw.expect.tolerance_ms.or(raw.tolerance_ms).unwrap_or(0),
        },
    })
}

/// The pairs as a `fields` block; `field` names the JSON field in the error.
fn headers(field: &str, pairs: &[(String, String)]) -> Result<String, String> {
    crate::policy::encode_fields(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())))
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

/// The verdict named `name` in the vector format.
pub(super) fn verdict(name: &str) -> Result<Verdict, String> {
    VERDICTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = VERDICTS.iter().map(|(n, _)| *n).collect();
            format!(
                "expect.verdict: {name:?} is not one of {}",
                names.join(", ")
            )
        })
}

/// Vector names of the verdicts.
pub(super) const VERDICTS: &[(&str, Verdict)] = &[
    ("success", Verdict::Success),
    ("rate-limited", Verdict::RateLimited),
    ("quota-exhausted", Verdict::QuotaExhausted),
    ("overloaded", Verdict::Overloaded),
    ("transient", Verdict::Transient),
    ("conflict", Verdict::Conflict),
    ("client-error", Verdict::ClientError),
    ("auth-error", Verdict::AuthError),
    ("outcome-unknown", Verdict::OutcomeUnknown),
];

/// The vector name of a verdict.
pub fn verdict_name(v: Verdict) -> &'static str {
    VERDICTS
        .iter()
        .find(|(_, x)| *x == v)
        .map_or("?", |(n, _)| *n)
}

/// The vector name of a dimension.
pub fn dimension_name(d: &Dimension) -> &str {
    match d {
        Dimension::Requests => "requests",
        Dimension::Tokens => "tokens",
        Dimension::InputTokens => "input-tokens",
        Dimension::OutputTokens => "output-tokens",
        Dimension::Concurrency => "concurrency",
        Dimension::Other(n) => n,
    }
}
