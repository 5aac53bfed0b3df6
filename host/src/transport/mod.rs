//! The outbound transport: one attempt per call, never a retry of its own.
//!
//! The host is the only layer that retries, because only it knows whether a resend is safe
//! and whether the scope can take it; a client that quietly retried would send attempts the
//! budgets never counted, and could send a write twice. So the client follows no redirects
//! (a redirect is another attempt) and every attempt ends in a [`WireOutcome`]: a response, or
//! a transport failure sorted by whether the request may have reached the provider.
//!
//! What cannot be told apart is counted as sent: a timeout after the connection opened, or
//! a connection that broke mid-exchange, may have delivered the request, so a write that
//! ends that way is `outcome-unknown` and goes to reconciliation, never to a blind resend.
//!
//! An attempt is not limited in total, because a long generation streams for minutes: a
//! streamed answer must show its first byte within [`Timeouts::first_byte`], and then never
//! go quiet for longer than [`Timeouts::idle`] between chunks. An answer read whole begins
//! only when the provider is done with it — a non-streamed generation answers when the
//! whole text is written, minutes later for a reasoning model — so its status line may take
//! up to [`Timeouts::generation`].

mod client;
mod config;
mod connector;
mod local;
mod roots;
mod urls;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, PROXY_AUTHORIZATION};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::client::proxy::matcher::Matcher;

use crate::contract::{Request, Response, TransportFailure, WireOutcome};
use crate::credentials::CredentialHeaders;
use crate::headers::{encode_fields, field_pairs};

pub use client::TransportError;
pub use config::{BuiltInRoots, ExtraRoot, PoolConfig, ProxySetting, TransportConfig};
pub use roots::MAX_ROOT_FILE_BYTES;

/// Timeouts of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the connection (TCP and TLS). Failing here sent nothing.
    pub connect: Duration,
    /// From sending a request whose answer is streamed to the response's status line and
    /// headers (a streaming provider answers at once and then writes as it generates).
    pub first_byte: Duration,
    /// From sending a request whose answer is read whole to its status line and headers:
    /// the longest a provider may take to finish a non-streamed generation. Default: 10
    /// minutes, so a reasoning model's long answer is not cut and paid for again.
    pub generation: Duration,
    /// The longest silence between two chunks of a response body.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            first_byte: Duration::from_secs(120),
            generation: Duration::from_secs(600),
            idle: Duration::from_secs(30),
        }
    }
}

/// Why an attempt got no (whole) answer: the failure as the contract sorts it, and what the
/// HTTP client said, for people (it names a refused certificate, a refused connection...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Fault {
    /// Whether the request may have reached the provider.
    pub failure: TransportFailure,
    /// The client's error and its causes, one line.
    pub detail: String,
}

/// The HTTP client the host sends with.
#[derive(Debug, Clone)]
pub struct Transport {
    client: client::HttpClient,
    timeouts: Timeouts,
    /// Which calls go through which proxy (a plain `http://` call through a proxy carries the
    /// proxy's credentials); `None`: none does.
    proxies: Option<Arc<Matcher>>,
    /// The origins sent to, parsed once.
    origins: Arc<urls::Origins>,
    /// Each single-threaded runtime's own client.
    local: Arc<local::LocalClients>,
}

impl Transport {
    /// A client with `timeouts` and the defaults of [`TransportConfig`]: the built-in roots,
    /// the environment's proxy, no redirects, no retries.
    ///
    /// # Errors
    /// [`TransportError`] when the client cannot be built.
    pub fn new(timeouts: Timeouts) -> Result<Self, TransportError> {
        Self::with_config(TransportConfig::new(timeouts))
    }

    /// A client as `config` says; no redirects, no retries.
    ///
    /// # Errors
    /// [`TransportError`] naming the extra root or the proxy that is wrong, or when the
    /// client cannot be built.
    pub fn with_config(config: TransportConfig) -> Result<Self, TransportError> {
        let recipe = client::Recipe::new(config)?;
        Ok(Self {
            client: recipe.build(),
            timeouts: recipe.config.timeouts,
            proxies: recipe.proxies.clone(),
            origins: Arc::default(),
            local: Arc::new(local::LocalClients::new(recipe)),
        })
    }
}

