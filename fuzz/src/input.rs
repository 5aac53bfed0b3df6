//! Structured inputs: requests, responses and header fields in the shapes providers send.
//!
//! Random bytes rarely spell `x-ratelimit-reset-tokens` or an HTTP-date, so names come from
//! the list of fields the SDK and the bundled plugins read (or are arbitrary), and values are
//! numbers, decimals, Go durations, dates, structured fields or arbitrary text. Every string
//! is kept free of what a `fields` block cannot hold (a line break in a value; a colon,
//! whitespace or control character in a name), as the host guarantees for what it passes.

use arbitrary::{Arbitrary, Result, Unstructured};
use sluice_plugin_sdk::{
    Outcome, Request, RequestClass, Response, ResponsePart, TransportFailure, UncertainWrite,
};

/// Fields the SDK's parsers and the bundled plugins read, and some they must not.
pub const NAMES: &[&str] = &[
    "retry-after",
    "retry-after-ms",
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-used",
    "x-ratelimit-resource",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-limit",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-limit",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-limit",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-limit",
    "anthropic-ratelimit-output-tokens-remaining",
    "anthropic-ratelimit-output-tokens-reset",
    "x-should-retry",
    "stripe-should-retry",
    "idempotency-key",
    "x-sluice-priority",
    "x-sluice-tenant",
    "content-type",
    "authorization",
    "cookie",
    "x-api-key",
];

/// Units of a Go duration, as OpenAI writes its resets.
const GO_UNITS: &[&str] = &["h", "m", "s", "ms", "us", "µs", "ns"];

/// A field name: one the readers know, in any case, or arbitrary.
#[derive(Debug)]
pub struct Name(pub String);

impl<'a> Arbitrary<'a> for Name {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Self(match u.int_in_range(0..=7)? {
            0 => token(u)?,
            1 => u.choose(NAMES)?.to_ascii_uppercase(),
            _ => (*u.choose(NAMES)?).to_owned(),
        }))
    }
}

/// A field value in one of the shapes providers send.
#[derive(Debug)]
pub struct Value(pub String);

impl<'a> Arbitrary<'a> for Value {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let v = match u.int_in_range(0..=11)? {
            0 => u64::arbitrary(u)?.to_string(),
            1 => u16::arbitrary(u)?.to_string(),
            2 => i64::arbitrary(u)?.to_string(),
            3 => format!("{}.{}", u32::arbitrary(u)?, u16::arbitrary(u)?),
            4 => {
                let mut d = String::new();
                for _ in 0..u.int_in_range(1..=3)? {
                    d.push_str(&u16::arbitrary(u)?.to_string());
                    if bool::arbitrary(u)? {
                        d.push('.');
                        d.push_str(&u8::arbitrary(u)?.to_string());
                    }
                    d.push_str(u.choose(GO_UNITS)?);
                }
                d
            }
            5 => httpdate::fmt_http_date(system_time(u)?),
            6 => rfc3339(u)?,
            7 => {
                let name = token(u)?;
                let mut item = format!("\"{name}\"");
                for key in ["q", "w", "r", "t"] {
                    if bool::arbitrary(u)? {
                        item.push_str(&format!(";{key}={}", i32::arbitrary(u)?));
                    }
                }
                item
            }
            8 => u
                .choose(&["true", "false", "TRUE", "", " ", "0", "-0", "1e3"])?
                .to_string(),
            _ => line(u)?,
        };
        Ok(Self(v))
    }
}

/// A token: letters, digits and `-`, at least one character.
fn token(u: &mut Unstructured<'_>) -> Result<String> {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789-_";
    let len = u.int_in_range(1..=16)?;
    (0..len)
        .map(|_| u.choose(CHARS).map(|&b| char::from(b)))
        .collect()
}

/// Arbitrary text without a line break: what a field value can hold.
pub fn line(u: &mut Unstructured<'_>) -> Result<String> {
    let s = String::arbitrary(u)?;
    Ok(s.replace(['\r', '\n'], " "))
}

/// A wall-clock time from the epoch to the year 9999, in whole seconds.
fn system_time(u: &mut Unstructured<'_>) -> Result<std::time::SystemTime> {
    let secs = u.int_in_range(0..=253_402_300_799u64)?;
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// An RFC 3339 timestamp, sometimes with a fraction or an offset.
fn rfc3339(u: &mut Unstructured<'_>) -> Result<String> {
    let secs = u.int_in_range(0..=253_402_300_799i64)?;
    let nanos = if bool::arbitrary(u)? {
        i128::from(u.int_in_range(0..=999_999_999u32)?)
    } else {
        0
    };
    let offset = time::UtcOffset::from_whole_seconds(u.int_in_range(-86_399..=86_399)?)
        .unwrap_or(time::UtcOffset::UTC);
    let t =
        time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(secs) * 1_000_000_000 + nanos)
            .map_err(|_| arbitrary::Error::IncorrectFormat)?
            .to_offset(offset);
    t.format(&time::format_description::well_known::Rfc3339)
        .map_err(|_| arbitrary::Error::IncorrectFormat)
}

