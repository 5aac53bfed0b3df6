//! What a request used, as Anthropic reports it.
//!
//! - A whole answer: `usage.input_tokens`, `usage.cache_creation_input_tokens` and
//!   `usage.output_tokens`. Input counted against the input-tokens limit is the uncached
//!   input plus the tokens written to the cache; tokens read from the cache
//!   (`cache_read_input_tokens`) do not count toward input limits on current models, so
//!   they are left out.
//! - A stream: the input in `message_start`'s `message.usage`, and the output in the
//!   `usage.output_tokens` of the last `message_delta` (each delta carries the cumulative
//!   count). An `error` event (for example `overloaded_error` after the 200) is reported
//!   too, for the classification.
//!
//! Usage is reported as `input-tokens`, `output-tokens` and `tokens` (their total), the
//! dimensions the plugin's estimate uses; and, for billing, `cache-read-tokens` (the cache's
//! reads, not among the input) and `cache-write-tokens` (its writes, among the input) when
//! there were any. A stream cut before any `message_delta` reports
//! its input only.

use serde::Deserialize;
use sluice_plugin_sdk::cost::reported_usage;
use sluice_plugin_sdk::{Cost, Dimension, amount, sse};

#[derive(Debug, Default, Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl Usage {
    /// Input that counts toward input limits.
    fn input(&self) -> Option<u64> {
        self.input_tokens
            .map(|i| i.saturating_add(self.cache_creation_input_tokens.unwrap_or(0)))
    }

    /// What the answer says of the cache: (tokens read, besides the input; input tokens
    /// written).
    fn cache(&self) -> (u64, u64) {
        (
            self.cache_read_input_tokens.unwrap_or(0),
            self.cache_creation_input_tokens.unwrap_or(0),
        )
    }
}

/// A message body, or a `message_start` event's `message`.
#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    usage: Option<Usage>,
}

/// One event of a stream, with only what usage and errors need.
#[derive(Debug, Deserialize)]
struct StreamEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Debug, Deserialize)]
struct ErrorObject {
    #[serde(rename = "type")]
    kind: String,
}

/// The usage a whole answer's body reports.
pub fn of_body(body: &[u8]) -> Vec<Cost> {
    let Some(u) = serde_json::from_slice::<Message>(body)
        .ok()
        .and_then(|m| m.usage)
    else {
        return Vec::new();
    };
    reported_usage(u.input(), u.output_tokens, u.cache())
}

/// What the end of a stream says.
#[derive(Debug, Default, PartialEq)]
pub struct StreamEnd {
    /// The usage read.
    pub usage: Vec<Cost>,
    /// The type of the first `error` event, when the stream sent one.
    pub error: Option<String>,
}

/// Reads the end of a stream: usage and the first error event.
pub fn of_stream(body: &[u8]) -> StreamEnd {
    let (mut input, mut output, mut error) = (None, None, None);
    let mut cache = (0, 0);
    for e in sse::events(body) {
        if !(e.is("message_start") || e.is("message_delta") || e.is("error")) {
            continue;
        }
        let Ok(event) = serde_json::from_str::<StreamEvent>(&e.data) else {
            continue;
        };
        match event.kind.as_str() {
            "message_start" => {
                let usage = event.message.and_then(|m| m.usage);
                input = usage.as_ref().and_then(Usage::input);
                cache = usage.as_ref().map_or((0, 0), Usage::cache);
            }
            "message_delta" => {
                if let Some(out) = event.usage.and_then(|u| u.output_tokens) {
                    output = Some(out);
                }
            }
            "error" if error.is_none() => error = event.error.map(|e| e.kind),
            _ => {}
        }
    }
    StreamEnd {
        usage: reported_usage(input, output, cache),
        error,
    }
}

