//! AWS event streams (`application/vnd.amazon.eventstream`): the binary messages Amazon
//! Bedrock streams its answers in (`ConverseStream`, `InvokeModelWithResponseStream`).
//!
//! A message is a prelude — its total length and its headers' length, each a 4-byte
//! big-endian number, and the CRC-32 of those 8 bytes — then its headers, its payload, and
//! the CRC-32 of everything before it. Messages follow one another with nothing between
//! them. A header is its name's length (one byte), its name, a type (one byte) and a value
//! whose form the type says: `true` and `false` carry none; a byte, a short, an int, a long
//! and a timestamp (milliseconds since the epoch) are 1, 2, 4, 8 and 8 big-endian bytes; a
//! byte array and a UTF-8 string a 2-byte length and as many bytes; a UUID 16 bytes.
//!
//! Bedrock names what a message is in three string headers: `:message-type` (`event`, or
//! `exception` for an error after the answer began), `:event-type` (`messageStart`,
//! `contentBlockDelta`, `metadata`, `chunk`...) or `:exception-type`
//! (`throttlingException`...), and `:content-type` (`application/json`); the payload is JSON.
//!
//! Every length is checked against the bytes at hand and both CRCs are checked, so a
//! reader never trusts a message it cannot prove whole. [`decode`] reads one message
//! strictly; [`messages`] reads a body leniently, as [`crate::sse`] does text: the end of a
//! long stream is its first and last bytes joined where a message begins, so a message cut
//! where the first bytes end is skipped up to the next whole one, and a cut last message is
//! not returned.
//!
//! ```
//! use sluice_plugin_sdk::eventstream::{self, HeaderValue};
//!
//! let bytes = eventstream::encode(
//!     &[(":message-type", HeaderValue::String("event")), (":event-type", HeaderValue::String("chunk"))],
//!     br#"{"bytes":"e30="}"#,
//! );
//! let (message, len) = eventstream::decode(&bytes).unwrap();
//! assert_eq!(len, bytes.len());
//! assert_eq!(message.event_type(), Some("chunk"));
//! assert_eq!(message.payload, br#"{"bytes":"e30="}"#);
//! assert!(eventstream::decode(&bytes[..len - 1]).is_err());
//! ```

use std::fmt;

/// A message's prelude: its total length, its headers' length, their CRC-32.
pub const PRELUDE_LEN: usize = 12;
/// The shortest message: a prelude and the message's CRC-32, with no headers or payload.
pub const MIN_MESSAGE_LEN: usize = 16;
/// The longest message AWS sends (16 MiB): a longer length is not a prelude.
pub const MAX_MESSAGE_LEN: usize = 16 * 1024 * 1024;

/// Why bytes are not a whole message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The bytes end before the message does: `needed` bytes would hold it (or its prelude).
    Truncated {
        /// The bytes the message (or, when its prelude is cut, the prelude) takes.
        needed: usize,
    },
    /// The prelude's lengths cannot be a message's: the total outside 16 bytes to 16 MiB, or
    /// headers that do not fit in it.
    Length,
    /// The prelude's CRC-32 does not hold: these bytes do not begin a message.
    PreludeCrc,
    /// The message's CRC-32 does not hold: it was cut or altered.
    MessageCrc,
    /// A header runs past the headers' length, names an unknown type, or is not UTF-8
    /// where it must be.
    Header,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { needed } => write!(f, "the message is cut: it takes {needed} bytes"),
            Self::Length => f.write_str("the prelude's lengths are not a message's"),
            Self::PreludeCrc => f.write_str("the prelude's CRC-32 does not hold"),
            Self::MessageCrc => f.write_str("the message's CRC-32 does not hold"),
            Self::Header => f.write_str("a header is malformed"),
        }
    }
}

impl std::error::Error for Error {}

/// A header's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderValue<'a> {
    /// Types 0 (`true`) and 1 (`false`).
    Bool(bool),
    /// Type 2: one byte.
    Byte(i8),
    /// Type 3: two bytes.
    Short(i16),
    /// Type 4: four bytes.
    Int(i32),
    /// Type 5: eight bytes.
    Long(i64),
    /// Type 6: a 2-byte length and as many bytes.
    Bytes(&'a [u8]),
    /// Type 7: a 2-byte length and as many bytes of UTF-8.
    String(&'a str),
    /// Type 8: milliseconds since the Unix epoch, eight bytes.
    Timestamp(i64),
    /// Type 9: sixteen bytes.
    Uuid([u8; 16]),
}

/// One message: its headers (still encoded, checked whole) and its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    headers: &'a [u8],
    /// The payload: for Bedrock, a JSON object.
    pub payload: &'a [u8],
}

