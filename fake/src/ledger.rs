//! What the provider saw and stored: every attempt, every write, and the scripts still to
//! play. Tests assert on this, never on the client's own counters.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;

use crate::bucket::Buckets;
use crate::record::Record;
use crate::script::Fault;
use crate::window::Window;

/// One attempt as the provider received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// When it arrived, since the provider started (on tokio's clock).
    pub at: Duration,
    /// Its method.
    pub method: String,
    /// Its path, without the query.
    pub path: String,
    /// The HTTP version it came in.
    pub version: HttpVersion,
    /// The connection it came on: connections are numbered from 1 in the order the provider
    /// accepted them, so two attempts with one number shared a connection.
    pub connection: u64,
    /// Its `Idempotency-Key`, if it had one.
    pub idempotency_key: Option<String>,
    /// The names of its headers, lower case, in the order they came (values are not kept,
    /// but for the trace context's below).
    pub headers: Vec<String>,
    /// Its `traceparent` (W3C Trace Context), if it had one: whose trace it is part of.
    pub traceparent: Option<String>,
    /// The status answered; `None` if the connection was dropped or the attempt hangs.
    pub status: Option<u16>,
    /// Tokens the attempt was charged against the provider's tokens per minute (0 when it
    /// was refused or never reached the limiter): at admission, and for a generation that
    /// named no maximum, what it wrote too.
    pub tokens: u64,
    /// The prompt's tokens, as the provider counts them and its usage reports (0 when the
    /// attempt was refused or never reached the limiter): what it bills as input.
    pub input_tokens: u64,
    /// Output tokens the answer actually produced (and its usage reports); for a stream, set
    /// when it ends: if it was cut or abandoned, those of the content events it sent.
    pub output_tokens: u64,
    /// For a streamed answer: `Some(true)` once delivered whole, `Some(false)` if it was cut
    /// or abandoned, `None` while it runs (or for an answer that is not a stream).
    pub stream: Option<bool>,
}

/// The HTTP version of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpVersion {
    /// HTTP/1.0.
    Http1_0,
    /// HTTP/1.1.
    Http1_1,
    /// HTTP/2.
    Http2,
    /// Any other version hyper reports.
    Other,
}

impl HttpVersion {
    pub(crate) fn of(version: hyper::Version) -> Self {
        match version {
            hyper::Version::HTTP_10 => Self::Http1_0,
            hyper::Version::HTTP_11 => Self::Http1_1,
            hyper::Version::HTTP_2 => Self::Http2,
            _ => Self::Other,
        }
    }
}

/// A write the provider stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The id the provider gave it: `obj_000001` where writes are keyed, a number (as
    /// GitHub's ids are) where the provider ignores keys.
    pub id: String,
    /// The idempotency key it was stored under, if any (never, where the provider ignores
    /// keys).
    pub idempotency_key: Option<String>,
    /// The path it was written to: its collection.
    pub path: String,
    /// Its number within its collection, from 1 (an issue's `number`).
    pub number: u64,
    /// The client reference its body carries ([`client_reference`]), if any.
    pub reference: Option<String>,
    /// Its body.
    pub body: Bytes,
}

/// The client reference a write's body carries, as sluice makes one: `sluice-` and hex
/// digits, standing alone anywhere in the body (a form field, a JSON string, an HTML
/// comment in an issue's text). Two stored writes with one reference are one logical
/// action done twice: a duplicate, whatever keys they came with.
pub fn client_reference(body: &[u8]) -> Option<String> {
    const PREFIX: &[u8] = b"sluice-";
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let mut from = 0;
    while let Some(at) = body[from..]
        .windows(PREFIX.len())
        .position(|w| w == PREFIX)
        .map(|i| from + i)
    {
        let hex = at + PREFIX.len();
        let end = body[hex..]
            .iter()
            .position(|b| !b.is_ascii_hexdigit())
            .map_or(body.len(), |n| hex + n);
        let alone = (at == 0 || !word(body[at - 1])) && body.get(end).is_none_or(|&b| !word(b));
        if end > hex && alone {
            return Some(String::from_utf8_lossy(&body[at..end]).into_owned());
        }
        from = at + 1;
    }
    None
}

#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// The attempts received: every one, or the last ones only
    /// ([`crate::FakeConfig::keep_attempts`]).
    pub attempts: Record<Attempt>,
    /// The writes stored: every one, or the last ones only
    /// ([`crate::FakeConfig::keep_writes`]); a key of a write let go is forgotten with it.
    pub stored: Record<Stored>,
    pub by_key: HashMap<String, usize>,
    /// How many objects are stored under each path: the next one's number. Kept apart so
    /// that storing stays constant-time however many writes the ledger holds.
    stored_on: HashMap<String, u64>,
    pub scripts: HashMap<String, VecDeque<Fault>>,
    /// Faults for the next writes only (not reads) on a path, played before `scripts`.
    pub write_scripts: HashMap<String, VecDeque<Fault>>,
    pub window: Window,
    pub buckets: Buckets,
    /// Daily request quotas of single models.
    pub model_days: crate::models::ModelDays,
    /// What the provider refuses as the caller's mistake.
    pub validation: crate::validate::Validation,
    /// The credential every request must carry, as (header, value); `None`: any request.
    pub credential: Option<(String, String)>,
    /// The AWS account whose SigV4 signature every request must carry; `None`: unsigned
    /// requests are served.
    pub aws: Option<crate::sigv4::AwsAccount>,
    /// Faults played at steady rates after the scripts, and the attempts they have seen.
    pub steady: Option<(crate::steady::SteadyFaults, u64)>,
}

