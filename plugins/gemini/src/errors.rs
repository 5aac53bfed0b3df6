//! Reading Google's errors: `{"error": {"code", "message", "status", "details"}}`.
//!
//! Gemini sends no quota headers. What a spent quota is, and how long to wait, is only in a
//! 429's body (`RESOURCE_EXHAUSTED`):
//!
//! - `google.rpc.QuotaFailure` names each spent quota by its id
//!   (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`,
//!   `GenerateContentInputTokensPerModelPerMinute`), its size (`quotaValue`) and, for a
//!   model's quota, the model (`quotaDimensions.model`);
//! - `google.rpc.RetryInfo` gives a delay (`retryDelay: "22s"`).
//!
//! The quota's id decides, never the delay: a day's quota that is spent answers "retry in
//! 22s" too, and is back only at midnight Pacific time. So a spent daily quota is
//! `quota-exhausted` until that midnight, with an observation that holds its scope; a spent
//! minute's quota is `rate-limited` for the delay, with an observation of its size. A quota
//! counted per model holds the model's scope, one counted per project the credential.

use sluice_plugin_sdk::generic::{self, Kind};
use sluice_plugin_sdk::google::{GoogleError, QuotaViolation, google_error};
use sluice_plugin_sdk::midnight::{Zone, until_local_midnight};
use sluice_plugin_sdk::retry_after::retry_after_any_ms;
use sluice_plugin_sdk::time::MAX_DELAY_MS;
use sluice_plugin_sdk::{
    Classification, Dimension, LimitedScope, Observation, Outcome, Request, Response,
    default_classify, headers, json, observation, verdict,
};

use crate::route;

/// A minute, in milliseconds: the window of a quota whose id says `PerMinute`.
const MINUTE_MS: u64 = 60_000;
/// A day, in milliseconds: the window of a quota whose id says `PerDay`.
const DAY_MS: u64 = 86_400_000;

/// Classifies one attempt.
pub fn classify(req: &Request, outcome: &Outcome) -> Classification {
    let Outcome::Response(resp) = outcome else {
        return default_classify(req, outcome);
    };
    if (200..300).contains(&resp.status) {
        return default_classify(req, outcome);
    }
    let error = google_error(&resp.body);
    let code = error
        .as_ref()
        .and_then(|e| e.status.as_deref())
        .map(json::normalize_code)
        .filter(|c| !c.is_empty());
    let kind = match code.as_deref() {
        // Google answers a wrong API key 400 `INVALID_ARGUMENT`; its `ErrorInfo` says which.
        _ if error
            .as_ref()
            .is_some_and(|e| e.reasons.iter().any(|r| r == "API_KEY_INVALID")) =>
        {
            Kind::AuthError
        }
        Some("resource_exhausted") => Kind::RateLimited,
        Some("unavailable") => Kind::Overloaded,
        Some("deadline_exceeded" | "internal") => Kind::Transient,
        Some("unauthenticated" | "permission_denied") => Kind::AuthError,
        _ => generic::status_kind(resp.status),
    };
    let h = headers(&resp.headers);
    let mut c = Classification {
        verdict: verdict(kind),
        retry_after_ms: error
            .as_ref()
            .and_then(|e| e.retry_delay_ms)
            .or_else(|| retry_after_any_ms(&h, req.now_ms)),
        error_code: code,
        should_retry: None,
        scope: None,
    };
    if kind == Kind::RateLimited {
        limited(req, error.as_ref(), &mut c);
    }
    c
}

/// Which quota a 429 is about: a spent daily quota is exhausted until midnight Pacific time,
/// whatever short delay the error asks (at most a day, the contract's bound on a delay); a
/// 429 that names no quota holds the model the request asked for.
fn limited(req: &Request, error: Option<&GoogleError>, c: &mut Classification) {
    let violations = error.map_or(&[][..], |e| &e.quota_violations);
    if violations.iter().any(QuotaViolation::daily) {
        c.verdict = verdict(Kind::QuotaExhausted);
        c.retry_after_ms =
            Some(until_local_midnight(req.now_ms, Zone::UsPacific).min(MAX_DELAY_MS));
    }
    if violations.is_empty() {
        c.scope = route::scope(&route::of(&req.url)).map(LimitedScope::Named);
    }
}

/// The quotas a 429's body says are spent, each held until it is back: a day's until
/// midnight Pacific time, a minute's for the delay the error asks (else a minute).
pub fn observations(req: &Request, resp: &Response) -> Vec<Observation> {
    if resp.status != 429 {
        return Vec::new();
    }
    let Some(error) = google_error(&resp.body) else {
        return Vec::new();
    };
    let model_scope = route::scope(&route::of(&req.url));
    error
        .quota_violations
        .iter()
        .map(|v| {
            let id = v.id.as_deref().unwrap_or("");
            let mut o = observation(dimension_of(id), "body");
            o.scope = per_model(v).then(|| model_scope.clone()).flatten();
            o.limit = v.value;
            o.remaining = Some(0);
            if v.daily() {
                o.window_ms = Some(DAY_MS);
                o.reset_after_ms = Some(until_local_midnight(req.now_ms, Zone::UsPacific));
            } else {
                o.window_ms = id.contains("PerMinute").then_some(MINUTE_MS);
                o.reset_after_ms = Some(error.retry_delay_ms.unwrap_or(MINUTE_MS));
            }
            o
        })
        .collect()
}

