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
        (_, Some("overloaded_error")) | (529, _) => Kind::Overloaded,
        (_, Some("rate_limit_error")) => Kind::RateLimited,
        (_, Some("authentication_error" | "permission_error")) => Kind::AuthError,
        (s, _) => generic::status_kind(s),
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
    }
}
