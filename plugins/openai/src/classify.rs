//! Reading OpenAI responses.

use sluice_plugin_sdk::generic::{self, Kind};
use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::retry_after::retry_after_any_ms;
use sluice_plugin_sdk::{
    Classification, LimitedScope, Outcome, Request, default_classify, json, verdict,
};

use crate::quota::exhausted_reset_ms;

/// The `error.code`s OpenAI documents for a 429 that no short wait will fix: credits or a
/// spend or usage limit are used up. Their `error.type` is often, not always,
/// `insufficient_quota`, itself once also the code.
pub const BILLING_CODES: &[&str] = &[
    "insufficient_quota",
    "credit_balance_exhausted",
    "organization_spend_limit_exceeded",
    "project_spend_limit_exceeded",
    "organization_usage_limit_exceeded",
];

/// Classifies one attempt; `h` is the response's headers, parsed once by the caller.
pub fn classify(req: &Request, outcome: &Outcome, h: &Headers<'_>) -> Classification {
    let Outcome::Response(resp) = outcome else {
        return default_classify(req, outcome);
    };
    let (code, billing) = error_code(&resp.body);
    let mut kind = generic::status_kind(resp.status);
    if resp.status == 429 && billing {
        kind = Kind::QuotaExhausted;
    }
    let retry_after_ms = match kind {
        // Credits or a monthly limit do not come back in seconds: no short delay to offer.
        Kind::QuotaExhausted => None,
        Kind::RateLimited => retry_after_any_ms(h, req.now_ms).or_else(|| exhausted_reset_ms(h)),
        _ => retry_after_any_ms(h, req.now_ms),
    };
    Classification {
        verdict: verdict(kind),
        retry_after_ms,
        error_code: code,
        should_retry: h.get_bool("x-should-retry"),
        // Credits and spend limits are the account's (or the project's, which is the key's):
        // every model of the key is out, whatever model the headers' figures are about.
        scope: (kind == Kind::QuotaExhausted && billing).then_some(LimitedScope::Credential),
    }
}

/// `error.code`, else `error.type`, normalized; and whether either names a billing
/// exhaustion (the code says which limit; the type may say `insufficient_quota` alone).
fn error_code(body: &[u8]) -> (Option<String>, bool) {
    let Some(e) = json::error_body(body) else {
        return (None, false);
    };
    let code = e.code().map(json::normalize_code).filter(|c| !c.is_empty());
    let kind = e.kind().map(json::normalize_code).filter(|c| !c.is_empty());
    let billing = [&code, &kind]
        .into_iter()
        .flatten()
        .any(|c| BILLING_CODES.contains(&c.as_str()));
    (code.or(kind), billing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::test::{request, response};
    use sluice_plugin_sdk::{Verdict, headers};

    fn read(status: u16, body: &str) -> Classification {
        let req = request(
            "POST",
            "https://api.openai.com/v1/chat/completions",
            &[],
            "",
        );
        let resp = response(status, &[("retry-after", "20")], body);
        let h = headers(&resp.headers);
        classify(&req, &resp.clone().into(), &h)
    }

    #[test]
    fn every_documented_billing_shape_is_quota_exhausted_without_a_delay() {
        let shapes = [
            r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}"#,
            r#"{"error":{"type":"insufficient_quota","code":null}}"#,
            r#"{"error":{"type":"insufficient_quota","code":"project_spend_limit_exceeded"}}"#,
            r#"{"error":{"code":"credit_balance_exhausted"}}"#,
            r#"{"error":{"type":"insufficient_quota","code":"organization_spend_limit_exceeded"}}"#,
            r#"{"error":{"type":"insufficient_quota","code":"organization_usage_limit_exceeded"}}"#,
        ];
        for body in shapes {
            let c = read(429, body);
            assert_eq!(c.verdict, Verdict::QuotaExhausted, "{body}");
            assert_eq!(c.retry_after_ms, None, "{body}");
            assert_eq!(
                c.scope,
                Some(LimitedScope::Credential),
                "the whole key: {body}"
            );
        }
    }

    #[test]
    fn the_code_names_which_limit_and_the_type_stands_in_when_it_is_null() {
        let c = read(
            429,
            r#"{"error":{"type":"insufficient_quota","code":"project_spend_limit_exceeded"}}"#,
        );
        assert_eq!(
            c.error_code.as_deref(),
            Some("project_spend_limit_exceeded")
        );
        let c = read(
            429,
            r#"{"error":{"type":"insufficient_quota","code":null}}"#,
        );
        assert_eq!(c.error_code.as_deref(), Some("insufficient_quota"));
    }

    #[test]
    fn a_rate_limit_or_slow_down_is_a_short_wait() {
        for body in [
            r#"{"error":{"type":"requests","code":"rate_limit_exceeded"}}"#,
            r#"{"error":{"type":"rate_limit_error","code":"slow_down"}}"#,
        ] {
            let c = read(429, body);
            assert_eq!(c.verdict, Verdict::RateLimited, "{body}");
            assert_eq!(c.retry_after_ms, Some(20_000), "{body}");
            assert_eq!(c.scope, None, "the figures' scope (the model): {body}");
        }
    }
}
