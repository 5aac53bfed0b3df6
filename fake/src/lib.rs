//! A fake API provider on loopback, for tests and the demo: real HTTP, its own limits, real
//! providers' quota headers, scripted faults, and a ledger of every attempt it received and
//! every write it stored (of the last ones only, when [`FakeConfig::keep_attempts`] and
//! [`FakeConfig::keep_writes`] bound them).
//!
//! Failure paths are tested at the wire: a retry loop is judged by what the provider saw
//! (how many attempts, when, with which idempotency key, how many writes it stored), never by
//! the client's own counters. So the fake:
//!
//! - enforces requests and tokens per minute itself, with an exact sliding log of the last
//!   minute ([`window`]), and answers 429 with `Retry-After` when they are exceeded;
//! - speaks one provider's dialect ([`Style`]): its quota headers, its `Retry-After` forms,
//!   its error bodies;
//! - plays scripted [`Fault`]s on the next attempts of a route: 429s, 503s, any status,
//!   slowness, a write stored and then the connection dropped, a hang; and faults at steady
//!   rates on every route ([`SteadyFaults`], what `sluice serve --fake-faults` plays);
//! - stores writes idempotently by `Idempotency-Key`, and answers `GET /v1/objects/<id>` and
//!   `GET /v1/objects?idempotency_key=<key>` so a write can be looked up — except in the
//!   GitHub style, whose writes ignore the key as GitHub's create endpoints do (every
//!   accepted POST is a new object) and whose collections are listed newest first, a page at
//!   a time, so a client can look for the reference it put in a body;
//! - counts duplicated side effects where they happen: two stored writes that carry one
//!   client reference ([`client_reference`]) are one action done twice
//!   ([`FakeProvider::duplicates`]);
//! - runs on tokio's clock, so tests on paused time see its limits move with virtual time;
//! - serves plain HTTP/1.1 ([`FakeProvider::start`]), or TLS with a certificate authority
//!   made at run time ([`tls::TestCa`], [`FakeProvider::start_tls`]) and HTTP/2 where the
//!   client picks it, and records each attempt's HTTP version and connection, so a test sees
//!   the protocol a client negotiated and whether it reused its connection.
//!
//! ```
//! use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(600)).await?;
//! fake.script("/v1/chat/completions", [Fault::RateLimited { retry_after: Some(RetryAfter::Seconds(10)) }]);
//! // ... point a client at fake.url("/v1/chat/completions") ...
//! assert_eq!(fake.attempts_on("/v1/chat/completions"), 0);
//! # Ok(())
//! # }
//! ```

mod asked;
pub mod bucket;
mod issues;
mod ledger;
mod models;
mod record;
mod script;
mod server;
pub mod services;
pub mod sigv4;
mod steady;
mod stream;
mod style;
pub mod tls;
mod validate;
mod vision;
pub mod window;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use ledger::{Attempt, HttpVersion, Stored, client_reference};
pub use script::{Fault, RetryAfter};
pub use steady::{SpecError, SteadyFaults};
pub use stream::Cut;
pub use style::{FAKE_REPLY, Style};

use server::Shared;
use tls::{Offer, TestCa};

/// How the fake provider behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeConfig {
    /// Which provider it impersonates.
    pub style: Style,
    /// Requests per minute it allows; `None`: unlimited.
    pub rpm: Option<u64>,
    /// Tokens per minute it allows (the prompt + `max_tokens`, on a model's routes), counted
    /// when a request is admitted and never given back (as OpenAI counts); a generation
    /// that names no maximum is counted for its prompt when admitted and for what it wrote
    /// when it ends. `None`: unlimited.
    pub tpm: Option<u64>,
    /// Input tokens per minute, a continuously refilled bucket (as Anthropic's); `None`:
    /// unlimited.
    pub itpm: Option<u64>,
    /// Output tokens per minute, a continuously refilled bucket that reserves `max_tokens`
    /// when a request starts and takes back what it did not produce when it ends (as
    /// Anthropic's); `None`: unlimited.
    pub otpm: Option<u64>,
    /// The pause between two events of a streamed answer.
    pub stream_gap: Duration,
    /// The most attempts its record keeps, the oldest let go first; `None`: every one (as
    /// tests need). A provider serving a long load keeps a bounded record, or it grows
    /// with every request.
    pub keep_attempts: Option<usize>,
    /// The most writes it keeps stored, the oldest let go first, each with its idempotency
    /// key (as a provider's keys expire: the key's next use is a new write); `None`: every
    /// one (as tests need).
    pub keep_writes: Option<usize>,
}

impl FakeConfig {
    /// A provider of `style` with no limits.
    pub fn new(style: Style) -> Self {
        Self {
            style,
            rpm: None,
            tpm: None,
            itpm: None,
            otpm: None,
            stream_gap: Duration::from_millis(20),
            keep_attempts: None,
            keep_writes: None,
        }
    }