impl<'a> Message<'a> {
    /// The headers, in order.
    pub fn headers(&self) -> Headers<'a> {
        Headers { rest: self.headers }
    }

    /// The value of the first header named `name`.
    pub fn header(&self, name: &str) -> Option<HeaderValue<'a>> {
        self.headers()
            .find_map(|h| h.ok().filter(|(n, _)| *n == name).map(|(_, v)| v))
    }

    /// The string value of the first header named `name`; `None` when absent or not a
    /// string.
    pub fn string(&self, name: &str) -> Option<&'a str> {
        match self.header(name)? {
            HeaderValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// `:message-type`: `event`, `exception` or `error`.
    pub fn message_type(&self) -> Option<&'a str> {
        self.string(":message-type")
    }

    /// `:event-type` (`contentBlockDelta`, `metadata`, `chunk`...).
    pub fn event_type(&self) -> Option<&'a str> {
        self.string(":event-type")
    }

    /// The type of an `exception` message (`:exception-type`, `throttlingException`), or the
    /// code of an `error` message (`:error-code`).
    pub fn exception_type(&self) -> Option<&'a str> {
        self.string(":exception-type")
            .or_else(|| self.string(":error-code"))
    }

    /// Whether the message reports a failure (`exception` or `error`), not an event.
    pub fn is_exception(&self) -> bool {
        matches!(self.message_type(), Some("exception" | "error"))
    }
}

/// The headers of a [`Message`]: each a name and a value, or [`Error::Header`] where one is
/// malformed (never, for a message [`decode`] returned).
#[derive(Debug, Clone)]
pub struct Headers<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Headers<'a> {
    type Item = Result<(&'a str, HeaderValue<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = header(self.rest);
        match item {
            Ok((name, value, len)) => {
                self.rest = &self.rest[len..];
                Some(Ok((name, value)))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// The header at the start of `bytes`: its name, its value and its encoded length.
fn header(bytes: &[u8]) -> Result<(&str, HeaderValue<'_>, usize), Error> {
    let take = |at: usize, n: usize| {
        at.checked_add(n)
            .and_then(|end| bytes.get(at..end))
            .ok_or(Error::Header)
    };
    let name_len = usize::from(*bytes.first().ok_or(Error::Header)?);
    let name = std::str::from_utf8(take(1, name_len)?).map_err(|_| Error::Header)?;
    let at = 1 + name_len;
    let kind = *bytes.get(at).ok_or(Error::Header)?;
    let at = at + 1;
    let eight = || -> Result<[u8; 8], Error> {
        let mut out = [0; 8];
        out.copy_from_slice(take(at, 8)?);
        Ok(out)
    };
    let (value, len) = match kind {
        0 => (HeaderValue::Bool(true), 0),
        1 => (HeaderValue::Bool(false), 0),
        2 => (HeaderValue::Byte(i8::from_be_bytes([take(at, 1)?[0]])), 1),
        3 => {
            let b = take(at, 2)?;
            (HeaderValue::Short(i16::from_be_bytes([b[0], b[1]])), 2)
        }
        4 => {
            let b = take(at, 4)?;
            (
                HeaderValue::Int(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                4,
            )
        }
        5 => (HeaderValue::Long(i64::from_be_bytes(eight()?)), 8),
        8 => (HeaderValue::Timestamp(i64::from_be_bytes(eight()?)), 8),
        6 | 7 => {
            let b = take(at, 2)?;
            let n = usize::from(u16::from_be_bytes([b[0], b[1]]));
            let data = take(at + 2, n)?;
            let value = if kind == 6 {
                HeaderValue::Bytes(data)
            } else {
                HeaderValue::String(std::str::from_utf8(data).map_err(|_| Error::Header)?)
            };
            (value, 2 + n)
        }
        9 => {
            let mut uuid = [0; 16];
            uuid.copy_from_slice(take(at, 16)?);
            (HeaderValue::Uuid(uuid), 16)
        }
        _ => return Err(Error::Header),
    };
    Ok((name, value, at + len))
}

/// The length of the message whose prelude begins `bytes`, when its prelude is one: a total
/// from 16 bytes to 16 MiB that holds its headers, and a CRC-32 that holds. The message
/// itself may run past the bytes at hand: this is where a reader looks for one.
pub fn message_len(bytes: &[u8]) -> Option<usize> {
    prelude(bytes).ok()
}

/// The message length the prelude at the start of `bytes` states, checked.
fn prelude(bytes: &[u8]) -> Result<usize, Error> {
    let p = bytes.get(..PRELUDE_LEN).ok_or(Error::Truncated {
        needed: PRELUDE_LEN,
    })?;
    let word = |i: usize| u32::from_be_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
    let (total, headers, crc) = (word(0) as usize, word(4) as usize, word(8));
    let fits =
        (MIN_MESSAGE_LEN..=MAX_MESSAGE_LEN).contains(&total) && headers <= total - MIN_MESSAGE_LEN;
    if !fits {
        return Err(Error::Length);
    }
    if crc32fast::hash(&p[..8]) != crc {
        return Err(Error::PreludeCrc);
    }
    Ok(total)
}

/// The message at the start of `bytes`, and its length: checked whole (both CRC-32s, every
/// length, every header).
///
/// # Errors
/// Why the bytes do not begin with a whole message ([`Error`]).
pub fn decode(bytes: &[u8]) -> Result<(Message<'_>, usize), Error> {
    let total = prelude(bytes)?;
    let message = bytes
        .get(..total)
        .ok_or(Error::Truncated { needed: total })?;
    let (body, crc) = message.split_at(total - 4);
    if crc32fast::hash(body) != u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err(Error::MessageCrc);
    }
    let headers_len = u32::from_be_bytes([body[4], body[5], body[6], body[7]]) as usize;
    let (headers, payload) = body[PRELUDE_LEN..].split_at(headers_len);
    let m = Message { headers, payload };
    if let Some(Err(e)) = m.headers().find(Result::is_err) {
        return Err(e);
    }
    Ok((m, total))
}

/// The whole messages in `body`, in order, read leniently (see the module docs): where the
/// bytes do not begin a whole message, the reader moves on to the next offset that does.
pub fn messages(body: &[u8]) -> Messages<'_> {
    Messages {
        rest: body,
        // Each message checksummed once in order, one cut where a long stream's halves were
        // joined checksummed and searched past: a body that asks for much more was built to
        // make the search slow, and the reader stops.
        budget: body.len().saturating_mul(16).saturating_add(4096),
    }
}

/// The iterator of [`messages`].
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    rest: &'a [u8],
    /// Bytes the reader may still checksum: a bound on the work a hostile body can ask.
    budget: usize,
}

impl<'a> Iterator for Messages<'a> {
    type Item = Message<'a>;

    fn next(&mut self) -> Option<Message<'a>> {
        while self.rest.len() >= MIN_MESSAGE_LEN {
            // A prelude's checksum at each offset tried, a message's over its length.
            self.budget = self.budget.checked_sub(8)?;
            if let Some(total) = message_len(self.rest).filter(|&t| t <= self.rest.len()) {
                self.budget = self.budget.checked_sub(total)?;
                if let Ok((m, len)) = decode(self.rest) {
                    self.rest = &self.rest[len..];
                    return Some(m);
                }
            }
            // Not a whole message here: look for the next prelude.
            self.rest = &self.rest[1..];
        }
        None
    }
}

