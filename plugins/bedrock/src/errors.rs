//! Reading Bedrock's errors: `{"message": "..."}` with the type in `x-amzn-ErrorType` (or the
//! body's `__type`), and the same types in an event stream's `exception` messages
//! (`:exception-type` `throttlingException`) after a 200.
//!
//! The type decides, whatever the status:
//!
//! | type | verdict | why |
//! |---|---|---|
//! | `ThrottlingException` (429) | rate-limited, the model's scope held | a quota a minute (requests or tokens) is spent; no `Retry-After` is sent, so [`THROTTLED_DELAY_MS`] |
//! | the same, "Too many tokens per day" | quota-exhausted, the model's scope | the day's tokens are spent: not a short wait |
//! | `ServiceQuotaExceededException` (400 or 429) | quota-exhausted, the model's scope | a service quota is spent for longer; never a bad request, though answered 400 |
//! | `ModelNotReadyException` (429) | overloaded, [`MODEL_NOT_READY_DELAY_MS`] | the model is being loaded: no quota of the caller's is spent (AWS's SDKs retry it up to five times) |
//! | `ServiceUnavailableException` (503) | overloaded | Bedrock's capacity, not the caller's pace |
//! | `InternalServerException` (500), `ModelStreamErrorException` | transient | worth a bounded retry |
//! | `ModelTimeoutException` (408) | transient | the model took too long: a read, retried |
//! | `ModelErrorException` (424) | client error | the model failed on this input: the same request would fail again, and AWS's SDKs do not retry it |
//! | `ValidationException` (400), `ResourceNotFoundException` (404) | client error | |
//! | `AccessDeniedException`, `UnrecognizedClientException`, `InvalidSignatureException` ("Signature expired"), `ExpiredTokenException`… (403) | auth error | |
//!
//! Quotas are per model and Region, so a spent one holds the scope of the model the path
//! names (`model:<id>`), which every request's plan names too.

use sluice_plugin_sdk::aws::{self, AwsError};
use sluice_plugin_sdk::generic::{self, Kind};
use sluice_plugin_sdk::retry_after::retry_after_any_ms;
use sluice_plugin_sdk::{
    Classification, LimitedScope, Outcome, Request, default_classify, headers, verdict,
};

use crate::route;

/// The wait after a `ThrottlingException`, which Bedrock sends without `Retry-After`: its
/// quotas count a minute at a time, and AWS's SDKs wait about a second, doubling, before
/// each retry. The host jitters each retry over its own backoff beyond this.
pub const THROTTLED_DELAY_MS: u64 = 2_000;

/// The wait after a `ModelNotReadyException`: the model is being loaded (a custom or
/// imported model at rest), which takes seconds.
pub const MODEL_NOT_READY_DELAY_MS: u64 = 5_000;

/// Classifies one attempt.
pub fn classify(req: &Request, outcome: &Outcome) -> Classification {
    let Outcome::Response(resp) = outcome else {
        return default_classify(req, outcome);
    };
    if (200..300).contains(&resp.status) {
        return default_classify(req, outcome);
    }
    let h = headers(&resp.headers);
    let error = aws::aws_error(&h, &resp.body).unwrap_or_default();
    let (kind, default_delay) =
        reading(&error).unwrap_or_else(|| (generic::status_kind(resp.status), None));
    let c = Classification {
        verdict: verdict(kind),
        retry_after_ms: retry_after_any_ms(&h, req.now_ms).or(default_delay),
        error_code: error.code(),
        should_retry: None,
        scope: None,
    };
    held(req, kind, c)
}

/// The classification of a stream that sent an `exception` message of `exception_type`
/// after its success status, with the payload's `message`: the type decides as it does for
/// a status (a type not known is transient: a stream that broke off is no success).
pub fn stream_exception(
    req: &Request,
    exception_type: &str,
    message: Option<String>,
) -> Classification {
    let error = AwsError {
        kind: Some(exception_type.to_owned()),
        message,
    };
    let (kind, delay) = reading(&error).unwrap_or((Kind::Transient, None));
    let c = Classification {
        verdict: verdict(kind),
        retry_after_ms: delay,
        error_code: error.code(),
        should_retry: None,
        scope: None,
    };
    held(req, kind, c)
}

/// A spent quota is the model's (quotas are per model and Region): its scope is held.
fn held(req: &Request, kind: Kind, mut c: Classification) -> Classification {
    if matches!(kind, Kind::RateLimited | Kind::QuotaExhausted) {
        c.scope = route::scope(&route::of(&req.url)).map(LimitedScope::Named);
    }
    c
}

