//! Streamed answers (`"stream": true`): server-sent events in the provider's own shape,
//! one event at a time with a pause between them, so a client can be seen passing a
//! stream through chunk by chunk. A stream can be cut midway (a scripted fault): the
//! connection breaks after some events, as a provider's does when it fails mid-generation.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame};
use serde_json::json;
use tokio::time::Sleep;

use crate::style::{Style, thoughts};

/// A stream the provider broke off on purpose.
#[derive(Debug, thiserror::Error)]
#[error("the fake provider cut the stream on purpose")]
pub struct Cut;

/// Called once when a stream ends: with the number of content events delivered, and whether
/// the stream was delivered whole.
pub(crate) type OnEnd = Box<dyn FnOnce(usize, bool) + Send + Sync>;

/// What a streamed answer carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub style: Style,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Whether the final usage event is sent (OpenAI: only with `include_usage`).
    pub include_usage: bool,
    /// Break the connection after this many events.
    pub cut_after: Option<usize>,
    pub gap: Duration,
}

/// Content events in a stream: one per token up to 16.
pub(crate) fn content_events(output_tokens: u64) -> usize {
    usize::try_from(output_tokens.clamp(1, 16)).unwrap_or(16)
}

/// The output tokens content event `k` of a stream carries: as even a share of `output` as
/// whole tokens allow. Its text is `"tok "` once a token, four bytes: as much text as a token
/// of English is, so a client that counts a stream's text counts what the provider bills.
fn event_tokens(output: u64, k: usize) -> u64 {
    let (n, k) = (content_events(output) as u64, k as u64);
    output / n + u64::from(k < output % n)
}

/// The output tokens of a stream cut after `delivered` of its events: its content events
/// among them, as [`event_tokens`] shares them out.
pub(crate) fn produced(style: Style, output: u64, delivered: usize) -> u64 {
    let lead = match style {
        // `message_start` and `content_block_start` come first.
        Style::Anthropic => 2,
        // `messageStart`.
        Style::Bedrock => 1,
        _ => 0,
    };
    // Gemini thinks first: its thoughts are billed, never streamed.
    let (thought, text) = match style {
        Style::Gemini if delivered > 0 => (thoughts(output), output - thoughts(output)),
        _ => (0, output),
    };
    let written: u64 = (0..delivered.saturating_sub(lead).min(content_events(text)))
        .map(|k| event_tokens(text, k))
        .sum();
    thought + written
}

/// An event ended as Gemini ends its events: `\r\n\r\n`.
fn crlf_event(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\r\n\r\n"))
}

