//! What a request used, as Bedrock reports it.
//!
//! - `Converse`: the answer's `usage` (`inputTokens`, `outputTokens`,
//!   `cacheReadInputTokens`, `cacheWriteInputTokens`).
//! - `ConverseStream`: the same `usage` in the `metadata` event, sent once near the stream's
//!   end.
//! - `InvokeModel`: the answer's headers, whatever the model's body says:
//!   `x-amzn-bedrock-input-token-count`, `x-amzn-bedrock-output-token-count`,
//!   `x-amzn-bedrock-cache-read-input-token-count`, `x-amzn-bedrock-cache-write-input-token-count`.
//! - `InvokeModelWithResponseStream`: `chunk` events, each the model's own JSON in base64
//!   (`{"bytes": "..."}`); the last one carries `amazon-bedrock-invocationMetrics`
//!   (`inputTokenCount`, `outputTokenCount`, `cacheReadInputTokenCount`,
//!   `cacheWriteInputTokenCount`).
//!
//! Bedrock's input excludes the cache's reads and writes. Its token quotas count the input,
//! the tokens written to the cache and the output, never the cache's reads: so the input
//! reported is the input plus the writes, as for Anthropic, and for billing the reads
//! (`cache-read-tokens`, besides the input) and the writes (`cache-write-tokens`, among it).
//!
//! A stream is AWS's binary event stream ([`sluice_plugin_sdk::eventstream`]); its end, as the
//! host hands it over, is the stream's first and last bytes joined where a message begins.
//! An `exception` message (`throttlingException` after some events) is reported too, for the
//! classification. Each stretch the host counts while a stream passes is whole messages:
//! their text deltas are its output, at four bytes a token.

use base64::Engine as _;
use serde::Deserialize;
use sluice_plugin_sdk::cost::reported_usage;
use sluice_plugin_sdk::eventstream::{self, Message};
use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::{Cost, Dimension, amount, aws, sse};

use crate::route::Operation;

/// Converse's `usage`.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
}

/// A Converse answer, or a `metadata` event's payload: only its usage.
#[derive(Debug, Deserialize)]
struct WithUsage {
    #[serde(default)]
    usage: Option<TokenUsage>,
}

/// `amazon-bedrock-invocationMetrics`.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InvocationMetrics {
    input_token_count: Option<u64>,
    output_token_count: Option<u64>,
    cache_read_input_token_count: Option<u64>,
    cache_write_input_token_count: Option<u64>,
}

/// What the reports agree on: input (with the cache's writes), output, and the cache's use.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    input: Option<u64>,
    output: Option<u64>,
    read: u64,
    written: u64,
}

impl Counts {
    fn new(
        input: Option<u64>,
        output: Option<u64>,
        read: Option<u64>,
        written: Option<u64>,
    ) -> Self {
        let written = written.unwrap_or(0);
        Self {
            input: input.map(|i| i.saturating_add(written)),
            output,
            read: read.unwrap_or(0),
            written,
        }
    }

    fn costs(self) -> Vec<Cost> {
        reported_usage(self.input, self.output, (self.read, self.written))
    }
}

impl From<TokenUsage> for Counts {
    fn from(u: TokenUsage) -> Self {
        Self::new(
            u.input_tokens,
            u.output_tokens,
            u.cache_read_input_tokens,
            u.cache_write_input_tokens,
        )
    }
}

impl From<InvocationMetrics> for Counts {
    fn from(m: InvocationMetrics) -> Self {
        Self::new(
            m.input_token_count,
            m.output_token_count,
            m.cache_read_input_token_count,
            m.cache_write_input_token_count,
        )
    }
}

/// The usage a Converse answer's body reports.
pub fn of_converse(body: &[u8]) -> Vec<Cost> {
    serde_json::from_slice::<WithUsage>(body)
        .ok()
        .and_then(|a| a.usage)
        .map(|u| Counts::from(u).costs())
        .unwrap_or_default()
}

