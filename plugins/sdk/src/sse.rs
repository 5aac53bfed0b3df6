//! Server-sent events (`text/event-stream`), read leniently out of a body the host cut.
//!
//! Providers stream answers as events: `event:` and `data:` lines, each event ended by a
//! blank line. At the end of a stream the host hands a plugin the stream's first and last
//! bytes (`response-part` `stream-end`), so the body can start in the middle of an event and
//! miss the events between its halves. The reader therefore skips what it cannot trust
//! rather than failing:
//!
//! - a first event that does not begin with a field line (a cut one) is skipped up to the
//!   next blank line;
//! - a last event with no blank line after it (a cut one) is not returned;
//! - lines that are not UTF-8, comments (`:`), and fields other than `event` and `data` are
//!   ignored, as are events without data;
//! - lines may end with CRLF, LF or CR.
//!
//! An event cut where the halves were joined can still come through whole-looking with a
//! truncated `data`: read each event's data as something that may not parse.
//!
//! ```
//! use sluice_plugin_sdk::sse;
//!
//! let body = b"ta\": 3}\n\nevent: message_delta\r\ndata: {\"usage\":{\"output_tokens\":15}}\r\n\r\ndata: [DO";
//! let events: Vec<_> = sse::events(body).collect();
//! assert_eq!(events.len(), 1);
//! assert_eq!(events[0].event, Some("message_delta"));
//! assert_eq!(events[0].data, "{\"usage\":{\"output_tokens\":15}}");
//! ```

use std::borrow::Cow;

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    /// The `event:` field (the event's type), when the event has one.
    pub event: Option<&'a str>,
    /// The event's `data:` lines, joined by line feeds.
    pub data: Cow<'a, str>,
}

impl Event<'_> {
    /// Whether the event's type is `name`.
    pub fn is(&self, name: &str) -> bool {
        self.event == Some(name)
    }
}

/// Tokens an event's `data` produced: the UTF-8 bytes of every JSON string in it under a key
/// named in `keys` (`text`, `content`, `arguments`...), at four bytes a token rounded up, and
/// at least one for an event that produced any. Erring high, as a count of what a provider
/// bills should: four bytes a token is English's rate, and a character of a script that takes
/// more bytes is counted as more. Data that is not JSON produced nothing.
///
/// ```
/// use sluice_plugin_sdk::sse;
///
/// let delta = r#"{"choices":[{"delta":{"role":"assistant","content":"Hello, world"}}]}"#;
/// assert_eq!(sse::produced_tokens(delta, &["content"]), 3);
/// assert_eq!(sse::produced_tokens(r#"{"delta":{"content":""}}"#, &["content"]), 0);
/// assert_eq!(sse::produced_tokens("[DONE]", &["content"]), 0);
/// ```
pub fn produced_tokens(data: &str, keys: &[&str]) -> u64 {
    fn bytes(v: &serde_json::Value, keys: &[&str]) -> u64 {
        match v {
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) if keys.contains(&k.as_str()) => s.len() as u64,
                    _ => bytes(v, keys),
                })
                .sum(),
            serde_json::Value::Array(items) => items.iter().map(|v| bytes(v, keys)).sum(),
            _ => 0,
        }
    }
    let Ok(value) = serde_json::from_str::<serde_json::Value>(data) else {
        return 0;
    };
    match bytes(&value, keys) {
        0 => 0,
        n => n.div_ceil(4),
    }
}

/// The whole events in `body`, in order (see the module docs for what is skipped).
pub fn events(body: &[u8]) -> Events<'_> {
    Events {
        lines: Lines { rest: body },
        started: false,
    }
}

/// The iterator of [`events`].
#[derive(Debug, Clone)]
pub struct Events<'a> {
    lines: Lines<'a>,
    started: bool,
}