/// An attempt whose status line and headers arrived; its body is read chunk by chunk.
#[derive(Debug)]
pub struct Started {
    /// The status.
    pub status: u16,
    /// The headers, as a WIT `fields` block.
    pub headers: String,
    body: Incoming,
    idle: Duration,
}

impl Transport {
    /// The timeouts attempts run under.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Sends `req` once, with `secrets` (credential headers, kept out of `req` so that
    /// plugins never see them) added, and reads the whole answer.
    pub async fn send(&self, req: &Request, secrets: &[(String, String)]) -> WireOutcome {
        let secrets = CredentialHeaders::Made(secrets.to_vec());
        let started = match self.start(req, &secrets, false, None).await {
            Ok(s) => s,
            Err(f) => return WireOutcome::Transport(f.failure),
        };
        match started.collect().await {
            Ok(r) => WireOutcome::Response(r),
            Err(f) => WireOutcome::Transport(f.failure),
        }
    }

    /// Sends `req` once and waits for the status line and headers: within
    /// [`Timeouts::first_byte`] when its answer is `streamed`, else within `generation` (a
    /// model's own setting, see `crate::execute::Generations`) or [`Timeouts::generation`].
    ///
    /// # Errors
    /// A [`Fault`] when no answer began in time or the exchange broke.
    pub async fn start(
        &self,
        req: &Request,
        secrets: &CredentialHeaders,
        streamed: bool,
        generation: Option<Duration>,
    ) -> Result<Started, Fault> {
        let limit = if streamed {
            self.timeouts.first_byte
        } else {
            generation.unwrap_or(self.timeouts.generation)
        };
        let request = self.request(req, secrets)?;
        let local = self.local.current();
        let client = local.as_ref().unwrap_or(&self.client);
        let sent = tokio::time::timeout(limit, client.request(request)).await;
        let resp = match sent {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) => return Err(fault(&e, sent_failure(&e))),
            Err(_) => {
                return Err(Fault {
                    failure: TransportFailure::TimeoutAfterSend,
                    detail: format!("no answer within {limit:?} of sending"),
                });
            }
        };
        let (parts, body) = resp.into_parts();
        let headers = encode_fields(
            parts
                .headers
                .iter()
                .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?))),
        )
        .unwrap_or_default();
        Ok(Started {
            status: parts.status.as_u16(),
            headers,
            body,
            idle: self.timeouts.idle,
        })
    }

    /// `req` as the client sends it, with `secrets` among its headers (marked sensitive,
    /// so that HTTP/2 never keeps them in its header table; each replaces the request's own
    /// of its name), or signed as it is sent when the credential signs.
    ///
    /// # Errors
    /// A [`Fault`] (nothing was sent) naming the method, URL or header that cannot be sent.
    fn request(
        &self,
        req: &Request,
        secrets: &CredentialHeaders,
    ) -> Result<http::Request<Full<Bytes>>, Fault> {
        let unsendable = |detail: String| Fault {
            failure: TransportFailure::ConnectFailed,
            detail,
        };
        let method = http::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| unsendable(format!("`{}` is not an HTTP method", req.method)))?;
        let (uri, host) = self.origins.target(&req.url).map_err(unsendable)?;
        let mut request = http::Request::new(Full::new(req.body.clone()));
        *request.method_mut() = method;
        let headers = request.headers_mut();
        // The values are slices of one copy of the block, not a copy each.
        let block = Bytes::copy_from_slice(req.headers.as_bytes());
        let text = std::str::from_utf8(&block)
            .map_err(|_| unsendable("the request's headers are not text".to_owned()))?;
        let fields = field_pairs(text).map(|(n, v)| {
            let value = HeaderValue::from_maybe_shared(block.slice_ref(v.as_bytes()));
            (n, value, false)
        });
        let secret = secrets
            .iter()
            .map(|(n, v)| (n.as_str(), HeaderValue::from_str(v), true));
        for (name, value, sensitive) in fields.chain(secret) {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| unsendable(format!("`{name}` is not an HTTP header name")))?;
            let mut value = value.map_err(|_| {
                unsendable(format!("the value of the header `{name}` cannot be sent"))
            })?;
            value.set_sensitive(sensitive);
            if sensitive {
                // A credential's header replaces a caller's of that name.
                headers.insert(name, value);
            } else {
                headers.append(name, value);
            }
        }
        let plain_http = uri.scheme() == Some(&http::uri::Scheme::HTTP);
        // Over plain HTTP the connection is HTTP/1.1, where the client would write `Host`
        // itself; over TLS it may be HTTP/2, where it writes none, so it is left to the client.
        if plain_http && let Some(host) = host {
            headers.entry(http::header::HOST).or_insert(host);
        }
        if plain_http
            && let Some(proxy) = self.proxies.as_ref().and_then(|m| m.intercept(&uri))
            && let Some(auth) = proxy.basic_auth()
        {
            headers.entry(PROXY_AUTHORIZATION).or_insert(auth.clone());
        }
        *request.uri_mut() = uri;
        if let Some(signer) = secrets.signer() {
            // Signed last, on the request as it is sent, at the host's wall time of this
            // send (set on the request as it leaves the queue): each attempt is signed
            // afresh, so no signature ages in the queue.
            let at = u64::try_from(req.now_ms).unwrap_or(0);
            let at = std::time::UNIX_EPOCH + Duration::from_millis(at);
            signer
                .sign(&mut request, &req.body, at)
                .map_err(unsendable)?;
        }
        Ok(request)
    }
}