    /// Keeps a record of the last `count` attempts only (at least one), not of every one:
    /// [`FakeProvider::attempts`] and the counts beside it then see those alone.
    #[must_use]
    pub fn keep_attempts(mut self, count: usize) -> Self {
        self.keep_attempts = Some(count);
        self
    }

    /// Keeps the last `count` writes stored only (at least one), not every one: an older
    /// write is let go with its idempotency key, and [`FakeProvider::stored`] and
    /// [`FakeProvider::duplicates`] see the writes kept alone.
    #[must_use]
    pub fn keep_writes(mut self, count: usize) -> Self {
        self.keep_writes = Some(count);
        self
    }

    /// Allows `rpm` requests per minute.
    #[must_use]
    pub fn rpm(mut self, rpm: u64) -> Self {
        self.rpm = Some(rpm);
        self
    }

    /// Allows `tpm` tokens per minute.
    #[must_use]
    pub fn tpm(mut self, tpm: u64) -> Self {
        self.tpm = Some(tpm);
        self
    }

    /// Allows `itpm` input tokens per minute (a token bucket).
    #[must_use]
    pub fn itpm(mut self, itpm: u64) -> Self {
        self.itpm = Some(itpm);
        self
    }

    /// Allows `otpm` output tokens per minute (a token bucket charged by actual output).
    #[must_use]
    pub fn otpm(mut self, otpm: u64) -> Self {
        self.otpm = Some(otpm);
        self
    }

    /// Pauses `gap` between two events of a streamed answer.
    #[must_use]
    pub fn stream_gap(mut self, gap: Duration) -> Self {
        self.stream_gap = gap;
        self
    }
}

/// A running fake provider on `127.0.0.1`. It stops when dropped.
#[derive(Debug)]
pub struct FakeProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    scheme: &'static str,
}

impl FakeProvider {
    /// Starts a provider on a free loopback port, serving plain HTTP/1.1.
    ///
    /// # Errors
    /// The bind failed.
    pub async fn start(config: FakeConfig) -> std::io::Result<Self> {
        Self::launch(config, None).await
    }

    /// Starts a provider on a free loopback port, serving TLS with `ca`'s server identity
    /// (for `127.0.0.1` and `localhost`) and offering HTTP/2 and HTTP/1.1 in ALPN. Its
    /// [`url`](Self::url)s are `https://`.
    ///
    /// # Errors
    /// The bind failed.
    pub async fn start_tls(config: FakeConfig, ca: &TestCa) -> std::io::Result<Self> {
        Self::launch(config, Some((ca, Offer::Http2AndHttp1))).await
    }

    /// As [`start_tls`](Self::start_tls), but offering HTTP/1.1 only, as a server that does
    /// not speak HTTP/2.
    ///
    /// # Errors
    /// The bind failed.
    pub async fn start_tls_http1(config: FakeConfig, ca: &TestCa) -> std::io::Result<Self> {
        Self::launch(config, Some((ca, Offer::Http1Only))).await
    }

