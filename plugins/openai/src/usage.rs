//! What a request used, as OpenAI reports it.
//!
//! - A whole answer carries a `usage` object: `prompt_tokens` / `completion_tokens` (chat
//!   completions, completions), `input_tokens` / `output_tokens` (the Responses API), or
//!   `prompt_tokens` alone (embeddings, which produce no output tokens); `total_tokens` in
//!   each. The body is read as complete JSON: an answer longer than the host's body cap has
//!   its `usage` cut off, and then none is reported.
//! - A stream reports usage only when the request set `stream_options.include_usage`: the
//!   last `data:` event then carries a non-null `usage` (with an empty `choices`). The
//!   Responses API streams it in `response.completed`, under `response.usage`. Without
//!   either, a stream reports nothing.
//!
//! Usage is reported as `input-tokens`, `output-tokens` and `tokens` (their total).

use serde::Deserialize;
use sluice_plugin_sdk::billing::CACHED_INPUT_TOKENS;
use sluice_plugin_sdk::{Cost, Dimension, Response, ResponsePart, amount, sse};

/// The usage object of any of OpenAI's APIs.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    /// Chat and text completions: `cached_tokens` of the prompt.
    prompt_tokens_details: Option<Details>,
    /// The Responses API: the same, for its input.
    input_tokens_details: Option<Details>,
}

/// Where OpenAI says how much of the prompt it read from its cache.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
struct Details {
    cached_tokens: Option<u64>,
}

/// A body or an event with a `usage` at its top, or under `response` (Responses API
/// streams).
#[derive(Debug, Deserialize)]
struct Carrier {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    response: Option<Nested>,
}

#[derive(Debug, Deserialize)]
struct Nested {
    #[serde(default)]
    usage: Option<Usage>,
}

impl Carrier {
    fn usage(self) -> Option<Usage> {
        self.usage.or(self.response.and_then(|r| r.usage))
    }
}

/// The usage `resp` reports for `part`: none for a failed answer or a stream's start.
pub fn usage(resp: &Response, part: ResponsePart) -> Vec<Cost> {
    if !(200..300).contains(&resp.status) {
        return Vec::new();
    }
    let found = match part {
        ResponsePart::Complete => carried(&resp.body),
        ResponsePart::StreamStart => None,
        ResponsePart::StreamEnd => last_in_stream(&resp.body),
    };
    found.map_or_else(Vec::new, costs)
}

fn carried(json: &[u8]) -> Option<Usage> {
    serde_json::from_slice::<Carrier>(json).ok()?.usage()
}

/// The usage of the last event that carries a non-null one.
fn last_in_stream(body: &[u8]) -> Option<Usage> {
    let finder = memchr::memmem::Finder::new(b"\"usage\"");
    sse::events(body)
        .filter(|e| finder.find(e.data.as_bytes()).is_some())
        .filter_map(|e| carried(e.data.as_bytes()))
        .last()
}

fn costs(u: Usage) -> Vec<Cost> {
    let Some(input) = u.prompt_tokens.or(u.input_tokens) else {
        return Vec::new();
    };
    let output = u
        .completion_tokens
        .or(u.output_tokens)
        .or_else(|| u.total_tokens.map(|t| t.saturating_sub(input)))
        .unwrap_or(0);
    let total = u.total_tokens.unwrap_or(input.saturating_add(output));
    let mut out = vec![
        amount(Dimension::InputTokens, input),
        amount(Dimension::OutputTokens, output),
        amount(Dimension::Tokens, total),
    ];
    // The prompt tokens read from the cache, billed at the cached price.
    let cached = [u.prompt_tokens_details, u.input_tokens_details]
        .into_iter()
        .flatten()
        .find_map(|d| d.cached_tokens)
        .filter(|c| *c > 0);
    if let Some(cached) = cached {
        out.push(amount(
            Dimension::Other(CACHED_INPUT_TOKENS.into()),
            cached.min(input),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::test::response;

    fn ok(body: &str) -> Response {
        response(200, &[], body)
    }

    fn amounts(c: &[Cost]) -> Vec<(Dimension, u64)> {
        c.iter().map(|c| (c.dimension.clone(), c.amount)).collect()
    }

    fn tokens(input: u64, output: u64, total: u64) -> Vec<(Dimension, u64)> {
        vec![
            (Dimension::InputTokens, input),
            (Dimension::OutputTokens, output),
            (Dimension::Tokens, total),
        ]
    }

    #[test]
    fn chat_completions_report_prompt_and_completion_tokens() {
        let body = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}}}"#;
        assert_eq!(
            amounts(&usage(&ok(body), ResponsePart::Complete)),
            tokens(19, 10, 29)
        );
    }

    #[test]
    fn the_responses_api_reports_input_and_output_tokens() {
        let body = r#"{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}}"#;
        assert_eq!(
            amounts(&usage(&ok(body), ResponsePart::Complete)),
            tokens(36, 87, 123)
        );
    }

    #[test]
    fn embeddings_use_no_output_tokens() {
        let body = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}"#;
        assert_eq!(
            amounts(&usage(&ok(body), ResponsePart::Complete)),
            tokens(8, 0, 8)
        );
    }

    #[test]
    fn a_cut_or_failed_answer_reports_nothing() {
        assert!(
            usage(
                &ok(r#"{"choices":[{"message":{"content":"lo"#),
                ResponsePart::Complete
            )
            .is_empty()
        );
        let mut failed = ok(r#"{"usage":{"prompt_tokens":1,"completion_tokens":1}}"#);
        failed.status = 500;
        assert!(usage(&failed, ResponsePart::Complete).is_empty());
        assert!(usage(&ok(r#"{"usage":null}"#), ResponsePart::Complete).is_empty());
    }

    #[test]
    fn a_stream_reports_its_last_non_null_usage() {
        let body = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n\
                    data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n\
                    data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"total_tokens\":14}}\n\n\
                    data: [DONE]\n\n";
        assert_eq!(
            amounts(&usage(&ok(body), ResponsePart::StreamEnd)),
            tokens(12, 2, 14)
        );
        // The same body, read as the start of a stream: nothing yet.
        assert!(usage(&ok(body), ResponsePart::StreamStart).is_empty());
    }

    #[test]
    fn a_stream_without_include_usage_reports_nothing() {
        let body = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                    data: [DONE]\n\n";
        assert!(usage(&ok(body), ResponsePart::StreamEnd).is_empty());
    }

    #[test]
    fn a_responses_api_stream_reports_the_completed_response_s_usage() {
        let body = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n\
                    event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":5,\"output_tokens\":7,\"total_tokens\":12}}}\n\n";
        assert_eq!(
            amounts(&usage(&ok(body), ResponsePart::StreamEnd)),
            tokens(5, 7, 12)
        );
    }
}
