//! Reading GitHub responses: telling rate limits apart from permission errors.

use sluice_plugin_sdk::generic::{self, Kind};
use sluice_plugin_sdk::retry_after::retry_after_ms;
use sluice_plugin_sdk::time::until;
use sluice_plugin_sdk::{
    Classification, Outcome, Request, default_classify, headers, json, verdict,
};

use crate::reset_at_ms;

/// The wait GitHub asks for after a secondary limit that names no `retry-after`.
pub const SECONDARY_DEFAULT_MS: u64 = 60_000;

/// Classifies one attempt.
pub fn classify(req: &Request, outcome: &Outcome) -> Classification {
    let Outcome::Response(resp) = outcome else {
        return default_classify(req, outcome);
    };
    let h = headers(&resp.headers);
    let message = json::error_body(&resp.body)
        .and_then(|e| e.message.map(|m| m.to_ascii_lowercase()))
        .unwrap_or_default();
    let retry_after = retry_after_ms(&h, req.now_ms);
    let exhausted = h.get_u64("x-ratelimit-remaining") == Some(0);
    let limited_status = matches!(resp.status, 403 | 429);
    let secondary =
        limited_status && (retry_after.is_some() || message.contains("secondary rate limit"));
    let primary =
        limited_status && !secondary && (exhausted || message.contains("rate limit exceeded"));
    let (kind, delay, code) = if secondary {
        (
            Kind::RateLimited,
            Some(retry_after.unwrap_or(SECONDARY_DEFAULT_MS)),
            Some("secondary_rate_limit"),
        )
    } else if primary {
        let reset = reset_at_ms(&h).map(|at| until(at, req.now_ms));
        (
            Kind::RateLimited,
            retry_after.or(reset),
            Some("primary_rate_limit"),
        )
    } else {
        (generic::status_kind(resp.status), retry_after, None)
    };
    Classification {
        verdict: verdict(kind),
        retry_after_ms: delay,
        error_code: code.map(str::to_owned),
        should_retry: None,
        scope: None,
    }
}
