//! How each provider dresses its answers: quota headers, `Retry-After` forms, error bodies.
//! The shapes follow the providers' documentation and the recorded responses in
//! `plugins/*/vectors.json`, so the bundled plugins read them as they read the real ones.

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::script::RetryAfter;

/// Which provider the fake impersonates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, Go-duration resets,
    /// `retry-after-ms`.
    OpenAi,
    /// `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`, RFC 3339 resets,
    /// 529 when overloaded.
    Anthropic,
    /// `x-ratelimit-{limit,remaining,used,reset,resource}`, epoch-second resets; writes
    /// ignore `Idempotency-Key` as GitHub's create endpoints do (every accepted POST is a new
    /// object, answered 201), and collections are listed newest first, a page at a time.
    GitHub,
    /// No quota headers; `Idempotency-Key` replays marked `Idempotent-Replayed: true`.
    Stripe,
    /// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Policy`.
    Ietf,
    /// Google's Gemini API: no quota headers; a 429 `RESOURCE_EXHAUSTED` names the spent
    /// quota (`google.rpc.QuotaFailure`) and the delay (`google.rpc.RetryInfo`) in its body,
    /// never in a header; the model is in the path (`/v1beta/models/M:generateContent`), a
    /// stream is asked for by the path (`:streamGenerateContent`) and its events end with
    /// `\r\n\r\n`, each carrying the usage so far.
    Gemini,
    /// Amazon Bedrock's runtime (Converse): no quota headers; requests signed with SigV4
    /// (checked when the fake is given an account, [`crate::FakeConfig::aws`]); the model in
    /// the path (`/model/M/converse`), a stream asked for by the path (`/converse-stream`)
    /// and sent as binary AWS event-stream messages ending in a `metadata` event with the
    /// usage; errors as `{"message"}` with their type in `x-amzn-errortype`, and a 429
    /// `ThrottlingException` that says nothing of when to come back.
    Bedrock,
}

/// What the window says after an attempt, for the quota headers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quota {
    pub rpm: Option<u64>,
    pub tpm: Option<u64>,
    pub remaining_requests: u64,
    pub remaining_tokens: u64,
    pub reset_after: Duration,
    /// The input-token bucket's limit, remaining and time until full, when it has one.
    pub input: Option<(u64, u64, Duration)>,
    /// The output-token bucket's, likewise.
    pub output: Option<(u64, u64, Duration)>,
}

pub(crate) type Headers = Vec<(String, String)>;

fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}s", d.as_secs_f64())
    } else {
        format!("{}m{}s", ms / 60_000, (ms % 60_000) as f64 / 1_000.0)
    }
}

