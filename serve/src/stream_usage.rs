//! Every OpenAI stream reports its usage. OpenAI writes a stream's usage only when the request
//! asks for it (`"stream_options": {"include_usage": true}`), and the official SDKs do not ask,
//! so a streamed call's charge (and its spend) would keep its estimate. The sidecar asks on
//! the agent's behalf ([`ask_for_usage`]) and takes the extra usage event out of what the agent
//! receives ([`UsageFilter`]), so the agent's stream is byte for byte what it asked for, while
//! the host reads the usage at the stream's end and corrects the charge.

use bytes::{Bytes, BytesMut};
use serde::Deserialize;

/// What a JSON request body says about streaming, read once per request: its top-level
/// `stream` and `stream_options`, every other field skipped unread.
#[derive(Debug, Deserialize)]
pub struct Streamed {
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<serde_json::Value>,
}

impl Streamed {
    /// Reads `body`; `None` when it names no `stream` or is not a JSON object.
    pub fn of(body: &[u8]) -> Option<Self> {
        memchr::memmem::find(body, b"\"stream\"")?;
        // An array would be read as the struct by position.
        let first = body.iter().find(|b| !b.is_ascii_whitespace())?;
        if *first != b'{' {
            return None;
        }
        serde_json::from_slice(body).ok()
    }

    /// Whether the body asks for a streamed answer (`"stream": true`).
    pub fn wants_stream(&self) -> bool {
        self.stream == Some(true)
    }
}

/// What a request body asks of its answer, read once before it is sent.
#[derive(Debug, Default)]
pub struct Asked {
    /// Whether it asks for a streamed answer (a top-level `"stream": true`).
    pub streamed: bool,
    /// The body rewritten to ask for the stream's usage ([`ask_for_usage`]), when it had
    /// to be.
    pub rewritten: Option<Vec<u8>>,
}

impl Asked {
    /// Reads `body`; `completion`: it goes to an OpenAI-style chat or text completion route
    /// ([`is_completion`]), by POST, where a stream must be asked for its usage.
    pub fn of(body: &[u8], completion: bool) -> Self {
        let Some(requested) = Streamed::of(body) else {
            return Self::default();
        };
        let streamed = requested.wants_stream();
        Self {
            streamed,
            rewritten: (streamed && completion)
                .then(|| ask_for_usage(body, &requested))
                .flatten(),
        }
    }
}

/// Whether `path` asks for a streamed answer whatever its body says: Gemini's
/// `:streamGenerateContent`, and Bedrock's `converse-stream` and
/// `invoke-with-response-stream`, whose bodies say nothing of streaming.
pub fn streams_by_path(path: &str) -> bool {
    path.ends_with(":streamGenerateContent")
        || path.ends_with("/converse-stream")
        || path.ends_with("/invoke-with-response-stream")
}

/// Whether `path` is a chat or text completion, whose stream reports its usage only when
/// the request asks.
pub fn is_completion(path: &str) -> bool {
    path.ends_with("/chat/completions") || path.ends_with("/completions")
}