/// A header list.
#[derive(Debug)]
pub struct Fields(pub Vec<(String, String)>);

impl<'a> Arbitrary<'a> for Fields {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let n = u.int_in_range(0..=12)?;
        let mut fields = Vec::with_capacity(n);
        for _ in 0..n {
            fields.push((Name::arbitrary(u)?.0, Value::arbitrary(u)?.0));
        }
        Ok(Self(fields))
    }
}

impl Fields {
    /// The list as a `fields` block.
    pub fn block(&self) -> String {
        sluice_plugin_sdk::headers::encode(self.0.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .expect("names are tokens and values have no line break")
    }
}

/// A JSON body in the shapes the plugins read, or arbitrary bytes.
#[derive(Debug)]
pub struct Body(pub Vec<u8>);

impl<'a> Arbitrary<'a> for Body {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let text = |u: &mut Unstructured<'a>| -> Result<String> {
            Ok(serde_json::to_string(&String::arbitrary(u)?).unwrap_or_default())
        };
        let body = match u.int_in_range(0..=7)? {
            0 => format!(
                r#"{{"model":{},"max_tokens":{},"user":{},"service_tier":"flex","messages":[{{"role":"user","content":{}}}]}}"#,
                text(u)?,
                u64::arbitrary(u)?,
                text(u)?,
                text(u)?
            )
            .into_bytes(),
            1 => format!(
                r#"{{"error":{{"type":{},"code":{},"message":{}}}}}"#,
                text(u)?,
                text(u)?,
                text(u)?
            )
            .into_bytes(),
            2 => format!(
                r#"{{"usage":{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{},"input_tokens":{},"output_tokens":{},"cache_creation_input_tokens":{},"cache_read_input_tokens":{}}}}}"#,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?
            )
            .into_bytes(),
            3 => {
                // A stream's end: events, possibly cut.
                let mut s = String::new();
                for _ in 0..u.int_in_range(0..=4)? {
                    let event = u.choose(&[
                        "message_start",
                        "message_delta",
                        "response.completed",
                        "error",
                        "ping",
                    ])?;
                    s.push_str(&format!(
                        "event: {event}\ndata: {{\"type\":\"{event}\",\"usage\":{{\"input_tokens\":{},\"output_tokens\":{},\"prompt_tokens\":{},\"completion_tokens\":{}}},\"message\":{{\"usage\":{{\"input_tokens\":{}}}}},\"response\":{{\"usage\":{{\"input_tokens\":{},\"output_tokens\":{}}}}},\"error\":{{\"type\":{}}}}}\n\n",
                        u32::arbitrary(u)?,
                        u32::arbitrary(u)?,
                        u32::arbitrary(u)?,
                        u32::arbitrary(u)?,
                        u64::arbitrary(u)?,
                        u64::arbitrary(u)?,
                        u64::arbitrary(u)?,
                        text(u)?
                    ));
                }
                let cut = u.int_in_range(0..=s.len())?;
                s.as_bytes()[..cut].to_vec()
            }
            4 => format!(r#"{{"data":[{{"id":{}}}],"id":{}}}"#, text(u)?, text(u)?).into_bytes(),
            5 => event_stream(u)?,
            _ => Vec::<u8>::arbitrary(u)?,
        };
        Ok(Self(body))
    }
}

/// An AWS event stream (Bedrock's streamed answers): messages whose CRC-32s hold, of the
/// types Bedrock sends, with JSON or arbitrary payloads, the bytes possibly cut or altered.
fn event_stream(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    use sluice_plugin_sdk::eventstream::{HeaderValue, encode};
    let mut s = Vec::new();
    for _ in 0..u.int_in_range(0..=5)? {
        let exception = u.ratio(1, 5)?;
        let kind = *u.choose(&[
            "messageStart",
            "contentBlockDelta",
            "metadata",
            "chunk",
            "throttlingException",
            "modelStreamErrorException",
        ])?;
        let payload = match u.int_in_range(0..=3)? {
            0 => format!(
                r#"{{"contentBlockIndex":0,"delta":{{"text":{}}},"p":"abc"}}"#,
                serde_json::to_string(&String::arbitrary(u)?).unwrap_or_default()
            ),
            1 => format!(
                r#"{{"usage":{{"inputTokens":{},"outputTokens":{},"cacheReadInputTokens":{},"cacheWriteInputTokens":{}}}}}"#,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?,
                u64::arbitrary(u)?
            ),
            2 => {
                let chunk = format!(
                    r#"{{"type":"message_stop","delta":{{"text":{}}},"amazon-bedrock-invocationMetrics":{{"inputTokenCount":{},"outputTokenCount":{}}}}}"#,
                    serde_json::to_string(&String::arbitrary(u)?).unwrap_or_default(),
                    u64::arbitrary(u)?,
                    u64::arbitrary(u)?
                );
                format!(
                    r#"{{"bytes":"{}"}}"#,
                    sluice_plugin_sdk::test::base64(chunk.as_bytes())
                )
            }
            _ => String::arbitrary(u)?,
        };
        let (type_header, message_type) = if exception {
            (":exception-type", "exception")
        } else {
            (":event-type", "event")
        };
        s.extend(encode(
            &[
                (type_header, HeaderValue::String(kind)),
                (":message-type", HeaderValue::String(message_type)),
            ],
            payload.as_bytes(),
        ));
    }
    if u.ratio(1, 4)? && !s.is_empty() {
        let at = u.int_in_range(0..=s.len() - 1)?;
        s[at] ^= u8::arbitrary(u)?;
    }
    let cut = u.int_in_range(0..=s.len())?;
    s.truncate(cut);
    Ok(s)
}