/// The usage an `InvokeModel` answer's headers report.
pub fn of_headers(h: &Headers<'_>) -> Vec<Cost> {
    Counts::new(
        h.get_u64("x-amzn-bedrock-input-token-count"),
        h.get_u64("x-amzn-bedrock-output-token-count"),
        h.get_u64("x-amzn-bedrock-cache-read-input-token-count"),
        h.get_u64("x-amzn-bedrock-cache-write-input-token-count"),
    )
    .costs()
}

/// What the end of a stream says.
#[derive(Debug, Default, PartialEq)]
pub struct StreamEnd {
    /// The usage it reports.
    pub usage: Vec<Cost>,
    /// The first `exception` message's type and message, when the stream sent one.
    pub exception: Option<(String, Option<String>)>,
}

/// Reads the end of a stream of `operation` (its first and last bytes): the last usage it
/// reports and its first exception.
pub fn of_stream(operation: Operation, body: &[u8]) -> StreamEnd {
    let mut end = StreamEnd::default();
    let mut counts = None;
    for m in eventstream::messages(body) {
        if m.is_exception() {
            if end.exception.is_none() {
                let kind = m.exception_type().unwrap_or("").to_owned();
                end.exception = Some((kind, aws::message(m.payload)));
            }
            continue;
        }
        if let Some(c) = reported(operation, &m) {
            counts = Some(c);
        }
    }
    end.usage = counts.map(Counts::costs).unwrap_or_default();
    end
}

/// The usage one event reports: a Converse stream's `metadata`, an invocation's `chunk` that
/// carries its metrics.
fn reported(operation: Operation, m: &Message<'_>) -> Option<Counts> {
    match (operation, m.event_type()?) {
        (Operation::ConverseStream, "metadata") => serde_json::from_slice::<WithUsage>(m.payload)
            .ok()?
            .usage
            .map(Counts::from),
        (Operation::InvokeStream, "chunk") => {
            let chunk = chunk(m.payload)?;
            let value: serde_json::Value = serde_json::from_slice(&chunk).ok()?;
            let metrics = value.get("amazon-bedrock-invocationMetrics")?;
            serde_json::from_value::<InvocationMetrics>(metrics.clone())
                .ok()
                .map(Counts::from)
        }
        _ => None,
    }
}

/// A `chunk` event's model JSON: its payload's `bytes`, decoded from base64.
fn chunk(payload: &[u8]) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow)]
        bytes: std::borrow::Cow<'a, str>,
    }
    let c: Chunk<'_> = serde_json::from_slice(payload).ok()?;
    base64::engine::general_purpose::STANDARD
        .decode(c.bytes.as_bytes())
        .ok()
}

/// The keys whose strings a Converse stream's `contentBlockDelta` writes: text, a tool's
/// input (JSON, in pieces), reasoning. Bedrock's padding (`p`) is not among them.
const CONVERSE_DELTA_KEYS: [&str; 2] = ["text", "input"];

/// The keys whose strings an invocation's chunks write, in the models' own formats:
/// Anthropic's `text`, `partial_json` and `thinking` deltas and text completions'
/// `completion`, Titan's `outputText`, Llama's `generation`, Mistral's, Cohere's and Nova's
/// `text`.
const INVOKE_DELTA_KEYS: [&str; 6] = [
    "text",
    "partial_json",
    "thinking",
    "completion",
    "outputText",
    "generation",
];

