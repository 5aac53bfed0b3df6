//! The sidecar's own errors in each provider's JSON error shape, so that an agent's SDK
//! raises them as it raises the provider's (with the message and the status an agent's
//! code already handles), with sluice's account beside them under `sluice`.

use serde_json::{Value, json};
use sluice::contract::ErrorShape;

/// One error the sidecar answers.
#[derive(Debug, Clone)]
pub struct SluiceError {
    /// The HTTP status.
    pub status: u16,
    /// A short machine name (`unknown_provider`, `call_ended`, `write_escalated`).
    pub kind: &'static str,
    /// What happened and what to do, for people.
    pub message: String,
    /// sluice's account: reason, next action, attempts... (an object).
    pub detail: Value,
    /// Seconds to wait before trying again (`Retry-After`), when sluice knows them.
    pub retry_after: Option<u32>,
    /// Whether the connection is closed after this answer (`Connection: close`).
    pub close: bool,
}

impl SluiceError {
    /// An error with no more detail than its message.
    pub fn new(status: u16, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
            detail: json!({}),
            retry_after: None,
            close: false,
        }
    }

    /// Saying `Retry-After: secs`.
    #[must_use]
    pub fn retry_after(mut self, secs: u32) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// Closing the connection after the answer.
    #[must_use]
    pub fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    /// An error whose message is `error`, said by sluice (made printable).
    pub fn of(status: u16, kind: &'static str, error: &impl std::fmt::Display) -> Self {
        Self::new(
            status,
            kind,
            format!(
                "sluice: {}",
                sluice::printable::printable(&error.to_string())
            ),
        )
    }

    /// With `detail` as sluice's account.
    #[must_use]
    pub fn detail(mut self, detail: Value) -> Self {
        self.detail = detail;
        self
    }

    /// The account under `sluice`: `kind` and `detail`'s fields.
    fn account(&self) -> Value {
        let mut account = json!({ "kind": self.kind });
        if let (Value::Object(a), Value::Object(d)) = (&mut account, &self.detail) {
            a.extend(d.clone());
        }
        account
    }

    /// The JSON body in `shape`.
    pub fn body(&self, shape: ErrorShape) -> String {
        let kind = format!("sluice_{}", self.kind);
        let v = match shape {
            ErrorShape::OpenAi => json!({"error": {
                "message": self.message, "type": kind, "param": null, "code": self.kind,
                "sluice": self.account()}}),
            ErrorShape::Anthropic => json!({"type": "error", "error": {
                "type": kind, "message": self.message, "sluice": self.account()}}),
            ErrorShape::GitHub => json!({
                "message": self.message,
                "documentation_url": "https://github.com/sluice/sluice#sluice-serve",
                "status": self.status.to_string(), "sluice": self.account()}),
            ErrorShape::Stripe => json!({"error": {
                "type": "api_error", "code": kind, "message": self.message,
                "sluice": self.account()}}),
            ErrorShape::Google => {
                let mut details = vec![json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": kind.to_ascii_uppercase(), "domain": "sluice"})];
                if let Some(secs) = self.retry_after {
                    details.push(json!({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": format!("{secs}s")}));
                }
                json!({"error": {
                    "code": self.status, "message": self.message,
                    "status": google_status(self.status), "details": details,
                    "sluice": self.account()}})
            }
            ErrorShape::Aws => json!({
                "message": self.message, "__type": aws_error_type(self.status),
                "sluice": self.account()}),
        };
        v.to_string()
    }

    /// The error as a server-sent event in `shape`, for a stream that broke off after its
    /// answer began (the status is already sent).
    pub fn event(&self, shape: ErrorShape) -> String {
        match shape {
            ErrorShape::Anthropic => format!("event: error\ndata: {}\n\n", self.body(shape)),
            _ => format!("data: {}\n\n", self.body(shape)),
        }
    }

    /// The error as an AWS event-stream exception message, for a binary stream (Bedrock's)
    /// that broke off after its answer began: `:message-type` `exception`, the error's type
    /// in `:exception-type` as Bedrock's streams name them (`internalServerException`), and
    /// the body in `shape` as its payload. An AWS SDK raises it as the stream's error.
    pub fn exception_message(&self, shape: ErrorShape) -> Vec<u8> {
        let kind = aws_error_type(self.status);
        let mut exception = kind.to_owned();
        if let Some(first) = exception.get_mut(..1) {
            first.make_ascii_lowercase();
        }
        sluice::execute::event_stream_message(
            &[
                (":message-type", "exception"),
                (":exception-type", &exception),
                (":content-type", "application/json"),
            ],
            self.body(shape).as_bytes(),
        )
    }
}

/// Google's canonical code for an HTTP status (`google.rpc.Code`, as its APIs map them).
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

/// The AWS error type an answer of `status` carries in `x-amzn-ErrorType` (and `__type`), as
/// Bedrock names its errors: what an AWS SDK reads to decide whether to retry (a throttling
/// error is retried with backoff, a validation error never).
pub(crate) fn aws_error_type(status: u16) -> &'static str {
    match status {
        400 | 413 | 422 => "ValidationException",
        401 | 403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        409 => "ConflictException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_puts_the_message_where_its_sdk_reads_it() {
        let e = SluiceError::new(404, "unknown_provider", "no provider `foo`")
            .detail(json!({"provider": "foo"}));
        let v: Value = serde_json::from_str(&e.body(ErrorShape::OpenAi)).unwrap();
        assert_eq!(v["error"]["message"], "no provider `foo`");
        assert_eq!(v["error"]["sluice"]["provider"], "foo");
        let v: Value = serde_json::from_str(&e.body(ErrorShape::Anthropic)).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "sluice_unknown_provider");
        let v: Value = serde_json::from_str(&e.body(ErrorShape::GitHub)).unwrap();
        assert_eq!(v["message"], "no provider `foo`");
        let v: Value = serde_json::from_str(&e.body(ErrorShape::Stripe)).unwrap();
        assert_eq!(v["error"]["code"], "sluice_unknown_provider");
        assert!(
            e.event(ErrorShape::Anthropic)
                .starts_with("event: error\ndata: {")
        );
        let busy = SluiceError::new(429, "queue_full", "the queue is full").retry_after(3);
        let v: Value = serde_json::from_str(&busy.body(ErrorShape::Google)).unwrap();
        assert_eq!(v["error"]["code"], 429);
        assert_eq!(v["error"]["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(v["error"]["message"], "the queue is full");
        assert_eq!(v["error"]["details"][1]["retryDelay"], "3s");
        let v: Value = serde_json::from_str(&busy.body(ErrorShape::Aws)).unwrap();
        assert_eq!(v["message"], "the queue is full");
        assert_eq!(v["__type"], "ThrottlingException");
        let broken = SluiceError::new(502, "stream_broken", "the stream broke");
        let m = broken.exception_message(ErrorShape::Aws);
        let text = String::from_utf8_lossy(&m);
        assert!(
            text.contains(":message-type\x07\x00\x09exception")
                && text.contains(":exception-type\x07\x00\x17internalServerException"),
            "{text:?}"
        );
        let total = u32::from_be_bytes([m[0], m[1], m[2], m[3]]) as usize;
        assert_eq!(total, m.len());
        assert_eq!(
            u32::from_be_bytes(m[m.len() - 4..].try_into().unwrap()),
            crc32fast::hash(&m[..m.len() - 4])
        );
    }
}
