//! Reading Stripe responses.

use sluice_plugin_sdk::generic::{self, Kind};
use sluice_plugin_sdk::retry_after::retry_after_ms;
use sluice_plugin_sdk::{
    Classification, Outcome, Request, default_classify, headers, json, verdict,
};

/// Classifies one attempt.
pub fn classify(req: &Request, outcome: &Outcome) -> Classification {
    let Outcome::Response(resp) = outcome else {
        return default_classify(req, outcome);
    };
    let h = headers(&resp.headers);
    let body = json::error_body(&resp.body).unwrap_or_default();
    let err_type = body.kind();
    let code = body
        .code()
        .or(err_type)
        .map(json::normalize_code)
        .filter(|c| !c.is_empty());
    let kind = match (resp.status, code.as_deref(), err_type) {
        (429, Some("lock_timeout"), _) => Kind::Conflict,
        (409, Some("idempotency_key_in_use"), _) => Kind::Conflict,
        (_, _, Some("card_error")) | (402, _, _) => Kind::ClientError,
        (_, _, Some("idempotency_error")) => Kind::ClientError,
        (s, _, _) => generic::status_kind(s),
    };
    Classification {
        verdict: verdict(kind),
        retry_after_ms: retry_after_ms(&h, req.now_ms),
        error_code: code,
        should_retry: h.get_bool("stripe-should-retry"),
        scope: None,
    }
}
