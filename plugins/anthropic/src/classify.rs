//! Reading Anthropic responses.

use sluice_plugin_sdk::generic::{self, Kind};
use sluice_plugin_sdk::retry_after::retry_after_any_ms;
use sluice_plugin_sdk::{
    Classification, Outcome, Request, default_classify, headers, json, verdict,
};

use crate::quota::exhausted_reset_ms;

/// Classifies one attempt.
pub fn classify(req: &Request, outcome: &Outcome) -> Classification {
    let Outcome::Response(resp) = outcome else {
        return default_classify(req, outcome);
    };
    let h = headers(&resp.headers);
    let code = json::error_body(&resp.body)
        .and_then(|e| e.kind().map(json::normalize_code))
        .filter(|c| !c.is_empty());
    let kind = match (resp.status, code.as_deref()) {
        (529, _) => Kind::Overloaded,
        (s, Some(code)) => kind_of(code).unwrap_or_else(|| generic::status_kind(s)),
        (s, None) => generic::status_kind(s),
    };
    let mut retry_after_ms = retry_after_any_ms(&h, req.now_ms);
    if kind == Kind::RateLimited && retry_after_ms.is_none() {
        retry_after_ms = exhausted_reset_ms(&h, req.now_ms);
    }
    Classification {
        verdict: verdict(kind),
        retry_after_ms,
        error_code: code,
        should_retry: h.get_bool("x-should-retry"),
        scope: None,
    }
}

/// The kind an error type names when it decides more than the status does.
fn kind_of(code: &str) -> Option<Kind> {
    match code {
        "overloaded_error" => Some(Kind::Overloaded),
        "rate_limit_error" => Some(Kind::RateLimited),
        "authentication_error" | "permission_error" => Some(Kind::AuthError),
        _ => None,
    }
}

/// The classification of a stream that sent an `error` event after its success status:
/// the error's type decides (an `api_error` or an unknown type is transient; a stream that
/// broke off is not a success), and names the code.
pub fn stream_error(mut c: Classification, error_type: &str) -> Classification {
    let code = json::normalize_code(error_type);
    let kind = kind_of(&code).unwrap_or(match code.as_str() {
        "invalid_request_error" | "not_found_error" | "request_too_large" => Kind::ClientError,
        _ => Kind::Transient,
    });
    c.verdict = verdict(kind);
    c.error_code = Some(code).filter(|c| !c.is_empty());
    c
}
