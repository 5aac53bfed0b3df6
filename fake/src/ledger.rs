//! What the provider saw and stored: every attempt, every write, and the scripts still to
//! play. Tests assert on this, never on the client's own counters.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;

use crate::bucket::Buckets;
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
    /// The status answered; `None` if the connection was dropped or the attempt hangs.
    pub status: Option<u16>,
    /// Tokens the attempt was charged against the provider's tokens per minute (0 when it
    /// was refused or never reached the limiter).
    pub tokens: u64,
    /// Output tokens the answer actually produced (and its usage reports); for a stream, set
    /// when it ends, in proportion to the events delivered if it was cut.
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
    /// The id the provider gave it.
    pub id: String,
    /// The idempotency key it was stored under, if any.
    pub idempotency_key: Option<String>,
    /// The path it was written to.
    pub path: String,
    /// Its body.
    pub body: Bytes,
}

#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub attempts: Vec<Attempt>,
    pub stored: Vec<Stored>,
    pub by_key: HashMap<String, usize>,
    pub scripts: HashMap<String, VecDeque<Fault>>,
    pub window: Window,
    pub buckets: Buckets,
}

impl Ledger {
    /// Stores a write, or finds the one stored under the same key: `(index, replayed)`.
    pub fn store(&mut self, key: Option<&str>, path: &str, body: Bytes) -> (usize, bool) {
        if let Some(&i) = key.and_then(|k| self.by_key.get(k)) {
            return (i, true);
        }
        let i = self.stored.len();
        self.stored.push(Stored {
            id: format!("obj_{:06}", i + 1),
            idempotency_key: key.map(str::to_owned),
            path: path.to_owned(),
            body,
        });
        if let Some(k) = key {
            self.by_key.insert(k.to_owned(), i);
        }
        (i, false)
    }
}