/// The verdict an error's type gives, and the delay it asks for when the answer names none;
/// `None` for a type this reading does not know (the status decides).
fn reading(error: &AwsError) -> Option<(Kind, Option<u64>)> {
    let code = error.code()?;
    Some(match code.as_str() {
        // "Too many tokens per day, please wait before trying again."
        "throttling_exception" if error.says("per day") => (Kind::QuotaExhausted, None),
        "throttling_exception" => (Kind::RateLimited, Some(THROTTLED_DELAY_MS)),
        "service_quota_exceeded_exception" => (Kind::QuotaExhausted, None),
        "model_not_ready_exception" => (Kind::Overloaded, Some(MODEL_NOT_READY_DELAY_MS)),
        "service_unavailable_exception" => (Kind::Overloaded, None),
        "internal_server_exception" | "internal_failure" | "model_stream_error_exception" => {
            (Kind::Transient, None)
        }
        "model_timeout_exception" => (Kind::Transient, None),
        "model_error_exception"
        | "validation_exception"
        | "resource_not_found_exception"
        | "serialization_exception" => (Kind::ClientError, None),
        "access_denied_exception"
        | "unrecognized_client_exception"
        | "invalid_signature_exception"
        | "incomplete_signature"
        | "incomplete_signature_exception"
        | "expired_token_exception"
        | "missing_authentication_token_exception"
        | "invalid_client_token_id" => (Kind::AuthError, None),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::Verdict;
    use sluice_plugin_sdk::test::{request, response};

    const URL: &str = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse";
    const SCOPE: &str = "model:anthropic.claude-3-5-sonnet-20240620-v1:0";

    fn read(status: u16, kind: &str, message: &str) -> Classification {
        let header = format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/");
        let resp = response(
            status,
            &[("x-amzn-ErrorType", header.as_str())],
            format!(r#"{{"message":"{message}"}}"#),
        );
        classify(&request("POST", URL, &[], "{}"), &resp.into())
    }

    #[test]
    fn a_throttled_call_holds_its_model_for_a_modest_delay() {
        let c = read(
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        );
        assert_eq!(c.verdict, Verdict::RateLimited);
        assert_eq!(c.retry_after_ms, Some(THROTTLED_DELAY_MS));
        assert_eq!(c.error_code.as_deref(), Some("throttling_exception"));
        assert_eq!(c.scope, Some(LimitedScope::Named(SCOPE.into())));
        let daily = read(
            429,
            "ThrottlingException",
            "Too many tokens per day, please wait before trying again.",
        );
        assert_eq!(daily.verdict, Verdict::QuotaExhausted);
        assert_eq!(daily.retry_after_ms, None);
        assert_eq!(daily.scope, Some(LimitedScope::Named(SCOPE.into())));
    }

    #[test]
    fn a_spent_service_quota_is_exhausted_whether_answered_400_or_429() {
        for status in [400, 429] {
            let c = read(status, "ServiceQuotaExceededException", "quota");
            assert_eq!(c.verdict, Verdict::QuotaExhausted, "{status}");
            assert_eq!(c.scope, Some(LimitedScope::Named(SCOPE.into())));
        }
    }

    #[test]
    fn each_type_reads_as_aws_means_it() {
        for (status, kind, want, delay) in [
            (
                429,
                "ModelNotReadyException",
                Verdict::Overloaded,
                Some(MODEL_NOT_READY_DELAY_MS),
            ),
            (
                503,
                "ServiceUnavailableException",
                Verdict::Overloaded,
                None,
            ),
            (500, "InternalServerException", Verdict::Transient, None),
            (408, "ModelTimeoutException", Verdict::Transient, None),
            (424, "ModelErrorException", Verdict::ClientError, None),
            (400, "ValidationException", Verdict::ClientError, None),
            (404, "ResourceNotFoundException", Verdict::ClientError, None),
            (403, "AccessDeniedException", Verdict::AuthError, None),
            (403, "UnrecognizedClientException", Verdict::AuthError, None),
            (403, "InvalidSignatureException", Verdict::AuthError, None),
            (418, "SomethingNew", Verdict::ClientError, None),
        ] {
            let c = read(status, kind, "m");
            assert_eq!((c.verdict, c.retry_after_ms), (want, delay), "{kind}");
            assert_eq!(c.scope, None, "{kind}");
        }
        // No type at all: the status decides.
        let bare = classify(
            &request("POST", URL, &[], "{}"),
            &response(429, &[], "").into(),
        );
        assert_eq!(bare.verdict, Verdict::RateLimited);
        assert_eq!(bare.error_code, None);
        // The body's `__type` when the header is missing; a Retry-After wins.
        let typed = classify(
            &request("POST", URL, &[], "{}"),
            &response(
                429,
                &[("retry-after", "7")],
                r#"{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate exceeded"}"#,
            )
            .into(),
        );
        assert_eq!(typed.verdict, Verdict::RateLimited);
        assert_eq!(typed.retry_after_ms, Some(7_000));
    }

    #[test]
    fn a_stream_s_exception_reads_as_its_type() {
        let req = request("POST", URL, &[], "{}");
        let c = stream_exception(&req, "throttlingException", Some("Too many tokens".into()));
        assert_eq!(c.verdict, Verdict::RateLimited);
        assert_eq!(c.error_code.as_deref(), Some("throttling_exception"));
        assert_eq!(c.scope, Some(LimitedScope::Named(SCOPE.into())));
        let c = stream_exception(&req, "modelStreamErrorException", None);
        assert_eq!(c.verdict, Verdict::Transient);
        let c = stream_exception(&req, "neverHeardOfIt", None);
        assert_eq!(c.verdict, Verdict::Transient);
        assert_eq!(c.error_code.as_deref(), Some("never_heard_of_it"));
    }
}