/// What a quota counts, by its id: input or output tokens, tokens, else requests.
fn dimension_of(id: &str) -> Dimension {
    if id.contains("InputTokens") {
        Dimension::InputTokens
    } else if id.contains("OutputTokens") {
        Dimension::OutputTokens
    } else if id.contains("Tokens") {
        Dimension::Tokens
    } else {
        Dimension::Requests
    }
}

/// Whether a quota is counted per model: its id says so, or it names the model.
fn per_model(v: &QuotaViolation) -> bool {
    v.model.is_some() || v.id.as_deref().is_some_and(|id| id.contains("Model"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::Verdict;
    use sluice_plugin_sdk::test::{request_at, response};

    const URL: &str =
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent";

    fn error_429(quota_id: &str, delay: &str) -> String {
        format!(
            r#"{{"error": {{"code": 429, "message": "You exceeded your current quota.",
              "status": "RESOURCE_EXHAUSTED", "details": [
                {{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                  {{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                   "quotaId": "{quota_id}",
                   "quotaDimensions": {{"location": "global", "model": "gemini-2.0-flash"}},
                   "quotaValue": "200"}}]}},
                {{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "{delay}"}}]}}}}"#
        )
    }

    // 2026-12-06 20:00 UTC is 12:00 in Los Angeles (PST): midnight is 12 hours away.
    const NOON_PACIFIC_MS: i64 = 1_796_587_200_000;

    #[test]
    fn a_spent_daily_quota_holds_its_model_until_midnight_pacific_not_for_the_delay() {
        let req = request_at(NOON_PACIFIC_MS, "POST", URL, &[], "{}");
        let resp = response(
            429,
            &[],
            error_429("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "22s"),
        );
        let c = classify(&req, &Outcome::Response(resp.clone()));
        assert_eq!(c.verdict, Verdict::QuotaExhausted);
        assert_eq!(c.retry_after_ms, Some(12 * 3_600_000));
        assert_eq!(c.error_code.as_deref(), Some("resource_exhausted"));
        let o = observations(&req, &resp);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].scope.as_deref(), Some("model:gemini-2.0-flash"));
        assert_eq!(o[0].dimension, Dimension::Requests);
        assert_eq!((o[0].limit, o[0].remaining), (Some(200), Some(0)));
        assert_eq!(o[0].reset_after_ms, Some(12 * 3_600_000));
        assert_eq!(o[0].window_ms, Some(DAY_MS));
    }

    #[test]
    fn a_spent_minute_quota_waits_the_delay_in_its_dimension() {
        let req = request_at(NOON_PACIFIC_MS, "POST", URL, &[], "{}");
        let resp = response(
            429,
            &[],
            error_429(
                "GenerateContentInputTokensPerModelPerMinute-FreeTier",
                "1.5s",
            ),
        );
        let c = classify(&req, &Outcome::Response(resp.clone()));
        assert_eq!(c.verdict, Verdict::RateLimited);
        assert_eq!(c.retry_after_ms, Some(1_500));
        let o = observations(&req, &resp);
        assert_eq!(o[0].dimension, Dimension::InputTokens);
        assert_eq!(o[0].reset_after_ms, Some(1_500));
        assert_eq!(o[0].window_ms, Some(MINUTE_MS));
    }

    #[test]
    fn a_bare_429_holds_the_model_asked_for_and_other_statuses_read_as_google_says() {
        let req = request_at(NOON_PACIFIC_MS, "POST", URL, &[], "{}");
        let bare = response(
            429,
            &[],
            r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#,
        );
        let c = classify(&req, &Outcome::Response(bare));
        assert_eq!(c.verdict, Verdict::RateLimited);
        assert_eq!(
            c.scope,
            Some(LimitedScope::Named("model:gemini-2.0-flash".into()))
        );
        for (status, body, want) in [
            (
                503,
                r#"{"error":{"code":503,"status":"UNAVAILABLE"}}"#,
                Verdict::Overloaded,
            ),
            (
                500,
                r#"{"error":{"code":500,"status":"INTERNAL"}}"#,
                Verdict::Transient,
            ),
            (
                504,
                r#"{"error":{"code":504,"status":"DEADLINE_EXCEEDED"}}"#,
                Verdict::Transient,
            ),
            (
                400,
                r#"{"error":{"code":400,"status":"INVALID_ARGUMENT"}}"#,
                Verdict::ClientError,
            ),
            (
                403,
                r#"{"error":{"code":403,"status":"PERMISSION_DENIED"}}"#,
                Verdict::AuthError,
            ),
            (404, "not json", Verdict::ClientError),
            (
                400,
                r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",
                   "status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
                   "reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#,
                Verdict::AuthError,
            ),
        ] {
            let c = classify(&req, &Outcome::Response(response(status, &[], body)));
            assert_eq!(c.verdict, want, "{status} {body}");
        }
    }
}
