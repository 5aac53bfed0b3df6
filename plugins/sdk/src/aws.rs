//! AWS errors, as Amazon Bedrock and other AWS JSON APIs answer them: a body
//! `{"message": "..."}` and the error's type in the `x-amzn-ErrorType` header
//! (`ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/`: the part
//! before the colon), or in some answers only in the body's `__type`
//! (`com.amazon.coral.service#ThrottlingException`: the part after the `#`).
//!
//! The type decides, not the status: AWS's SDKs choose whether to retry by it, and Bedrock
//! answers a spent service quota (`ServiceQuotaExceededException`) 400, as it answers a bad
//! request. In an event stream the type comes in the `:exception-type` header, in lower camel
//! case (`throttlingException`); [`code`] names both forms alike (`throttling_exception`).
//!
//! ```
//! use sluice_plugin_sdk::aws::aws_error;
//! use sluice_plugin_sdk::headers::Headers;
//!
//! let h = Headers::new([(
//!     "x-amzn-ErrorType",
//!     "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
//! )]);
//! let e = aws_error(&h, br#"{"message":"Too many requests, please wait before trying again."}"#)
//!     .unwrap();
//! assert_eq!(e.kind.as_deref(), Some("ThrottlingException"));
//! assert_eq!(e.code().as_deref(), Some("throttling_exception"));
//! assert!(e.message.unwrap().starts_with("Too many requests"));
//! ```

use serde_json::Value;

use crate::headers::Headers;
use crate::json;

/// The header AWS names an error's type in.
pub const ERROR_TYPE_HEADER: &str = "x-amzn-errortype";

/// What an AWS error says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwsError {
    /// The error's type (`ThrottlingException`), from the header, else the body's `__type`.
    pub kind: Option<String>,
    /// The body's `message` (or `Message`).
    pub message: Option<String>,
}

impl AwsError {
    /// The type as an error code: lower snake case (`throttling_exception`).
    pub fn code(&self) -> Option<String> {
        self.kind.as_deref().map(code).filter(|c| !c.is_empty())
    }

    /// Whether the message holds `needle`, case aside.
    pub fn says(&self, needle: &str) -> bool {
        self.message.as_deref().is_some_and(|m| {
            m.to_ascii_lowercase()
                .contains(&needle.to_ascii_lowercase())
        })
    }
}

/// The error an answer's headers and body describe; `None` when neither names a type or a
/// message (a body cut short still gives the header's type).
pub fn aws_error(headers: &Headers<'_>, body: &[u8]) -> Option<AwsError> {
    let parsed = object(body);
    let text = |key: &str| {
        parsed
            .as_ref()?
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let kind = headers
        .get(ERROR_TYPE_HEADER)
        .and_then(error_type)
        .map(str::to_owned)
        .or_else(|| {
            text("__type")
                .as_deref()
                .and_then(error_type)
                .map(str::to_owned)
        });
    let message = text("message").or_else(|| text("Message"));
    (kind.is_some() || message.is_some()).then_some(AwsError { kind, message })
}

/// The `message` (or `Message`) of a JSON error body, such as an event stream's exception's
/// payload.
pub fn message(body: &[u8]) -> Option<String> {
    let o = object(body)?;
    o.get("message")
        .or_else(|| o.get("Message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn object(body: &[u8]) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_slice(body).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// The type an `x-amzn-ErrorType` value or a `__type` names: the part before the first
/// colon, after the last `#`, trimmed; `None` when that is empty.
pub fn error_type(raw: &str) -> Option<&str> {
    let before_colon = raw.split(':').next().unwrap_or("");
    let name = before_colon.rsplit('#').next().unwrap_or("").trim();
    (!name.is_empty()).then_some(name)
}

/// An AWS type name as an error code: `ThrottlingException` and `throttlingException` are
/// `throttling_exception`; otherwise as [`json::normalize_code`] has it (anything but letters
/// and digits is one `_`, at most 128 bytes).
pub fn code(kind: &str) -> String {
    let mut words = String::with_capacity(kind.len() + 8);
    let mut after_lower = false;
    for c in kind.chars() {
        if c.is_ascii_uppercase() && after_lower {
            words.push('_');
        }
        after_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        words.push(c);
    }
    json::normalize_code(&words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_comes_from_the_header_else_the_body() {
        let h = Headers::new([("X-Amzn-ErrorType", "ValidationException:http://x/")]);
        let e = aws_error(&h, br#"{"message":"Malformed input request"}"#).unwrap();
        assert_eq!(e.code().as_deref(), Some("validation_exception"));
        assert_eq!(e.message.as_deref(), Some("Malformed input request"));

        let none = Headers::new([]);
        let e = aws_error(
            &none,
            br#"{"__type":"com.amazon.coral.service#ServiceQuotaExceededException","Message":"quota"}"#,
        )
        .unwrap();
        assert_eq!(e.kind.as_deref(), Some("ServiceQuotaExceededException"));
        assert_eq!(e.message.as_deref(), Some("quota"));
        assert!(e.says("QUOTA"));

        // A cut body still gives the header's type; nothing at all gives nothing.
        let e = aws_error(&h, br#"{"message":"Malfo"#).unwrap();
        assert_eq!(
            (e.kind.as_deref(), e.message),
            (Some("ValidationException"), None)
        );
        assert_eq!(aws_error(&none, b"<html>"), None);
        assert_eq!(aws_error(&none, br#"["message"]"#), None);
    }

    #[test]
    fn codes_are_lower_snake_case_in_either_form() {
        for (kind, want) in [
            ("ThrottlingException", "throttling_exception"),
            ("throttlingException", "throttling_exception"),
            ("ModelNotReadyException", "model_not_ready_exception"),
            ("modelStreamErrorException", "model_stream_error_exception"),
            ("  Odd  Name!", "odd_name"),
            ("", ""),
        ] {
            assert_eq!(code(kind), want, "{kind}");
        }
        assert_eq!(code(&"A".repeat(500)).len(), 128);
        assert_eq!(error_type(" :x"), None);
        assert_eq!(
            error_type("a#b#AccessDeniedException"),
            Some("AccessDeniedException")
        );
    }

    #[test]
    fn an_exception_s_payload_gives_its_message() {
        assert_eq!(
            message(br#"{"message":"Too many tokens"}"#).as_deref(),
            Some("Too many tokens")
        );
        assert_eq!(message(b"{}"), None);
    }
}