impl Started {
    /// The next chunk of the body; `None` at its end.
    ///
    /// # Errors
    /// A [`Fault`] (always *after send*: the request arrived) when the body broke off or went
    /// quiet for longer than the idle limit.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, Fault> {
        loop {
            let frame = match tokio::time::timeout(self.idle, self.body.frame()).await {
                Ok(Some(Ok(frame))) => frame,
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => {
                    let failure = if e.is_timeout() {
                        TransportFailure::TimeoutAfterSend
                    } else {
                        TransportFailure::ResetAfterSend
                    };
                    return Err(fault(&e, failure));
                }
                Err(_) => {
                    return Err(Fault {
                        failure: TransportFailure::TimeoutAfterSend,
                        detail: format!("the body went quiet for {:?}", self.idle),
                    });
                }
            };
            // Trailers carry nothing the host reads.
            if let Ok(data) = frame.into_data() {
                return Ok(Some(data));
            }
        }
    }

    /// Reads the whole body.
    ///
    /// # Errors
    /// As [`Started::chunk`]: the status line arrived, so the request did, and what it did
    /// is not known.
    pub async fn collect(mut self) -> Result<Response, Fault> {
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            body.extend_from_slice(&chunk);
        }
        Ok(Response {
            status: self.status,
            headers: self.headers,
            body,
        })
    }
}

/// A [`Fault`] of `failure` with the error's whole chain of causes.
fn fault(e: &(dyn std::error::Error + 'static), failure: TransportFailure) -> Fault {
    let mut detail = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    Fault { failure, detail }
}

/// Sorts a failed send by whether the request may have reached the provider: a connection
/// that never opened sent nothing; anything after it opened may have delivered the request.
fn sent_failure(e: &hyper_util::client::legacy::Error) -> TransportFailure {
    if !e.is_connect() {
        return TransportFailure::ResetAfterSend;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let timed_out = s.is::<connector::ConnectTimedOut>()
            || s.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut);
        if timed_out {
            return TransportFailure::TimeoutBeforeSend;
        }
        source = s.source();
    }
    TransportFailure::ConnectFailed
}
