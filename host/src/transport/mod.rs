//! The outbound transport: one attempt per call, never a retry of its own.
//!
//! The host is the only layer that retries, because only it knows whether a resend is safe
//! and whether the scope can take it; a client that quietly retried would send attempts the
//! budgets never counted, and could send a write twice. So the client follows no redirects
//! (a redirect is another attempt) and every attempt ends in an [`Outcome`]: a response, or
//! a transport failure sorted by whether the request may have reached the provider.
//!
//! What cannot be told apart is counted as sent: a timeout after the connection opened, or
//! a connection that broke mid-exchange, may have delivered the request, so a write that
//! ends that way is `outcome-unknown` and goes to reconciliation, never to a blind resend.

use std::time::Duration;

use crate::policy::{Outcome, Request, Response, TransportFailure, encode_fields, field_pairs};

/// Why a transport could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct TransportError(#[from] reqwest::Error);

/// Timeouts of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the connection (TCP and TLS). Failing here sent nothing.
    pub connect: Duration,
    /// The whole attempt, from sending to the last byte of the response.
    pub attempt: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            attempt: Duration::from_secs(60),
        }
    }
}

/// The HTTP client the host sends with.
#[derive(Debug, Clone)]
pub struct Transport {
    client: reqwest::Client,
}

impl Transport {
    /// A client with `timeouts`, no redirects and no retries.
    ///
    /// # Errors
    /// [`TransportError`] when the client cannot be built.
    pub fn new(timeouts: Timeouts) -> Result<Self, TransportError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeouts.connect)
            .timeout(timeouts.attempt)
            .build()?;
        Ok(Self { client })
    }

    /// Sends `req` once, with `secrets` (credential headers, kept out of `req` so that
    /// plugins never see them) added.
    pub async fn send(&self, req: &Request, secrets: &[(&str, &str)]) -> Outcome {
        let Ok(method) = reqwest::Method::from_bytes(req.method.as_bytes()) else {
            return Outcome::Transport(TransportFailure::ConnectFailed);
        };
        let mut builder = self.client.request(method, &req.url);
        for (name, value) in field_pairs(&req.headers).chain(secrets.iter().copied()) {
            builder = builder.header(name, value);
        }
        if !req.body.is_empty() {
            builder = builder.body(req.body.clone());
        }
        match builder.send().await {
            Ok(resp) => read(resp).await,
            Err(e) => Outcome::Transport(failure(&e)),
        }
    }
}

async fn read(resp: reqwest::Response) -> Outcome {
    let status = resp.status().as_u16();
    let pairs: Vec<(String, String)> = resp
        .headers()
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let headers =
        encode_fields(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))).unwrap_or_default();
    match resp.bytes().await {
        Ok(body) => Outcome::Response(Response {
            status,
            headers,
            body: body.to_vec(),
        }),
        // The status line arrived, so the request did: what it did is not known.
        Err(e) if e.is_timeout() => Outcome::Transport(TransportFailure::TimeoutAfterSend),
        Err(_) => Outcome::Transport(TransportFailure::ResetAfterSend),
    }
}

/// Sorts a failed attempt by whether the request may have reached the provider.
fn failure(e: &reqwest::Error) -> TransportFailure {
    if e.is_connect() {
        if e.is_timeout() {
            TransportFailure::TimeoutBeforeSend
        } else {
            TransportFailure::ConnectFailed
        }
    } else if e.is_timeout() {
        TransportFailure::TimeoutAfterSend
    } else {
        TransportFailure::ResetAfterSend
    }
}