/// What a stretch of a stream produced: the output tokens of its content deltas (text,
/// tool input, thinking), their total with the input when its `message_start` is in the
/// stretch, and then that input and the cache's use.
pub fn of_stretch(stretch: &[u8]) -> Vec<Cost> {
    let (mut input, mut output, mut cache) = (None, 0_u64, (0, 0));
    for e in sse::events(stretch) {
        if e.is("content_block_delta") {
            output = output.saturating_add(sse::produced_tokens(
                &e.data,
                &["text", "partial_json", "thinking"],
            ));
        } else if e.is("message_start")
            && let Ok(event) = serde_json::from_str::<StreamEvent>(&e.data)
        {
            let usage = event.message.and_then(|m| m.usage);
            input = usage.as_ref().and_then(Usage::input);
            cache = usage.as_ref().map_or((0, 0), Usage::cache);
        }
    }
    match input {
        Some(_) => reported_usage(input, Some(output), cache),
        None => vec![
            amount(Dimension::OutputTokens, output),
            amount(Dimension::Tokens, output),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::billing::{CACHE_READ_TOKENS, CACHE_WRITE_TOKENS};

    fn amounts(c: &[Cost]) -> Vec<(Dimension, u64)> {
        c.iter().map(|c| (c.dimension.clone(), c.amount)).collect()
    }

    const STREAM: &str = "event: message_start\n\
        data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\n\n\
        event: content_block_start\n\
        data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
        event: ping\n\
        data: {\"type\": \"ping\"}\n\n\
        event: content_block_delta\n\
        data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n\
        event: message_delta\n\
        data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null},\"usage\":{\"output_tokens\":9}}\n\n\
        event: message_delta\n\
        data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n\
        event: message_stop\n\
        data: {\"type\":\"message_stop\"}\n\n";

    #[test]
    fn a_whole_answer_counts_cache_writes_as_input_and_not_cache_reads() {
        let body = br#"{"id":"msg_1","type":"message","content":[{"type":"text","text":"Hi"}],"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":5000,"output_tokens":30}}"#;
        assert_eq!(
            amounts(&of_body(body)),
            vec![
                (Dimension::InputTokens, 112),
                (Dimension::OutputTokens, 30),
                (Dimension::Tokens, 142),
                // For billing: the reads (not input) and the writes (among it).
                (Dimension::Other(CACHE_READ_TOKENS.into()), 5_000),
                (Dimension::Other(CACHE_WRITE_TOKENS.into()), 100),
            ]
        );
    }

    #[test]
    fn a_body_without_usage_reports_nothing() {
        assert!(of_body(br#"{"type":"error","error":{"type":"overloaded_error"}}"#).is_empty());
        assert!(of_body(br#"{"id":"msg_1","usage":{"input_tok"#).is_empty());
    }

    #[test]
    fn a_stream_takes_input_from_its_start_and_output_from_its_last_delta() {
        let end = of_stream(STREAM.as_bytes());
        assert_eq!(
            amounts(&end.usage),
            vec![
                (Dimension::InputTokens, 30),
                (Dimension::OutputTokens, 15),
                (Dimension::Tokens, 45),
                (Dimension::Other(CACHE_READ_TOKENS.into()), 100),
                (Dimension::Other(CACHE_WRITE_TOKENS.into()), 5),
            ]
        );
        assert_eq!(end.error, None);
    }

    #[test]
    fn an_error_event_is_reported_and_the_input_still_counts() {
        let body = "event: message_start\n\
            data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n\
            event: error\n\
            data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let end = of_stream(body.as_bytes());
        assert_eq!(end.error.as_deref(), Some("overloaded_error"));
        assert_eq!(amounts(&end.usage), vec![(Dimension::InputTokens, 7)]);
    }

    #[test]
    fn a_stream_whose_middle_is_missing_still_reads_both_ends() {
        // The first and last bytes of a long stream, joined at an event boundary; the
        // event before the join was cut.
        let head = &STREAM[..STREAM.find("event: content_block_delta").unwrap() + 60];
        let tail = &STREAM[STREAM.rfind("event: message_delta").unwrap()..];
        let body = format!("{head}\n\n{tail}");
        let end = of_stream(body.as_bytes());
        assert_eq!(
            amounts(&end.usage),
            vec![
                (Dimension::InputTokens, 30),
                (Dimension::OutputTokens, 15),
                (Dimension::Tokens, 45),
                (Dimension::Other(CACHE_READ_TOKENS.into()), 100),
                (Dimension::Other(CACHE_WRITE_TOKENS.into()), 5),
            ]
        );
    }
}