/// A message of `headers` and `payload`, encoded with both CRC-32s: for tests, and for a
/// plugin's own test vectors.
///
/// # Panics
/// When a header's name is longer than 255 bytes, a string or byte value longer than 65 535
/// bytes, or the message longer than [`MAX_MESSAGE_LEN`]: no message can carry them.
pub fn encode(headers: &[(&str, HeaderValue<'_>)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(u8::try_from(name.len()).expect("a header name of at most 255 bytes"));
        h.extend_from_slice(name.as_bytes());
        let prefixed = |b: &[u8]| {
            let len = u16::try_from(b.len()).expect("a value of at most 65 535 bytes");
            [&len.to_be_bytes()[..], b].concat()
        };
        let (kind, bytes): (u8, Vec<u8>) = match *value {
            HeaderValue::Bool(true) => (0, Vec::new()),
            HeaderValue::Bool(false) => (1, Vec::new()),
            HeaderValue::Byte(b) => (2, b.to_be_bytes().to_vec()),
            HeaderValue::Short(s) => (3, s.to_be_bytes().to_vec()),
            HeaderValue::Int(i) => (4, i.to_be_bytes().to_vec()),
            HeaderValue::Long(l) => (5, l.to_be_bytes().to_vec()),
            HeaderValue::Bytes(b) => (6, prefixed(b)),
            HeaderValue::String(s) => (7, prefixed(s.as_bytes())),
            HeaderValue::Timestamp(t) => (8, t.to_be_bytes().to_vec()),
            HeaderValue::Uuid(u) => (9, u.to_vec()),
        };
        h.push(kind);
        h.extend(bytes);
    }
    let total = PRELUDE_LEN + h.len() + payload.len() + 4;
    assert!(total <= MAX_MESSAGE_LEN, "a message of at most 16 MiB");
    let word = |n: usize| u32::try_from(n).expect("at most 16 MiB").to_be_bytes();
    let mut m = Vec::with_capacity(total);
    m.extend(word(total));
    m.extend(word(h.len()));
    m.extend(crc32fast::hash(&m).to_be_bytes());
    m.extend(h);
    m.extend_from_slice(payload);
    m.extend(crc32fast::hash(&m).to_be_bytes());
    m
}

/// An `event` message of Bedrock's form: `:event-type` `event_type`, a JSON `payload`.
pub fn event(event_type: &str, payload: &str) -> Vec<u8> {
    bedrock_message(":event-type", event_type, "event", payload)
}

/// An `exception` message of Bedrock's form: `:exception-type` `exception_type`, a JSON
/// `payload` (`{"message": ...}`).
pub fn exception(exception_type: &str, payload: &str) -> Vec<u8> {
    bedrock_message(":exception-type", exception_type, "exception", payload)
}

/// A message with the three headers Bedrock sends: its type under `type_header`, the
/// content type, and `:message-type`.
fn bedrock_message(type_header: &str, kind: &str, message_type: &str, payload: &str) -> Vec<u8> {
    encode(
        &[
            (type_header, HeaderValue::String(kind)),
            (":content-type", HeaderValue::String("application/json")),
            (":message-type", HeaderValue::String(message_type)),
        ],
        payload.as_bytes(),
    )
}

#[cfg(test)]
mod tests;