/// A request as the host passes it to a plugin.
pub fn request(u: &mut Unstructured<'_>) -> Result<Request> {
    let method = u
        .choose(&["GET", "POST", "PUT", "PATCH", "DELETE", "post"])?
        .to_string();
    let host = u.choose(&[
        "https://api.openai.com",
        "https://api.anthropic.com",
        "https://api.github.com",
        "https://api.stripe.com",
        "https://bedrock-runtime.us-east-1.amazonaws.com",
        "http://127.0.0.1:8080",
    ])?;
    let path = u.choose(&[
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/embeddings",
        "/v1/messages",
        "/search/code",
        "/search/issues",
        "/graphql",
        "/repos/o/r/issues",
        "/v1/payment_intents",
        "/v1/customers/cus_1",
        "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
        "/model/us.amazon.nova-lite-v1%3A0/converse-stream",
        "/model/amazon.titan-embed-text-v2%3A0/invoke",
        "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke-with-response-stream",
        "/",
    ])?;
    let url = match u.int_in_range(0..=3)? {
        0 => line(u)?,
        _ => format!("{host}{path}"),
    };
    let class = *u.choose(&[
        RequestClass::Read,
        RequestClass::IdempotentWrite,
        RequestClass::UncertainWrite,
    ])?;
    let headers = Fields::arbitrary(u)?.block();
    let body = Body::arbitrary(u)?.0;
    // As the host shows a request to a plugin: the body's prefix, and the digest of all of it.
    let digest = sluice_plugin_sdk::digest::digest(&body).into();
    let prefix = body.len().min(sluice_plugin_sdk::digest::BODY_PREFIX);
    Ok(Request {
        method,
        url,
        class,
        headers,
        body: body[..prefix].to_vec(),
        digest,
        now_ms: now(u)?,
    })
}

/// A wall clock: mostly near the fixed one, sometimes anywhere.
fn now(u: &mut Unstructured<'_>) -> Result<i64> {
    Ok(if bool::arbitrary(u)? {
        crate::NOW_MS + i64::from(i32::arbitrary(u)?)
    } else {
        i64::arbitrary(u)?
    })
}

/// A provider's answer.
pub fn response(u: &mut Unstructured<'_>) -> Result<Response> {
    let status = match u.int_in_range(0..=3)? {
        0 => u16::arbitrary(u)?,
        _ => *u.choose(&[
            200, 201, 400, 401, 402, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504, 529,
        ])?,
    };
    Ok(Response {
        status,
        headers: Fields::arbitrary(u)?.block(),
        body: Body::arbitrary(u)?.0,
    })
}

/// An attempt's outcome: an answer, or a transport failure.
pub fn outcome(u: &mut Unstructured<'_>) -> Result<Outcome> {
    Ok(if u.ratio(1, 8)? {
        Outcome::Transport(*u.choose(&[
            TransportFailure::ConnectFailed,
            TransportFailure::TimeoutBeforeSend,
            TransportFailure::TimeoutAfterSend,
            TransportFailure::ResetAfterSend,
        ])?)
    } else {
        Outcome::Response(response(u)?)
    })
}

/// Which part of an answer is read.
pub fn part(u: &mut Unstructured<'_>) -> Result<ResponsePart> {
    Ok(*u.choose(&[
        ResponsePart::Complete,
        ResponsePart::StreamStart,
        ResponsePart::StreamEnd,
    ])?)
}

/// A write whose outcome is unknown.
pub fn uncertain_write(u: &mut Unstructured<'_>) -> Result<UncertainWrite> {
    let id = |u: &mut Unstructured<'_>| -> Result<Option<String>> {
        Ok(match u.int_in_range(0..=2)? {
            0 => None,
            1 => Some(format!("pi_{}", token(u)?)),
            _ => Some(line(u)?),
        })
    };
    Ok(UncertainWrite {
        method: "POST".into(),
        url: if u.ratio(1, 4)? {
            line(u)?
        } else {
            format!(
                "https://api.stripe.com/v1/{}",
                u.choose(&["payment_intents", "customers", "refunds/re_1", ""])?
            )
        },
        idempotency_key: id(u)?,
        client_reference: id(u)?,
        operation_id: id(u)?,
        now_ms: now(u)?,
    })
}