    async fn launch(config: FakeConfig, tls: Option<(&TestCa, Offer)>) -> std::io::Result<Self> {
        let tls = tls.map(|(ca, offer)| (ca.acceptor(offer), offer));
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let ledger = ledger::Ledger::keeping(config.keep_attempts, config.keep_writes);
        let shared = Arc::new(Shared {
            config,
            ledger: Mutex::new(ledger),
            started: server::now(),
            scheme,
        });
        let serving = shared.clone();
        let accept = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            let mut number = 0;
            while let Ok((stream, _)) = listener.accept().await {
                number += 1;
                match &tls {
                    None => connections.spawn(server::serve(serving.clone(), stream, number)),
                    Some((acceptor, offer)) => connections.spawn(server::serve_tls(
                        serving.clone(),
                        acceptor.clone(),
                        stream,
                        number,
                        *offer,
                    )),
                };
                // Reap finished connections so the set does not grow.
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self {
            addr,
            shared,
            accept,
            scheme,
        })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The absolute URL of `path` on it: `http://127.0.0.1:<port><path>`, or `https://`
    /// for a provider started over TLS.
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.addr)
    }

    /// Serves from now on only requests whose `header` is `value`, as a real provider checks
    /// its API key: any other request is answered 401 and nothing of it is stored.
    pub fn require_credential(&self, header: &str, value: &str) {
        self.shared.ledger().credential = Some((header.to_ascii_lowercase(), value.to_owned()));
    }

    /// Serves from now on only requests signed with SigV4 by `account`'s keys, for its
    /// region and service, within its skew of the fake's clock, as AWS checks them: any other
    /// request is answered 403 in AWS's words (`x-amzn-errortype` and a `{"message"}`), and
    /// nothing of it is stored.
    pub fn require_sigv4(&self, account: sigv4::AwsAccount) {
        self.shared.ledger().aws = Some(account);
    }

    /// Queues `faults` for the next attempts on `path`, one per attempt, after any already
    /// queued; attempts beyond them are answered normally.
    pub fn script(&self, path: &str, faults: impl IntoIterator<Item = Fault>) {
        self.shared
            .ledger()
            .scripts
            .entry(path.to_owned())
            .or_default()
            .extend(faults);
    }

    /// Plays `faults` on every route from now on, after any scripted fault (their limits
    /// are the [`FakeConfig`]'s: see [`SteadyFaults::limit`]).
    pub fn play(&self, faults: &SteadyFaults) {
        self.shared.ledger().steady = faults.plays().then(|| (faults.clone(), 0));
    }

    /// Allows requests that name `model` (the body's `model`) `requests` a day, on top of the
    /// provider's own limits, as OpenAI and Anthropic limit each model of a key apart. A
    /// request past it is answered 429 with the style's quota headers, a `Retry-After` until
    /// the provider's next day (every 24 hours from its start) and an error naming the
    /// model's requests per day; requests for other models are not affected.
    pub fn limit_model_per_day(&self, model: &str, requests: u64) {
        self.shared.ledger().model_days.limit(model, requests);
    }

    /// Serves only `models` from now on: a request on a model's route that names another
    /// model is answered 404 `model_not_found`, as OpenAI answers a misspelt model.
    pub fn serve_only_models(&self, models: &[&str]) {
        self.shared.ledger().validation.models =
            Some(models.iter().map(|m| (*m).to_owned()).collect());
    }

    /// Refuses a chat with no messages, 400 `invalid_request_error`, as OpenAI does.
    pub fn refuse_empty_chats(&self) {
        self.shared.ledger().validation.messages_required = true;
    }

    /// Gives every model a context window of `tokens`: a request whose prompt and maximum
    /// output together exceed it is answered 400 `context_length_exceeded`.
    pub fn context_window(&self, tokens: u64) {
        self.shared.ledger().validation.context_tokens = Some(tokens);
    }

    /// Queues `faults` for the next writes (not reads) on `path`, one per write, after any
    /// already queued for writes and before those [`script`](Self::script) queued for
    /// every attempt: for faults meant for a write where reads share its path (GitHub lists
    /// a collection at the path that creates in it).
    pub fn script_writes(&self, path: &str, faults: impl IntoIterator<Item = Fault>) {
        self.shared
            .ledger()
            .write_scripts
            .entry(path.to_owned())
            .or_default()
            .extend(faults);
    }

    /// Every attempt received, in order (the last ones only, with
    /// [`FakeConfig::keep_attempts`]).
    pub fn attempts(&self) -> Vec<Attempt> {
        self.shared.ledger().attempts.iter().cloned().collect()
    }

    /// How many attempts the record let go ([`FakeConfig::keep_attempts`]); 0 when it keeps
    /// every one.
    pub fn attempts_forgotten(&self) -> usize {
        self.shared.ledger().attempts.forgotten()
    }

    /// Attempts received on `path`.
    pub fn attempts_on(&self, path: &str) -> usize {
        self.shared
            .ledger()
            .attempts
            .iter()
            .filter(|a| a.path == path)
            .count()
    }

    /// Attempts received with `Idempotency-Key: key`.
    pub fn attempts_with_key(&self, key: &str) -> usize {
        self.shared
            .ledger()
            .attempts
            .iter()
            .filter(|a| a.idempotency_key.as_deref() == Some(key))
            .count()
    }

    /// Attempts answered with `status`.
    pub fn answered(&self, status: u16) -> usize {
        self.shared
            .ledger()
            .attempts
            .iter()
            .filter(|a| a.status == Some(status))
            .count()
    }

    /// Every write stored, in order (a replay under the same key stores nothing new); the
    /// last ones only when [`FakeConfig::keep_writes`] bounds them.
    pub fn stored(&self) -> Vec<Stored> {
        self.shared.ledger().stored.iter().cloned().collect()
    }

    /// Writes stored for a client reference that an earlier stored write already carried:
    /// logical actions done twice (or more), counted as the provider holds them, whatever
    /// keys they came with. Writes that carry no reference are not counted.
    pub fn duplicates(&self) -> usize {
        let ledger = self.shared.ledger();
        let mut seen = std::collections::HashSet::new();
        ledger
            .stored
            .iter()
            .filter_map(|s| s.reference.as_deref())
            .filter(|r| !seen.insert(*r))
            .count()
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
