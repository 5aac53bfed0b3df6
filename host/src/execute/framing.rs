//! Where a stream's events begin and end, in either form providers stream in.
//!
//! - **Server-sent events** (`text/event-stream`, and any stream not said to be binary): an
//!   event ends at a blank line, and a line ends with CRLF, LF or CR, in any mix. So a
//!   boundary is a line ending straight after another: `\n\n`, `\r\n\r\n` (Gemini's),
//!   `\r\r`, and the mixed forms. A CR that ends the bytes at hand may be the first half of a
//!   CRLF: it ends nothing until the next byte is known.
//! - **AWS event streams** (`application/vnd.amazon.eventstream`, Bedrock's streamed
//!   answers): binary messages, each a prelude (its total length and its headers' length,
//!   big-endian, and their CRC-32), headers, a payload and the message's CRC-32. Messages
//!   follow one another with nothing between them; one is found in bytes that begin anywhere
//!   by a prelude whose CRC-32 holds ([`sluice_plugin_sdk::eventstream::message_len`], the
//!   reader plugins decode the messages with).
//!
//! Each byte of a stream is counted once, in stretches cut at these boundaries
//! (`produced.rs`), and a long stream's first and last bytes are joined at one (`stream.rs`),
//! so no stream's usage is lost however its events are ended.

use sluice_plugin_sdk::eventstream::message_len;

/// How a stream's bytes divide into events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Framing {
    /// Server-sent events: text, events ended by a blank line.
    #[default]
    Sse,
    /// AWS event-stream messages: binary, each carrying its length.
    EventStream,
}

impl Framing {
    /// The framing of a stream whose response headers (a WIT `fields` block) are `headers`.
    pub(super) fn of(headers: &str) -> Self {
        let binary = headers.lines().any(|line| {
            line.split_once(':').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("content-type")
                    && value
                        .trim()
                        .to_ascii_lowercase()
                        .starts_with("application/vnd.amazon.eventstream")
            })
        });
        if binary { Self::EventStream } else { Self::Sse }
    }

    /// The end of the last whole event in `bytes`, which begin where an event begins.
    pub(super) fn last_end(self, bytes: &[u8]) -> Option<usize> {
        match self {
            Self::Sse => sse_boundaries(bytes).last(),
            Self::EventStream => {
                let mut at = 0;
                while let Some(len) = message_len(&bytes[at..]) {
                    if at + len > bytes.len() {
                        break;
                    }
                    at += len;
                }
                (at > 0).then_some(at)
            }
        }
    }

    /// The end of the first event in `bytes`, which begin where an event begins.
    pub(super) fn first_end(self, bytes: &[u8]) -> Option<usize> {
        match self {
            Self::Sse => sse_boundaries(bytes).next(),
            Self::EventStream => message_len(bytes).filter(|&len| len <= bytes.len()),
        }
    }

    /// Where the first whole event begins in `bytes`, which may begin inside one (the last
    /// bytes kept of a long stream).
    pub(super) fn first_start(self, bytes: &[u8]) -> Option<usize> {
        match self {
            Self::Sse => sse_boundaries(bytes).next(),
            Self::EventStream => (0..bytes.len()).find(|&i| message_len(&bytes[i..]).is_some()),
        }
    }

    /// What goes between a stream's first bytes and its last when the middle is dropped: a
    /// blank line, so a cut event in the first bytes ends before the last bytes' first;
    /// nothing between binary messages, which carry their own lengths.
    pub(super) fn separator(self) -> &'static [u8] {
        match self {
            Self::Sse => b"\n\n",
            Self::EventStream => b"",
        }
    }
}