impl<'a> Iterator for Events<'a> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        if !self.started {
            self.started = true;
            self.skip_cut_start();
        }
        loop {
            let mut event = None;
            let mut data: Option<Cow<'a, str>> = None;
            loop {
                // No blank line before the end: the last event was cut.
                let line = self.lines.next()?;
                if line.is_empty() {
                    break;
                }
                let Ok(line) = std::str::from_utf8(line) else {
                    continue;
                };
                let (field, value) = match line.split_once(':') {
                    Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                    None => (line, ""),
                };
                match field {
                    "event" => event = Some(value),
                    "data" => {
                        data = Some(match data {
                            None => Cow::Borrowed(value),
                            Some(d) => Cow::Owned(format!("{d}\n{value}")),
                        });
                    }
                    _ => {}
                }
            }
            if let Some(data) = data {
                return Some(Event { event, data });
            }
        }
    }
}

impl Events<'_> {
    /// When the body does not start at a field line, its first event was cut: skip it.
    fn skip_cut_start(&mut self) {
        let mut probe = self.lines.clone();
        let Some(first) = probe.next() else {
            return;
        };
        if first.is_empty() || is_field_line(first) {
            return;
        }
        for line in self.lines.by_ref() {
            if line.is_empty() {
                return;
            }
        }
    }
}

/// Whether `line` is a comment or one of the fields an event stream defines.
fn is_field_line(line: &[u8]) -> bool {
    let name = line.split(|&b| b == b':').next().unwrap_or_default();
    matches!(name, b"" | b"data" | b"event" | b"id" | b"retry")
}

/// Lines split at CRLF, LF or CR; a last line without an ending is not returned.
#[derive(Debug, Clone)]
struct Lines<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let end = memchr::memchr2(b'\n', b'\r', self.rest)?;
        let line = &self.rest[..end];
        let skip = match self.rest[end..] {
            [b'\r', b'\n', ..] => 2,
            _ => 1,
        };
        self.rest = &self.rest[end + skip..];
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(body: &str) -> Vec<(Option<&str>, String)> {
        events(body.as_bytes())
            .map(|e| (e.event, e.data.into_owned()))
            .collect()
    }

    #[test]
    fn events_are_split_by_blank_lines() {
        let body = "event: a\ndata: 1\n\nevent: b\ndata: 2\n\ndata: 3\n\n";
        assert_eq!(
            all(body),
            vec![
                (Some("a"), "1".into()),
                (Some("b"), "2".into()),
                (None, "3".into())
            ]
        );
    }

    #[test]
    fn crlf_and_cr_end_lines_too() {
        assert_eq!(
            all("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r"),
            vec![(Some("a"), "1".into()), (Some("b"), "2".into())]
        );
    }

    #[test]
    fn data_lines_are_joined_and_one_leading_space_is_dropped() {
        assert_eq!(all("data:a\ndata:  b\n\n"), vec![(None, "a\n b".into())]);
    }

    #[test]
    fn a_cut_last_event_is_not_returned() {
        assert_eq!(
            all("data: 1\n\ndata: {\"usage\":"),
            vec![(None, "1".into())]
        );
        assert_eq!(all("data: 1\n\ndata: 2\n"), vec![(None, "1".into())]);
    }

    #[test]
    fn a_cut_first_event_is_skipped() {
        assert_eq!(
            all("_tokens\":12}}\ndata: x\n\nevent: b\ndata: 2\n\n"),
            vec![(Some("b"), "2".into())]
        );
        // A body that starts at a field line keeps its first event.
        assert_eq!(all("data: 1\n\n"), vec![(None, "1".into())]);
        assert_eq!(all(": keep-alive\n\ndata: 1\n\n"), vec![(None, "1".into())]);
    }

    #[test]
    fn junk_comments_other_fields_and_empty_events_are_ignored() {
        let body =
            b"data: 1\n\n: ping\n\nid: 7\nretry: 10\n\nevent: x\nnonsense\n\xff\ndata: 2\n\n\n\n";
        assert_eq!(
            events(body)
                .map(|e| e.data.into_owned())
                .collect::<Vec<_>>(),
            vec!["1", "2"]
        );
        let bad = b"data: 1\n\ndata: \xff\xfe\n\ndata: 3\n\n";
        assert_eq!(events(bad).count(), 2);
    }

    #[test]
    fn an_empty_body_has_no_events() {
        assert_eq!(events(b"").count(), 0);
        assert_eq!(events(b"\n\n\n").count(), 0);
    }
}