impl Ledger {
    /// An empty ledger that keeps at most `attempts` attempts and `writes` stored writes
    /// (`None`: every one).
    pub fn keeping(attempts: Option<usize>, writes: Option<usize>) -> Self {
        Self {
            attempts: Record::bounded(attempts),
            stored: Record::bounded(writes),
            ..Self::default()
        }
    }

    /// The fault the next attempt takes: a write's script, the path's script, then the
    /// steady faults.
    pub fn next_fault(&mut self, path: &str, write: bool) -> Option<Fault> {
        let written = write
            .then(|| self.write_scripts.get_mut(path)?.pop_front())
            .flatten();
        written
            .or_else(|| self.scripts.get_mut(path)?.pop_front())
            .or_else(|| {
                let (faults, seen) = self.steady.as_mut()?;
                *seen += 1;
                faults.fault(*seen)
            })
    }

    /// Stores a write, or finds the one stored under the same key: `(index, replayed)`.
    pub fn store(&mut self, key: Option<&str>, path: &str, body: Bytes) -> (usize, bool) {
        if let Some(&i) = key.and_then(|k| self.by_key.get(k)) {
            return (i, true);
        }
        let id = format!("obj_{:06}", self.stored.len() + 1);
        let i = self.push(id, key, path, body);
        if let Some(k) = key {
            self.by_key.insert(k.to_owned(), i);
        }
        (i, false)
    }

    /// Creates a new object at `path`, as a provider that takes no idempotency key does
    /// with every write it accepts: its index.
    pub fn create(&mut self, path: &str, body: Bytes) -> usize {
        let id = (FIRST_ID + self.stored.len() as u64).to_string();
        self.push(id, None, path, body)
    }

    fn push(&mut self, id: String, key: Option<&str>, path: &str, body: Bytes) -> usize {
        let number = match self.stored_on.get_mut(path) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.stored_on.insert(path.to_owned(), 1);
                1
            }
        };
        let (i, let_go) = self.stored.push(Stored {
            id,
            idempotency_key: key.map(str::to_owned),
            path: path.to_owned(),
            number,
            reference: client_reference(&body),
            // A copy of its own: the body as received is a slice of the connection's read
            // buffer, and kept, it would keep that whole buffer (kilobytes) alive with it.
            body: Bytes::copy_from_slice(&body),
        });
        // A write let go takes its key with it: the key's next use is a new write, as when
        // a provider's idempotency keys expire.
        if let Some(k) = let_go.and_then(|w| w.idempotency_key) {
            self.by_key.remove(&k);
        }
        i
    }
}

/// The id of the first object a key-ignoring provider creates; the next get the numbers
/// after it.
const FIRST_ID: u64 = 1_000_001;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_found_wherever_the_body_carries_it() {
        let r = Some("sluice-0a1b2c".to_owned());
        assert_eq!(client_reference(b"metadata[ref]=sluice-0a1b2c&a=1"), r);
        assert_eq!(
            client_reference(br#"{"body":"text <!-- sluice-0a1b2c -->"}"#),
            r
        );
        assert_eq!(client_reference(b"sluice-0a1b2c"), r);
        // Not a reference: no digits, part of a longer word, or not hex.
        assert_eq!(client_reference(b"sluice- x"), None);
        assert_eq!(client_reference(b"my-sluice-0a1b"), None);
        assert_eq!(client_reference(b"sluice-0a1bzz"), None);
        assert_eq!(
            client_reference(b"sluice-xyz then sluice-beef"),
            Some("sluice-beef".into())
        );
    }

    #[test]
    fn keyed_writes_replay_and_key_ignoring_writes_multiply() {
        let mut l = Ledger::default();
        let body = || Bytes::from_static(b"ref=sluice-abc");
        assert_eq!(l.store(Some("k"), "/v1/x", body()), (0, false));
        assert_eq!(l.store(Some("k"), "/v1/x", body()), (0, true));
        assert_eq!(l.create("/repos/o/r/issues", body()), 1);
        assert_eq!(l.create("/repos/o/r/issues", body()), 2);
        let (one, two) = (l.stored.get(1).unwrap(), l.stored.get(2).unwrap());
        assert_eq!((one.id.as_str(), one.number), ("1000002", 1));
        assert_eq!((two.id.as_str(), two.number), ("1000003", 2));
        assert_eq!(two.idempotency_key, None);
        assert_eq!(two.reference.as_deref(), Some("sluice-abc"));
    }

    #[test]
    fn a_provider_keeping_its_last_writes_forgets_the_keys_of_those_it_let_go() {
        let mut l = Ledger::keeping(None, Some(2));
        let body = || Bytes::from_static(b"{}");
        assert_eq!(l.store(Some("a"), "/v1/x", body()), (0, false));
        assert_eq!(l.store(Some("b"), "/v1/x", body()), (1, false));
        assert_eq!(l.store(Some("a"), "/v1/x", body()), (0, true));
        // A third write lets the first go, and its key with it.
        assert_eq!(l.store(Some("c"), "/v1/x", body()), (2, false));
        assert_eq!(l.store(Some("b"), "/v1/x", body()), (1, true));
        assert_eq!(l.store(Some("a"), "/v1/x", body()), (3, false));
        assert_eq!(l.stored.get(3).unwrap().id, "obj_000004");
        assert_eq!((l.stored.forgotten(), l.by_key.len()), (2, 2));
    }
}