fn rfc3339(t: SystemTime) -> String {
    time::OffsetDateTime::from(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The text of every reply a model's route answers with.
pub const FAKE_REPLY: &str = "A reply from the fake provider.";

impl Style {
    /// Whether the provider takes no idempotency key, so that every write it accepts creates
    /// a new object (GitHub). The others store a write once per `Idempotency-Key` and answer
    /// a repeat with the first result.
    pub fn ignores_idempotency_keys(self) -> bool {
        self == Self::GitHub
    }

    /// The quota headers of every answer.
    pub(crate) fn quota_headers(self, q: &Quota, wall: SystemTime) -> Headers {
        let mut h = Headers::new();
        let reset_at = wall + q.reset_after;
        match self {
            Self::OpenAi => {
                if let Some(rpm) = q.rpm {
                    h.push(("x-ratelimit-limit-requests".into(), rpm.to_string()));
                    h.push((
                        "x-ratelimit-remaining-requests".into(),
                        q.remaining_requests.to_string(),
                    ));
                    h.push((
                        "x-ratelimit-reset-requests".into(),
                        go_duration(q.reset_after),
                    ));
                }
                if let Some(tpm) = q.tpm {
                    h.push(("x-ratelimit-limit-tokens".into(), tpm.to_string()));
                    h.push((
                        "x-ratelimit-remaining-tokens".into(),
                        q.remaining_tokens.to_string(),
                    ));
                    h.push((
                        "x-ratelimit-reset-tokens".into(),
                        go_duration(q.reset_after),
                    ));
                }
            }
            Self::Anthropic => {
                if let Some(rpm) = q.rpm {
                    h.push(("anthropic-ratelimit-requests-limit".into(), rpm.to_string()));
                    h.push((
                        "anthropic-ratelimit-requests-remaining".into(),
                        q.remaining_requests.to_string(),
                    ));
                    h.push((
                        "anthropic-ratelimit-requests-reset".into(),
                        rfc3339(reset_at),
                    ));
                }
                if let Some(tpm) = q.tpm {
                    h.push(("anthropic-ratelimit-tokens-limit".into(), tpm.to_string()));
                    h.push((
                        "anthropic-ratelimit-tokens-remaining".into(),
                        q.remaining_tokens.to_string(),
                    ));
                    h.push(("anthropic-ratelimit-tokens-reset".into(), rfc3339(reset_at)));
                }
                for (name, figures) in [("input-tokens", q.input), ("output-tokens", q.output)] {
                    if let Some((limit, remaining, until_full)) = figures {
                        let p = format!("anthropic-ratelimit-{name}");
                        h.push((format!("{p}-limit"), limit.to_string()));
                        h.push((format!("{p}-remaining"), remaining.to_string()));
                        h.push((format!("{p}-reset"), rfc3339(wall + until_full)));
                    }
                }
            }
            Self::GitHub => {
                if let Some(rpm) = q.rpm {
                    h.push(("x-ratelimit-limit".into(), rpm.to_string()));
                    h.push((
                        "x-ratelimit-remaining".into(),
                        q.remaining_requests.to_string(),
                    ));
                    h.push((
                        "x-ratelimit-used".into(),
                        (rpm - q.remaining_requests.min(rpm)).to_string(),
                    ));
                    h.push(("x-ratelimit-reset".into(), epoch_secs(reset_at).to_string()));
                    h.push(("x-ratelimit-resource".into(), "core".into()));
                }
            }
            Self::Stripe | Self::Gemini | Self::Bedrock => {}
            Self::Ietf => {
                if let Some(rpm) = q.rpm {
                    h.push(("ratelimit-limit".into(), rpm.to_string()));
                    h.push((
                        "ratelimit-remaining".into(),
                        q.remaining_requests.to_string(),
                    ));
                    h.push((
                        "ratelimit-reset".into(),
                        q.reset_after.as_secs().to_string(),
                    ));
                    h.push(("ratelimit-policy".into(), format!("{rpm};w=60")));
                }
            }
        }
        h
    }

    /// The headers that say when to come back.
    pub(crate) fn retry_after_headers(ra: RetryAfter, wall: SystemTime) -> Headers {
        match ra {
            RetryAfter::Seconds(s) => vec![("retry-after".into(), s.to_string())],
            RetryAfter::Millis(ms) => vec![("retry-after-ms".into(), ms.to_string())],
            RetryAfter::Date(offset) => {
                let at = if offset >= 0 {
                    wall + Duration::from_secs(offset.unsigned_abs())
                } else {
                    wall - Duration::from_secs(offset.unsigned_abs())
                };
                vec![("retry-after".into(), httpdate::fmt_http_date(at))]
            }
            RetryAfter::Raw(v) => vec![("retry-after".into(), v.into())],
        }
    }

    /// The status an overloaded provider answers with.
    pub(crate) fn overloaded_status(self) -> u16 {
        match self {
            Self::Anthropic => 529,
            _ => 503,
        }
    }

    /// The provider's error code for its rate limit.
    pub(crate) fn rate_limit_code(self) -> &'static str {
        match self {
            Self::OpenAi => "rate_limit_exceeded",
            Self::Anthropic => "rate_limit_error",
            Self::GitHub => "rate_limited",
            Self::Stripe => "rate_limit",
            Self::Ietf => "rate_limited",
            Self::Gemini => "resource_exhausted",
            Self::Bedrock => "ThrottlingException",
        }
    }

    /// Whether a 429 says how long to wait in its body only (Gemini's `RetryInfo`), with no
    /// `Retry-After`.
    pub(crate) fn delay_in_body(self) -> bool {
        self == Self::Gemini
    }

    /// The body of a 429 for a spent quota: Gemini's names the quota (a day's or a
    /// minute's, of `model`) and the delay; the others' are their [`Self::error_body`].
    pub(crate) fn limit_body(self, daily: bool, delay: Duration, model: Option<&str>) -> String {
        if self != Self::Gemini {
            let code = if daily {
                "requests_per_day_exceeded"
            } else {
                self.rate_limit_code()
            };
            return self.error_body(429, code);
        }
        let (id, metric) = if daily {
            (
                "GenerateRequestsPerDayPerProjectPerModel",
                "generativelanguage.googleapis.com/generate_content_requests",
            )
        } else {
            (
                "GenerateRequestsPerMinutePerProjectPerModel",
                "generativelanguage.googleapis.com/generate_content_requests",
            )
        };
        let mut dims = json!({"location": "global"});
        if let Some(m) = model {
            dims["model"] = json!(m);
        }
        json!({"error": {"code": 429,
            "message": format!("fake provider: you exceeded your current quota ({id})"),
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                 "violations": [{"quotaMetric": metric, "quotaId": id, "quotaDimensions": dims}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                 "retryDelay": format!("{}s", delay.as_secs_f64())}]}})
        .to_string()
    }

    /// An error body carrying `code`.
    pub(crate) fn error_body(self, status: u16, code: &str) -> String {
        let message = format!("fake provider: {code} ({status})");
        match self {
            Self::OpenAi => json!({"error": {"message": message, "type": code, "code": code}}),
            Self::Anthropic => {
                json!({"type": "error", "error": {"type": code, "message": message}})
            }
            Self::GitHub => {
                json!({"message": message, "documentation_url": "https://docs.github.com/rest"})
            }
            Self::Stripe => {
                json!({"error": {"type": "api_error", "code": code, "message": message}})
            }
            Self::Ietf => json!({"type": "about:blank", "title": code, "status": status}),
            Self::Gemini => json!({"error": {"code": status, "message": message,
                "status": google_status(status)}}),
            Self::Bedrock => json!({"message": message}),
        }
        .to_string()
    }

    /// A success body for a stored or read object. `model`: the answer to a model's route,
    /// which carries a reply as the provider's SDKs read it (OpenAI's `choices[0].message.
    /// content`, Anthropic's `content[0].text`), echoing the model asked for.
    pub(crate) fn success_body(
        self,
        id: &str,
        input_tokens: u64,
        output_tokens: u64,
        model: Option<&str>,
    ) -> String {
        match (self, model) {
            (Self::OpenAi, Some(model)) => json!({"id": id, "object": "chat.completion",
                "created": 0, "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": FAKE_REPLY}}],
                "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                          "total_tokens": input_tokens + output_tokens}}),
            (Self::OpenAi, None) => json!({"id": id, "object": "chat.completion",
                "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                          "total_tokens": input_tokens + output_tokens}}),
            (Self::Anthropic, Some(model)) => json!({"id": id, "type": "message",
                "role": "assistant", "model": model,
                "content": [{"type": "text", "text": FAKE_REPLY}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}}),
            (Self::Anthropic, None) => json!({"id": id, "type": "message",
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}}),
            (Self::Gemini, _) => {
                json!({"candidates": [{"content": {"parts": [{"text": FAKE_REPLY}],
                    "role": "model"}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": input_tokens,
                    "candidatesTokenCount": output_tokens - thoughts(output_tokens),
                    "thoughtsTokenCount": thoughts(output_tokens),
                    "totalTokenCount": input_tokens + output_tokens},
                "modelVersion": model.unwrap_or("fake-model"), "responseId": id})
            }
            (Self::Bedrock, _) => json!({
                "output": {"message": {"role": "assistant", "content": [{"text": FAKE_REPLY}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens,
                    "totalTokens": input_tokens + output_tokens},
                "metrics": {"latencyMs": 1}}),
            _ => json!({"id": id}),
        }
        .to_string()
    }

    /// The `x-amzn-errortype` of an AWS error answer of `status` carrying `code`: the code
    /// itself when it names an AWS exception, else the exception AWS answers that status
    /// with. `None` in the other styles, which have no such header.
    pub(crate) fn aws_error_type(self, status: u16, code: &str) -> Option<String> {
        if self != Self::Bedrock || status < 400 {
            return None;
        }
        let kind = if code.ends_with("Exception") {
            code
        } else {
            match status {
                400 => "ValidationException",
                401 | 403 => "AccessDeniedException",
                404 => "ResourceNotFoundException",
                408 => "ModelTimeoutException",
                424 => "ModelErrorException",
                429 => "ThrottlingException",
                503 => "ServiceUnavailableException",
                _ => "InternalServerException",
            }
        };
        Some(format!(
            "{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        ))
    }
}

/// Google's canonical code for an HTTP status.
fn google_status(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// The part of a Gemini answer's output spent thinking: a quarter, billed as output and
/// reported as `thoughtsTokenCount`, but never in the stream's text, as a thinking model's
/// thoughts are not unless asked for.
pub(crate) fn thoughts(output: u64) -> u64 {
    output / 4
}
