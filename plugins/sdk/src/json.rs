//! Reading error codes out of (possibly truncated) JSON bodies.
//!
//! The host passes only a prefix of each body. A truncated or non-JSON body simply yields
//! nothing: a plugin must still classify by status and headers.

use std::borrow::Cow;

use serde::Deserialize;
pub use serde_json::Value;

/// The error fields providers put in their error bodies: `{"error": {"code", "type",
/// "message"}}` (OpenAI, Anthropic, Stripe) or a top-level `message` (GitHub).
#[derive(Debug, Default, Deserialize)]
pub struct ErrorBody<'a> {
    /// The nested error object, when there is one.
    #[serde(default, deserialize_with = "error_object")]
    pub error: Option<ErrorObject<'a>>,
    /// A top-level message, when there is one.
    #[serde(borrow, default)]
    pub message: Option<Cow<'a, str>>,
}

/// The nested `error` object.
#[derive(Debug, Default, Deserialize)]
pub struct ErrorObject<'a> {
    /// `error.code`.
    #[serde(borrow, default)]
    pub code: Option<Cow<'a, str>>,
    /// `error.type`.
    #[serde(borrow, default, rename = "type")]
    pub kind: Option<Cow<'a, str>>,
    /// `error.message`.
    #[serde(borrow, default)]
    pub message: Option<Cow<'a, str>>,
}

/// The `error` field, read only from an object: serde would read the derived struct from an
/// array too, by position (`{"error": ["x"]}` would have the code `x`). A field of another
/// type than a string is absent, as [`string_at`] has it.
fn error_object<'de, 'a, D>(d: D) -> Result<Option<ErrorObject<'a>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let Some(map) = Option::<serde_json::Map<String, Value>>::deserialize(d)? else {
        return Ok(None);
    };
    let text = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .map(|s| Cow::Owned(s.to_owned()))
    };
    Ok(Some(ErrorObject {
        code: text("code"),
        kind: text("type"),
        message: text("message"),
    }))
}

impl ErrorBody<'_> {
    /// `error.code`.
    pub fn code(&self) -> Option<&str> {
        self.error.as_ref()?.code.as_deref()
    }

    /// `error.type`.
    pub fn kind(&self) -> Option<&str> {
        self.error.as_ref()?.kind.as_deref()
    }
}

/// Reads the error fields of a body in one pass; `None` when the body is not complete JSON
/// (or not an object).
pub fn error_body(body: &[u8]) -> Option<ErrorBody<'_>> {
    serde_json::from_str(object(body)?).ok()
}

/// The body as text, when it is UTF-8 and holds an object. The one-pass readers check this
/// first: serde_json skips the fields they do not read without checking their bytes, and
/// JSON is UTF-8, so a body with invalid UTF-8 anywhere is not JSON to them either (as it is
/// not to [`parse`]); and serde reads a struct from an array too, by position, so `["x"]`
/// would have a `model`.
fn object(body: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(body).ok()?;
    text.trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
        .then_some(text)
}

/// The top-level `model` of a JSON request body, read without building the whole document.
pub fn model(body: &[u8]) -> Option<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Model<'a> {
        #[serde(borrow, default)]
        model: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<Model<'_>>(object(body)?).ok()?.model
}

/// The string at `path` (object keys) in `body`, if the body is complete JSON and the value
/// is a string.
pub fn string_at(body: &[u8], path: &[&str]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let mut cur = &value;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_str().map(str::to_owned)
}

/// The parsed body, when it is complete JSON.
pub fn parse(body: &[u8]) -> Option<Value> {
    serde_json::from_slice(body).ok()
}

/// Characters of prompt text in a request body: every string value except those under the
/// keys in `skip` (such as `model`). A rough but cheap basis for a token estimate before
/// sending; the host corrects its buckets with the real usage afterwards.
pub fn text_chars(value: &Value, skip: &[&str]) -> u64 {
    match value {
        Value::String(s) => s.chars().count() as u64,
        Value::Array(a) => a.iter().map(|v| text_chars(v, skip)).sum(),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .map(|(_, v)| text_chars(v, skip))
            .sum(),
        _ => 0,
    }
}

/// Estimated tokens for `chars` characters of text: about four characters a token, rounded up.
pub fn tokens_for_chars(chars: u64) -> u64 {
    chars.div_ceil(4)
}

/// Normalizes a provider error code to lower snake case (`Rate-Limit Exceeded` →
/// `rate_limit_exceeded`), capped at 128 bytes.
pub fn normalize_code(code: &str) -> String {
    let mut out = String::with_capacity(code.len().min(128));
    for c in code.trim().chars() {
        if out.len() >= 128 {
            break;
        }
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_string() {
        let body = br#"{"error":{"code":"rate_limit_exceeded","type":"requests"}}"#;
        assert_eq!(
            string_at(body, &["error", "code"]).as_deref(),
            Some("rate_limit_exceeded")
        );
        assert_eq!(string_at(body, &["error", "missing"]), None);
    }

    #[test]
    fn error_fields_in_one_pass() {
        let e = error_body(br#"{"error":{"code":null,"type":"insufficient_quota","param":1}}"#)
            .unwrap();
        assert_eq!((e.code(), e.kind()), (None, Some("insufficient_quota")));
        let e = error_body(br#"{"message":"API rate limit exceeded","documentation_url":"x"}"#)
            .unwrap();
        assert_eq!(e.message.as_deref(), Some("API rate limit exceeded"));
        assert!(error_body(b"{\"error\":").is_none());
        assert_eq!(
            model(br#"{"messages":[],"model":"gpt-4o"}"#).as_deref(),
            Some("gpt-4o")
        );
        assert_eq!(model(b"[1,2]"), None);
    }

    #[test]
    fn a_body_with_invalid_utf8_in_a_field_not_read_is_not_json() {
        // Found by the `json` fuzz target: the one-pass readers answered where `parse` did not.
        let body = b"{\"model\":\"claude\",\"error\":{\"code\":\"x\"},\"note\":\"\xf6\"}";
        assert_eq!(model(body), None);
        assert!(error_body(body).is_none());
        assert_eq!(parse(body), None);
    }

    #[test]
    fn an_array_has_no_model_and_no_error() {
        // Found by the `json` fuzz target: serde read the struct from the array by position.
        assert_eq!(model(br#"["gpt-4o"]"#), None);
        assert!(error_body(br#"[{"code":"rate_limit_exceeded"}, "slow down"]"#).is_none());
        assert!(error_body(br#"{"error": ["rate_limit_exceeded"]}"#).is_none());
        assert_eq!(model(b" \n{\"model\":\"m\"}").as_deref(), Some("m"));
    }

    #[test]
    fn truncated_body_yields_nothing() {
        assert_eq!(
            string_at(br#"{"error":{"code":"rate_li"#, &["error", "code"]),
            None
        );
        assert_eq!(string_at(b"<html>", &["error"]), None);
    }

    #[test]
    fn counts_prompt_text_but_not_skipped_keys() {
        let v =
            parse(br#"{"model":"gpt-4o","messages":[{"role":"user","content":"hello world!"}]}"#)
                .unwrap();
        assert_eq!(text_chars(&v, &["model", "role"]), 12);
        assert_eq!(tokens_for_chars(12), 3);
        assert_eq!(tokens_for_chars(13), 4);
    }

    #[test]
    fn normalizes() {
        assert_eq!(
            normalize_code("Rate-Limit Exceeded!"),
            "rate_limit_exceeded"
        );
        assert_eq!(normalize_code("overloaded_error"), "overloaded_error");
        assert_eq!(normalize_code(&"x".repeat(500)).len(), 128);
    }
}