/// What one stretch of a stream of `operation` produced: the output tokens of its deltas;
/// and, in the first stretch (`at` 0), the input the stream reports there, else `prompt` (the
/// request's own estimate).
pub fn of_stretch(operation: Operation, stretch: &[u8], at: u64, prompt: Option<u64>) -> Vec<Cost> {
    let mut output = 0_u64;
    let mut reported_input = None;
    for m in eventstream::messages(stretch) {
        if m.is_exception() {
            continue;
        }
        let produced = match (operation, m.event_type()) {
            (Operation::ConverseStream, Some("contentBlockDelta")) => {
                std::str::from_utf8(m.payload)
                    .map_or(0, |p| sse::produced_tokens(p, &CONVERSE_DELTA_KEYS))
            }
            (Operation::InvokeStream, Some("chunk")) => chunk(m.payload)
                .and_then(|c| String::from_utf8(c).ok())
                .map_or(0, |c| sse::produced_tokens(&c, &INVOKE_DELTA_KEYS)),
            _ => 0,
        };
        output = output.saturating_add(produced);
        if at == 0
            && reported_input.is_none()
            && let Some(c) = reported(operation, &m)
        {
            reported_input = c.input;
        }
    }
    let input = if at == 0 {
        reported_input.or(prompt)
    } else {
        None
    };
    let mut costs = vec![amount(Dimension::OutputTokens, output)];
    if let Some(i) = input {
        costs.push(amount(Dimension::InputTokens, i));
    }
    costs.push(amount(
        Dimension::Tokens,
        output.saturating_add(input.unwrap_or(0)),
    ));
    costs
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::billing::{CACHE_READ_TOKENS, CACHE_WRITE_TOKENS};
    use sluice_plugin_sdk::eventstream::{event, exception};
    use sluice_plugin_sdk::test::base64;

    fn amounts(c: &[Cost]) -> Vec<(Dimension, u64)> {
        c.iter().map(|c| (c.dimension.clone(), c.amount)).collect()
    }

    fn delta(text: &str) -> Vec<u8> {
        event(
            "contentBlockDelta",
            &format!(
                r#"{{"contentBlockIndex":0,"delta":{{"text":"{text}"}},"p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"}}"#
            ),
        )
    }

    fn metadata() -> Vec<u8> {
        event(
            "metadata",
            r#"{"usage":{"inputTokens":12,"outputTokens":4,"totalTokens":16,"cacheReadInputTokens":100,"cacheWriteInputTokens":8},"metrics":{"latencyMs":300},"p":"abcdef"}"#,
        )
    }

    fn converse_stream() -> Vec<u8> {
        [
            event("messageStart", r#"{"role":"assistant","p":"abcd"}"#),
            delta("Hello, "),
            delta("world!"),
            event("contentBlockStop", r#"{"contentBlockIndex":0,"p":"ab"}"#),
            event("messageStop", r#"{"stopReason":"end_turn","p":"abc"}"#),
            metadata(),
        ]
        .concat()
    }

    #[test]
    fn a_converse_answer_counts_cache_writes_as_input_and_bills_reads_apart() {
        let body = br#"{"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":20,"outputTokens":5,"totalTokens":25,"cacheReadInputTokens":300,"cacheWriteInputTokens":10},"metrics":{"latencyMs":420}}"#;
        assert_eq!(
            amounts(&of_converse(body)),
            vec![
                (Dimension::InputTokens, 30),
                (Dimension::OutputTokens, 5),
                (Dimension::Tokens, 35),
                (Dimension::Other(CACHE_READ_TOKENS.into()), 300),
                (Dimension::Other(CACHE_WRITE_TOKENS.into()), 10),
            ]
        );
        assert!(of_converse(br#"{"message":"Malformed input request"}"#).is_empty());
        assert!(of_converse(br#"{"usage":{"inputTok"#).is_empty());
    }

    #[test]
    fn an_invocation_s_headers_are_its_usage() {
        let h = Headers::new([
            ("X-Amzn-Bedrock-Input-Token-Count", "17"),
            ("X-Amzn-Bedrock-Output-Token-Count", "40"),
            ("X-Amzn-Bedrock-Invocation-Latency", "812"),
        ]);
        assert_eq!(
            amounts(&of_headers(&h)),
            vec![
                (Dimension::InputTokens, 17),
                (Dimension::OutputTokens, 40),
                (Dimension::Tokens, 57),
            ]
        );
        assert!(of_headers(&Headers::new([])).is_empty());
    }

    #[test]
    fn a_converse_stream_s_metadata_is_its_usage_even_with_its_middle_missing() {
        let stream = converse_stream();
        let want = vec![
            (Dimension::InputTokens, 20),
            (Dimension::OutputTokens, 4),
            (Dimension::Tokens, 24),
            (Dimension::Other(CACHE_READ_TOKENS.into()), 100),
            (Dimension::Other(CACHE_WRITE_TOKENS.into()), 8),
        ];
        let end = of_stream(Operation::ConverseStream, &stream);
        assert_eq!(amounts(&end.usage), want);
        assert_eq!(end.exception, None);
        // The first bytes, cut inside the second delta, joined to the last message.
        let first = [event("messageStart", "{}"), delta("Hello, ")].concat();
        let second = delta("world!");
        let joined = [&first[..], &second[..second.len() / 2], &metadata()[..]].concat();
        assert_eq!(
            amounts(&of_stream(Operation::ConverseStream, &joined).usage),
            want
        );
    }

    #[test]
    fn a_stream_that_ends_in_an_exception_reports_it() {
        let stream = [
            event("messageStart", r#"{"role":"assistant"}"#),
            delta("partial"),
            exception(
                "throttlingException",
                r#"{"message":"Too many tokens, please wait before trying again."}"#,
            ),
        ]
        .concat();
        let end = of_stream(Operation::ConverseStream, &stream);
        assert!(end.usage.is_empty());
        assert_eq!(
            end.exception,
            Some((
                "throttlingException".into(),
                Some("Too many tokens, please wait before trying again.".into())
            ))
        );
        // Its stretch still counts what came before the exception.
        assert_eq!(
            amounts(&of_stretch(
                Operation::ConverseStream,
                &stream,
                4096,
                Some(9)
            )),
            vec![(Dimension::OutputTokens, 2), (Dimension::Tokens, 2)]
        );
    }

    #[test]
    fn stretches_count_their_deltas_and_the_first_its_input() {
        let stream = converse_stream();
        // "Hello, " and "world!": 7 and 6 bytes, 2 tokens each; never the padding.
        assert_eq!(
            amounts(&of_stretch(Operation::ConverseStream, &stream, 0, Some(50))),
            vec![
                (Dimension::OutputTokens, 4),
                (Dimension::InputTokens, 20),
                (Dimension::Tokens, 24),
            ]
        );
        let first = [event("messageStart", "{}"), delta("abcdefgh")].concat();
        assert_eq!(
            amounts(&of_stretch(Operation::ConverseStream, &first, 0, Some(50))),
            vec![
                (Dimension::OutputTokens, 2),
                (Dimension::InputTokens, 50),
                (Dimension::Tokens, 52),
            ]
        );
        let tool = event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"city\": \"Paris\"}"}}}"#,
        );
        assert_eq!(
            amounts(&of_stretch(Operation::ConverseStream, &tool, 8, None)),
            vec![(Dimension::OutputTokens, 5), (Dimension::Tokens, 5)]
        );
    }

    fn chunk_event(json: &str) -> Vec<u8> {
        event(
            "chunk",
            &format!(
                r#"{{"bytes":"{}","p":"abcdefghij"}}"#,
                base64(json.as_bytes())
            ),
        )
    }

    #[test]
    fn an_invocation_stream_s_last_chunk_carries_its_metrics() {
        let stream = [
            chunk_event(
                r#"{"type":"message_start","message":{"role":"assistant","content":[],"usage":{"input_tokens":14,"output_tokens":1}}}"#,
            ),
            chunk_event(
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there"}}"#,
            ),
            chunk_event(
                r#"{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":14,"outputTokenCount":3,"invocationLatency":640,"firstByteLatency":310}}"#,
            ),
        ]
        .concat();
        assert_eq!(
            amounts(&of_stream(Operation::InvokeStream, &stream).usage),
            vec![
                (Dimension::InputTokens, 14),
                (Dimension::OutputTokens, 3),
                (Dimension::Tokens, 17),
            ]
        );
        // "Hello there": 11 bytes, 3 tokens; the input the metrics report.
        assert_eq!(
            amounts(&of_stretch(Operation::InvokeStream, &stream, 0, Some(9))),
            vec![
                (Dimension::OutputTokens, 3),
                (Dimension::InputTokens, 14),
                (Dimension::Tokens, 17),
            ]
        );
        // A chunk whose bytes are not base64, or not JSON, produced nothing.
        let junk = event("chunk", r#"{"bytes":"!!!"}"#);
        assert_eq!(
            amounts(&of_stretch(Operation::InvokeStream, &junk, 64, None)),
            vec![(Dimension::OutputTokens, 0), (Dimension::Tokens, 0)]
        );
    }
}