/// One AWS event-stream message of an `event` of `event_type` carrying the JSON `payload`:
/// its prelude (total length, headers' length, their CRC-32), its headers (`:event-type`,
/// `:content-type`, `:message-type`, each a string), the payload, and the CRC-32 of all
/// before it.
fn aws_event(event_type: &str, payload: &str) -> Bytes {
    let mut headers = Vec::new();
    for (name, value) in [
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ] {
        headers.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        headers.extend_from_slice(name.as_bytes());
        // 7: a string, its length in two bytes.
        headers.push(7);
        headers.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        headers.extend_from_slice(value.as_bytes());
    }
    let total = 12 + headers.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(
        &u32::try_from(headers.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&headers);
    out.extend_from_slice(payload.as_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    Bytes::from(out)
}

fn sse(event: Option<&str>, data: &str) -> Bytes {
    match event {
        Some(e) => Bytes::from(format!("event: {e}\ndata: {data}\n\n")),
        None => Bytes::from(format!("data: {data}\n\n")),
    }
}

/// The events of a streamed answer, in order.
pub(crate) fn events(plan: &Plan, id: &str) -> Vec<Bytes> {
    let n = content_events(plan.output_tokens);
    let (i, o) = (plan.input_tokens, plan.output_tokens);
    let mut out = Vec::with_capacity(n + 6);
    match plan.style {
        Style::Anthropic => {
            let start = json!({"type": "message_start", "message": {"id": id, "type": "message",
                "role": "assistant", "model": "fake", "content": [],
                "usage": {"input_tokens": i, "output_tokens": 1}}});
            out.push(sse(Some("message_start"), &start.to_string()));
            let block = json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}});
            out.push(sse(Some("content_block_start"), &block.to_string()));
            for k in 0..n {
                let delta = json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": "tok ".repeat(event_tokens(o, k) as usize)}});
                out.push(sse(Some("content_block_delta"), &delta.to_string()));
            }
            let stop = json!({"type": "content_block_stop", "index": 0});
            out.push(sse(Some("content_block_stop"), &stop.to_string()));
            let delta = json!({"type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                "usage": {"output_tokens": o}});
            out.push(sse(Some("message_delta"), &delta.to_string()));
            out.push(sse(Some("message_stop"), r#"{"type":"message_stop"}"#));
        }
        Style::Gemini => {
            // Each chunk carries the usage so far: a running total, never a share. The
            // thoughts came first and are reported whole from the first chunk on.
            let thought = thoughts(o);
            let text = o - thought;
            let n = content_events(text);
            let mut so_far = 0;
            for k in 0..n {
                let tokens = event_tokens(text, k);
                so_far += tokens;
                let mut candidate = json!({"content": {"parts": [{"text": "tok ".repeat(tokens as usize)}],
                    "role": "model"}, "index": 0});
                if k + 1 == n {
                    candidate["finishReason"] = json!("STOP");
                }
                let chunk = json!({"candidates": [candidate],
                    "usageMetadata": {"promptTokenCount": i, "candidatesTokenCount": so_far,
                        "thoughtsTokenCount": thought, "totalTokenCount": i + thought + so_far},
                    "modelVersion": "fake", "responseId": id});
                out.push(crlf_event(&chunk.to_string()));
            }
        }
        Style::Bedrock => {
            out.push(aws_event("messageStart", r#"{"role":"assistant"}"#));
            for k in 0..n {
                let delta = json!({"contentBlockIndex": 0,
                    "delta": {"text": "tok ".repeat(event_tokens(o, k) as usize)}});
                out.push(aws_event("contentBlockDelta", &delta.to_string()));
            }
            out.push(aws_event("contentBlockStop", r#"{"contentBlockIndex":0}"#));
            out.push(aws_event("messageStop", r#"{"stopReason":"end_turn"}"#));
            let metadata = json!({"usage": {"inputTokens": i, "outputTokens": o,
                "totalTokens": i + o}, "metrics": {"latencyMs": 1}});
            out.push(aws_event("metadata", &metadata.to_string()));
        }
        _ => {
            for k in 0..n {
                let mut chunk = json!({"id": id, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"content": "tok ".repeat(event_tokens(o, k) as usize)},
                                 "finish_reason": null}]});
                // Asked for its usage, OpenAI writes `"usage": null` into every chunk
                // before the last.
                if plan.include_usage {
                    chunk["usage"] = serde_json::Value::Null;
                }
                out.push(sse(None, &chunk.to_string()));
            }
            if plan.include_usage {
                let usage = json!({"id": id, "object": "chat.completion.chunk", "choices": [],
                    "usage": {"prompt_tokens": i, "completion_tokens": o,
                              "total_tokens": i + o}});
                out.push(sse(None, &usage.to_string()));
            }
            out.push(sse(None, "[DONE]"));
        }
    }
    out
}

/// A streamed body: the events, a pause before each after the first, an optional cut.
pub(crate) struct SseBody {
    events: VecDeque<Bytes>,
    gap: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    cut_after: Option<usize>,
    sent: usize,
    on_end: Option<OnEnd>,
}

impl SseBody {
    /// A body sending `events` (see [`events`]) as `plan` paces and cuts them.
    pub(crate) fn new(plan: &Plan, events: Vec<Bytes>, on_end: OnEnd) -> Self {
        Self {
            events: events.into(),
            gap: plan.gap,
            sleep: None,
            cut_after: plan.cut_after,
            sent: 0,
            on_end: Some(on_end),
        }
    }

    fn end(&mut self, whole: bool) {
        if let Some(f) = self.on_end.take() {
            f(self.sent, whole);
        }
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Cut;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        if self.cut_after == Some(self.sent) {
            self.end(false);
            return Poll::Ready(Some(Err(Cut)));
        }
        if self.events.is_empty() {
            self.end(true);
            return Poll::Ready(None);
        }
        if let Some(sleep) = self.sleep.as_mut() {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
        }
        let Some(event) = self.events.pop_front() else {
            return Poll::Ready(None);
        };
        self.sent += 1;
        if !self.gap.is_zero() {
            self.sleep = Some(Box::pin(tokio::time::sleep(self.gap)));
        }
        Poll::Ready(Some(Ok(Frame::data(event))))
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        // The client went away before the end: what was produced so far is what counts.
        self.end(false);
    }
}
