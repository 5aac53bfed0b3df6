//! What a request used, as Gemini reports it: `usageMetadata`.
//!
//! - `promptTokenCount` (with `toolUsePromptTokenCount`, the tools' results fed back) is the
//!   input; `cachedContentTokenCount`, among the prompt, was read from a cache.
//! - `candidatesTokenCount` plus `thoughtsTokenCount` is the output: thinking is billed as
//!   output.
//! - A stream repeats the usage in its chunks as a running total, so the last one counts,
//!   never their sum. Both forms of stream are read: server-sent events (`?alt=sse`, events
//!   ended by `\r\n\r\n`) and the JSON array sent without it. The end of a long stream is
//!   its first and last bytes joined: the last usage is in the last bytes.
//!
//! Usage is reported as `input-tokens`, `output-tokens` and `tokens` (their total), and, for
//! billing, `cached-input-tokens` when a cache was read.

use serde::Deserialize;
use sluice_plugin_sdk::billing::CACHED_INPUT_TOKENS;
use sluice_plugin_sdk::cost::reported_usage;
use sluice_plugin_sdk::{Cost, Dimension, amount, sse};

/// `usageMetadata`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    prompt_token_count: Option<u64>,
    tool_use_prompt_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

impl UsageMetadata {
    /// The input: the prompt and the tools' results.
    pub fn input(&self) -> Option<u64> {
        self.prompt_token_count
            .map(|p| p.saturating_add(self.tool_use_prompt_token_count.unwrap_or(0)))
    }

    /// The output: the candidates and the thinking, once either is reported.
    fn output(&self) -> Option<u64> {
        match (self.candidates_token_count, self.thoughts_token_count) {
            (None, None) => None,
            (c, t) => Some(c.unwrap_or(0).saturating_add(t.unwrap_or(0))),
        }
    }

    /// As the host's dimensions.
    pub fn costs(&self) -> Vec<Cost> {
        // Gemini's cache is read among the prompt, not besides it: no reads or writes apart.
        let mut out = reported_usage(self.input(), self.output(), (0, 0));
        if let Some(cached) = self.cached_content_token_count.filter(|c| *c > 0) {
            out.push(amount(Dimension::Other(CACHED_INPUT_TOKENS.into()), cached));
        }
        out
    }
}

const KEY: &[u8] = b"\"usageMetadata\"";

/// The last `usageMetadata` in `body` that reads whole: of an answer, or of a stream in
/// either form, however its events are ended and wherever it was cut.
pub fn last(body: &[u8]) -> Option<UsageMetadata> {
    memchr::memmem::rfind_iter(body, KEY).find_map(|at| {
        let rest = &body[at + KEY.len()..];
        let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
        let rest = rest[colon..].strip_prefix(b":")?;
        let object = object_at(rest)?;
        serde_json::from_slice(object).ok()
    })
}

/// The JSON object at the start of `text` (after blanks), through its closing brace.
fn object_at(text: &[u8]) -> Option<&[u8]> {
    let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
    if text[start] != b'{' {
        return None;
    }
    let (mut depth, mut in_string, mut escaped) = (0_usize, false, false);
    for (i, &b) in text.iter().enumerate().skip(start) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The usage a whole answer, or the end of a stream, reports.
pub fn reported(body: &[u8]) -> Vec<Cost> {
    last(body).map(|u| u.costs()).unwrap_or_default()
}

/// What one stretch of a stream (`?alt=sse`) produced: the output tokens of its parts' text
/// (thoughts included), at four bytes a token; and, in the first stretch, the input its
/// first usage reports, else `prompt` (the request's own estimate).
pub fn of_stretch(stretch: &[u8], at: u64, prompt: Option<u64>) -> Vec<Cost> {
    let mut output = 0_u64;
    let mut input = None;
    for e in sse::events(stretch) {
        output = output.saturating_add(sse::produced_tokens(&e.data, &["text"]));
        if at == 0 && input.is_none() {
            input = last(e.data.as_bytes()).and_then(|u| u.input());
        }
    }
    let mut costs = vec![amount(Dimension::OutputTokens, output)];
    if at == 0
        && let Some(i) = input.or(prompt)
    {
        costs.push(amount(Dimension::InputTokens, i));
    }
    costs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(c: &[Cost]) -> Vec<(Dimension, u64)> {
        c.iter().map(|c| (c.dimension.clone(), c.amount)).collect()
    }

    fn chunk(text: &str, candidates: Option<u64>) -> String {
        let usage = match candidates {
            Some(c) => format!(
                r#"{{"promptTokenCount":9,"candidatesTokenCount":{c},"totalTokenCount":{}}}"#,
                9 + c
            ),
            None => r#"{"promptTokenCount":9,"totalTokenCount":9}"#.to_owned(),
        };
        format!(
            "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"{text}\"}}],\"role\": \"model\"}},\"index\": 0}}],\"usageMetadata\": {usage},\"modelVersion\": \"gemini-2.0-flash\"}}\r\n\r\n"
        )
    }

    #[test]
    fn a_stream_s_last_running_total_counts_never_the_sum() {
        let body = [
            chunk("Hello", None),
            chunk(" world", Some(2)),
            chunk("!", Some(3)),
        ]
        .concat();
        assert_eq!(
            amounts(&reported(body.as_bytes())),
            vec![
                (Dimension::InputTokens, 9),
                (Dimension::OutputTokens, 3),
                (Dimension::Tokens, 12),
            ]
        );
    }

    #[test]
    fn an_answer_with_thoughts_tools_and_a_cache() {
        let body = br#"{"candidates":[{"content":{"parts":[{"text":"{not usage}"}]}}],
            "usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":60,
            "toolUsePromptTokenCount":5,"candidatesTokenCount":20,"thoughtsTokenCount":30,
            "totalTokenCount":155,"promptTokensDetails":[{"modality":"TEXT","tokenCount":100}]}}"#;
        assert_eq!(
            amounts(&reported(body)),
            vec![
                (Dimension::InputTokens, 105),
                (Dimension::OutputTokens, 50),
                (Dimension::Tokens, 155),
                (Dimension::Other(CACHED_INPUT_TOKENS.into()), 60),
            ]
        );
    }

    #[test]
    fn a_json_array_stream_and_a_cut_last_usage_read_the_last_whole_one() {
        let body =
            br#"[{"candidates":[],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":1}}
,
{"candidates":[],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":7}}
,
{"candidates":[],"usageMetadata":{"promptTokenCount":4,"candidatesTo"#;
        let u = last(body).unwrap();
        assert_eq!((u.input(), u.output()), (Some(4), Some(7)));
        assert_eq!(last(b"no usage here"), None);
        assert_eq!(last(br#"{"usageMetadata": "text"}"#), None);
    }

    #[test]
    fn a_stretch_counts_its_text_and_the_first_one_its_input() {
        let body = [chunk("tok tok ", None), chunk("tok ", Some(3))].concat();
        assert_eq!(
            amounts(&of_stretch(body.as_bytes(), 0, Some(50))),
            vec![(Dimension::OutputTokens, 3), (Dimension::InputTokens, 9)]
        );
        assert_eq!(
            amounts(&of_stretch(body.as_bytes(), 4_096, Some(50))),
            vec![(Dimension::OutputTokens, 3)]
        );
        assert_eq!(
            amounts(&of_stretch(
                b"data: {\"candidates\":[]}\r\n\r\n",
                0,
                Some(50)
            )),
            vec![(Dimension::OutputTokens, 0), (Dimension::InputTokens, 50)]
        );
    }
}