/// The body of a streaming request to an OpenAI-style completion route ([`is_completion`])
/// that does not ask for its usage, rewritten to ask; `None` when there is nothing to
/// change (not streamed, already asking, or not a JSON object). `asked` is what
/// [`Streamed::of`] read of `body`.
pub fn ask_for_usage(body: &[u8], asked: &Streamed) -> Option<Vec<u8>> {
    if !asked.wants_stream() {
        return None;
    }
    match &asked.stream_options {
        // The common case, the SDKs' own: no options at all. The new field goes first; the
        // rest of the body is left as the agent wrote it.
        None => {
            let open = body.iter().position(|b| *b == b'{')?;
            let mut out = Vec::with_capacity(body.len() + 40);
            out.extend_from_slice(&body[..=open]);
            out.extend_from_slice(br#""stream_options":{"include_usage":true}"#);
            let rest = &body[open + 1..];
            let empty = rest.iter().all(|b| b.is_ascii_whitespace() || *b == b'}');
            if !empty {
                out.push(b',');
            }
            out.extend_from_slice(rest);
            Some(out)
        }
        Some(options) if options.get("include_usage") == Some(&serde_json::Value::Bool(true)) => {
            None
        }
        Some(_) => {
            let mut v: serde_json::Value = serde_json::from_slice(body).ok()?;
            let options = v.get_mut("stream_options")?;
            if !options.is_object() {
                *options = serde_json::json!({});
            }
            options["include_usage"] = serde_json::Value::Bool(true);
            serde_json::to_vec(&v).ok()
        }
    }
}

/// Takes out of a stream whose request did not ask for its usage what asking added: the
/// event whose data is a chunk with no choices and a `usage` (OpenAI sends it last), and the
/// `"usage":null` OpenAI writes into every other chunk. Every other byte passes unchanged,
/// an event at a time (a partial event waits for its end).
#[derive(Debug, Default)]
pub struct UsageFilter {
    pending: BytesMut,
}

impl UsageFilter {
    /// What of `chunk` (with what came before it) can go to the agent now.
    pub fn pass(&mut self, chunk: &[u8]) -> Bytes {
        self.pending.extend_from_slice(chunk);
        let mut out = BytesMut::new();
        while let Some(end) = event_end(&self.pending) {
            let event = self.pending.split_to(end);
            if !is_usage_event(&event) {
                out.extend_from_slice(&without_null_usage(&event));
            }
        }
        out.freeze()
    }

    /// What is left at the stream's end: an unfinished event, passed as it is.
    pub fn finish(&mut self) -> Bytes {
        std::mem::take(&mut self.pending).freeze()
    }
}

/// `event` without the `"usage":null` member asking for usage adds to each chunk: the key
/// can only stand unescaped at an object's level, so the text is cut, not re-encoded.
fn without_null_usage(event: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    for member in [&b",\"usage\":null"[..], b"\"usage\":null,"] {
        if let Some(at) = memchr::memmem::find(event, member) {
            let mut out = event[..at].to_vec();
            out.extend_from_slice(&event[at + member.len()..]);
            return std::borrow::Cow::Owned(out);
        }
    }
    std::borrow::Cow::Borrowed(event)
}

/// Where the first whole event of `buf` ends (after its blank line).
fn event_end(buf: &[u8]) -> Option<usize> {
    let lf = memchr::memmem::find(buf, b"\n\n").map(|i| i + 2);
    let crlf = memchr::memmem::find(buf, b"\r\n\r\n").map(|i| i + 4);
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether `event` is OpenAI's usage event: `data: {..., "choices": [], "usage": {...}}`.
fn is_usage_event(event: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Chunk {
        choices: Option<Vec<serde::de::IgnoredAny>>,
        usage: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let Ok(text) = std::str::from_utf8(event) else {
        return false;
    };
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str::<Chunk>(&data)
        .is_ok_and(|c| c.choices.is_some_and(|c| c.is_empty()) && c.usage.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(path: &str, body: &[u8]) -> Option<Vec<u8>> {
        Asked::of(body, is_completion(path)).rewritten
    }

    #[test]
    fn a_stream_without_options_is_asked_for_its_usage_and_nothing_else_changes() {
        let body = br#"{"model":"gpt-4o","stream":true,"messages":[]}"#;
        let out = ask("/v1/chat/completions", body).unwrap();
        assert_eq!(
            out,
            br#"{"stream_options":{"include_usage":true},"model":"gpt-4o","stream":true,"messages":[]}"#
        );
        let other = br#"{"stream":true,"stream_options":{"include_obfuscation":false}}"#;
        let v: serde_json::Value =
            serde_json::from_slice(&ask("/v1/completions", other).unwrap()).unwrap();
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["stream_options"]["include_obfuscation"], false);
    }

    #[test]
    fn what_needs_no_change_is_left_alone() {
        let asked = br#"{"stream":true,"stream_options":{"include_usage":true}}"#;
        assert_eq!(ask("/v1/chat/completions", asked), None);
        assert_eq!(ask("/v1/chat/completions", br#"{"stream":false}"#), None);
        assert_eq!(ask("/v1/embeddings", br#"{"stream":true}"#), None);
        assert_eq!(ask("/v1/chat/completions", b"not json"), None);
    }

    #[test]
    fn the_usage_event_is_taken_out_whatever_the_chunks_and_the_rest_passes_as_it_came() {
        let stream: &[u8] =
            b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}],\"usage\":null}\n\n\
            data: {\"usage\":null,\"choices\":[{\"delta\":{\"content\":\"!\"}}]}\n\n\
            data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n\
            data: [DONE]\n\n";
        let want: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"!\"}}]}\n\n\
            data: [DONE]\n\n";
        for size in [1, 7, 64, stream.len()] {
            let mut f = UsageFilter::default();
            let mut got = Vec::new();
            for chunk in stream.chunks(size) {
                got.extend_from_slice(&f.pass(chunk));
            }
            got.extend_from_slice(&f.finish());
            assert_eq!(got, want, "chunks of {size}");
        }
    }
}