/// The ends of the blank lines in `bytes`, in order: each a line ending straight after
/// another. The bytes are taken to begin inside a line, so a line ending at their very start
/// ends that line, not a blank one.
fn sse_boundaries(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut i = 0;
    // Whether the line being read is empty so far: it began right after a line ending.
    let mut line_empty = false;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let ending = match bytes[i] {
                b'\n' => 1,
                b'\r' => match bytes.get(i + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    // The first half of a CRLF, or a CR: not known yet.
                    None => return None,
                },
                _ => {
                    line_empty = false;
                    i += 1;
                    continue;
                }
            };
            i += ending;
            if line_empty {
                line_empty = false;
                return Some(i);
            }
            line_empty = true;
        }
        None
    })
}

/// Whether a stream whose response headers (a WIT `fields` block) are `headers` is an AWS
/// event stream: binary messages, where an error is told by a message, never by text.
pub fn is_event_stream(headers: &str) -> bool {
    Framing::of(headers) == Framing::EventStream
}

/// One AWS event-stream message with string `headers` (names of at most 255 bytes, values of
/// at most 65 535) and `payload`, framed as the SDK's reader and AWS's SDKs read it.
pub fn event_stream_message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    use sluice_plugin_sdk::eventstream::{HeaderValue, encode};
    let headers: Vec<(&str, HeaderValue<'_>)> = headers
        .iter()
        .map(|(name, value)| (*name, HeaderValue::String(value)))
        .collect();
    encode(&headers, payload)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An event-stream message carrying `payload` and one header.
    pub(in super::super) fn message(payload: &[u8]) -> Vec<u8> {
        use sluice_plugin_sdk::eventstream::{HeaderValue, encode};
        encode(&[(":event-type", HeaderValue::String("chunk"))], payload)
    }

    #[test]
    fn every_blank_line_sse_allows_is_a_boundary() {
        for (bytes, ends) in [
            (&b"data: a\n\ndata: b\n\n"[..], vec![9, 18]),
            (b"data: a\r\n\r\ndata: b\r\n\r\n", vec![11, 22]),
            // The last CR may yet be followed by an LF.
            (b"data: a\r\rdata: b\r\r", vec![9]),
            (b"data: a\n\r\ndata: b\r\n\n", vec![10, 20]),
            (b"data: a\r\ndata: b\r\n", vec![]),
            // A CR at the end may be half a CRLF: it ends nothing yet.
            (b"data: a\r\n\r", vec![]),
            (b"data: a\r\r", vec![]),
            // The bytes begin inside a line: their first line ending ends that line.
            (b"\ndata: a\n\n", vec![10]),
        ] {
            let found: Vec<usize> = sse_boundaries(bytes).collect();
            assert_eq!(found, ends, "{:?}", String::from_utf8_lossy(bytes));
        }
        assert_eq!(
            Framing::Sse.last_end(b"data: a\r\rdata: b\r\rdata: c"),
            Some(18)
        );
        assert_eq!(Framing::Sse.first_start(b"ta: a\r\rdata: b\r\r"), Some(7));
    }

    #[test]
    fn event_stream_messages_are_found_by_their_preludes() {
        let (a, b) = (message(b"{\"a\":1}"), message(b"{\"usage\":2}"));
        let stream = [a.clone(), b.clone()].concat();
        assert_eq!(Framing::EventStream.last_end(&stream), Some(stream.len()));
        assert_eq!(
            Framing::EventStream.last_end(&stream[..stream.len() - 1]),
            Some(a.len())
        );
        assert_eq!(Framing::EventStream.last_end(&stream[..5]), None);
        // Bytes that begin inside the first message: the second's prelude is the first.
        assert_eq!(
            Framing::EventStream.first_start(&stream[3..]),
            Some(a.len() - 3)
        );
        assert_eq!(
            Framing::EventStream.first_start(b"no prelude here at all"),
            None
        );
    }

    #[test]
    fn the_content_type_says_which() {
        assert_eq!(
            Framing::of("content-type: application/vnd.amazon.eventstream\nx-amzn-requestid: 1\n"),
            Framing::EventStream
        );
        assert_eq!(
            Framing::of("Content-Type: text/event-stream\n"),
            Framing::Sse
        );
        assert_eq!(Framing::of(""), Framing::Sse);
    }
}
