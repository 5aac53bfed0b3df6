//! Reading OpenAI responses.

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
    let code = error_code(&resp.body);
    let mut kind = generic::status_kind(resp.status);
    if resp.status == 429 && code.as_deref() == Some("insufficient_quota") {
        kind = Kind::QuotaExhausted;
    }
    let retry_after_ms = match kind {
        // A billing quota does not come back in seconds: no short delay to offer.
        Kind::QuotaExhausted => None,
        Kind::RateLimited => retry_after_any_ms(&h, req.now_ms).or_else(|| exhausted_reset_ms(&h)),
        _ => retry_after_any_ms(&h, req.now_ms),
    };
    Classification {
        verdict: verdict(kind),
        retry_after_ms,
        error_code: code,
        should_retry: h.get_bool("x-should-retry"),
    }
}

/// `error.code`, else `error.type`, normalized.
fn error_code(body: &[u8]) -> Option<String> {
    let e = json::error_body(body)?;
    e.code()
        .or(e.kind())
        .map(json::normalize_code)
        .filter(|c| !c.is_empty())
}
