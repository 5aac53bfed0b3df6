//! Google-style error bodies (`google.rpc.Status`, as Gemini, Vertex AI and other Google APIs
//! answer): `{"error": {"code": 429, "message", "status": "RESOURCE_EXHAUSTED", "details":
//! [...]}}`, where the details carry how long to wait (`google.rpc.RetryInfo`, a
//! `retryDelay` such as `"32s"`) and which quota was spent (`google.rpc.QuotaFailure`,
//! each violation's `quotaMetric`, `quotaId` and `quotaDimensions`). The numeric `code` is
//! why [`crate::json::error_body`], which reads string codes, finds none in them.

use serde_json::Value;

/// A quota a Google-style error says was spent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaViolation {
    /// `quotaMetric` (`generativelanguage.googleapis.com/generate_content_free_tier_requests`).
    pub metric: Option<String>,
    /// `quotaId` (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`).
    pub id: Option<String>,
    /// `quotaDimensions.model`, when the quota is per model.
    pub model: Option<String>,
    /// `quotaValue`: the quota's size (`"200"`), when the error states it.
    pub value: Option<u64>,
}

impl QuotaViolation {
    /// Whether the quota is counted per day (its id says `PerDay`): it is back at the
    /// provider's midnight ([`crate::midnight`]), whatever delay the error asks for.
    pub fn daily(&self) -> bool {
        self.id.as_deref().is_some_and(|id| id.contains("PerDay"))
    }
}

/// What a Google-style error body says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoogleError {
    /// `error.code`: the HTTP status it stands for.
    pub code: Option<u16>,
    /// `error.status`: the canonical code (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`, …).
    pub status: Option<String>,
    /// `error.message`.
    pub message: Option<String>,
    /// The `retryDelay` of a `google.rpc.RetryInfo` detail, in milliseconds.
    pub retry_delay_ms: Option<u64>,
    /// The violations of every `google.rpc.QuotaFailure` detail.
    pub quota_violations: Vec<QuotaViolation>,
    /// The `reason` of every `google.rpc.ErrorInfo` detail (`API_KEY_INVALID`).
    pub reasons: Vec<String>,
}

impl GoogleError {
    /// Whether a violated quota is a daily one (its id says `PerDay`): it is back at the
    /// provider's midnight ([`crate::midnight`]), not in a minute.
    pub fn daily_quota(&self) -> bool {
        self.quota_violations.iter().any(QuotaViolation::daily)
    }
}

/// Reads a Google-style error body; `None` when the body is not complete JSON with an
/// `error` object that has a numeric `code` or a `status`.
pub fn google_error(body: &[u8]) -> Option<GoogleError> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?.as_object()?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let code = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok());
    let status = text(error.get("status"));
    if code.is_none() && status.is_none() {
        return None;
    }
    let mut out = GoogleError {
        code,
        status,
        message: text(error.get("message")),
        ..GoogleError::default()
    };
    for detail in error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = detail.get("@type").and_then(Value::as_str).unwrap_or("");
        if kind.ends_with("google.rpc.ErrorInfo") {
            out.reasons.extend(text(detail.get("reason")));
        } else if kind.ends_with("google.rpc.RetryInfo") {
            out.retry_delay_ms = detail
                .get("retryDelay")
                .and_then(Value::as_str)
                .and_then(duration_ms);
        } else if kind.ends_with("google.rpc.QuotaFailure") {
            for v in detail
                .get("violations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.quota_violations.push(QuotaViolation {
                    metric: text(v.get("quotaMetric")),
                    id: text(v.get("quotaId")),
                    model: text(v.get("quotaDimensions").and_then(|d| d.get("model"))),
                    value: v.get("quotaValue").and_then(|q| match q {
                        Value::String(s) => s.parse().ok(),
                        other => other.as_u64(),
                    }),
                });
            }
        }
    }
    Some(out)
}

/// A `google.protobuf.Duration` in its JSON form (`"32s"`, `"1.5s"`, `"0.250s"`), in
/// milliseconds, capped at [`crate::time::MAX_DELAY_MS`].
fn duration_ms(text: &str) -> Option<u64> {
    let seconds = text.strip_suffix('s')?;
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    let millis: u64 = format!("{fraction:0<3}")[..3].parse().ok()?;
    Some(
        whole
            .saturating_mul(1000)
            .saturating_add(millis)
            .min(crate::time::MAX_DELAY_MS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEMINI_429: &str = r#"{"error": {"code": 429,
      "message": "You exceeded your current quota.",
      "status": "RESOURCE_EXHAUSTED",
      "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
          {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
           "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
           "quotaDimensions": {"location": "global", "model": "gemini-2.0-flash"},
           "quotaValue": "200"}]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "32s"}]}}"#;

    #[test]
    fn a_gemini_429_says_how_long_to_wait_and_which_daily_quota_was_spent() {
        let e = google_error(GEMINI_429.as_bytes()).unwrap();
        assert_eq!(e.code, Some(429));
        assert_eq!(e.status.as_deref(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(e.retry_delay_ms, Some(32_000));
        assert_eq!(e.quota_violations.len(), 1);
        assert_eq!(
            e.quota_violations[0].model.as_deref(),
            Some("gemini-2.0-flash")
        );
        assert!(e.daily_quota());
        assert_eq!(e.quota_violations[0].value, Some(200));
    }

    #[test]
    fn durations_fractions_and_what_is_not_a_google_error() {
        assert_eq!(duration_ms("1.5s"), Some(1_500));
        assert_eq!(duration_ms("0.250s"), Some(250));
        assert_eq!(duration_ms("0.0005s"), Some(0));
        assert_eq!(duration_ms("999999999s"), Some(crate::time::MAX_DELAY_MS));
        for bad in ["", "s", "1", "-1s", "1.5.5s", "1e3s", " 1s"] {
            assert_eq!(duration_ms(bad), None, "{bad:?}");
        }
        // OpenAI's shape (a string code, no status) and truncated bodies are not.
        assert_eq!(
            google_error(br#"{"error": {"code": "rate_limit_exceeded"}}"#),
            None
        );
        assert_eq!(google_error(&GEMINI_429.as_bytes()[..40]), None);
        let bare = google_error(br#"{"error": {"code": 503, "status": "UNAVAILABLE"}}"#).unwrap();
        assert_eq!(bare.retry_delay_ms, None);
        assert!(!bare.daily_quota());
    }
}
