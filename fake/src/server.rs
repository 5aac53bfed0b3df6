//! The HTTP side: one hyper connection task per client connection, one answer per attempt.
//! Plain connections speak HTTP/1.1; TLS connections speak what the fake offered in ALPN.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use tokio::time::Instant;

use crate::FakeConfig;
use crate::asked::{Asked, asked};
use crate::issues;
use crate::ledger::{Attempt, HttpVersion, Ledger};
use crate::script::{Fault, RetryAfter};
use crate::stream::{self, Cut, SseBody};
use crate::style::{Headers, Quota, Style};
use crate::tls::Offer;

/// An answer's body: whole, or a stream of events.
pub(crate) type Body = BoxBody<Bytes, Cut>;

/// What the connection task shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: FakeConfig,
    pub ledger: Mutex<Ledger>,
    pub started: Instant,
    /// `http` or `https`, for the URLs the answers carry.
    pub scheme: &'static str,
}

impl Shared {
    pub fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores a write as the provider's style does: once per idempotency key, or (where
    /// the provider takes no key) as a new object every time. `(index, replayed)`.
    fn keep(&self, key: Option<&str>, path: &str, body: Bytes) -> (usize, bool) {
        let mut ledger = self.ledger();
        if self.config.style.ignores_idempotency_keys() {
            (ledger.create(path, body), false)
        } else {
            ledger.store(key, path, body)
        }
    }
}

/// `scheme://host[:port]` the request was addressed to.
fn origin(scheme: &str, headers: &hyper::HeaderMap, uri: &hyper::Uri) -> String {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| uri.authority().map(ToString::to_string))
        .unwrap_or_default();
    format!("{scheme}://{host}")
}

/// The connection is dropped without an answer.
#[derive(Debug, thiserror::Error)]
#[error("the fake provider dropped the connection on purpose")]
pub(crate) struct Dropped;

/// The provider's wall clock, for dates in headers. It stands in for a remote server, which
/// has its own clock.
#[allow(
    clippy::disallowed_methods,
    reason = "a stand-in server keeps its own wall clock"
)]
fn wall() -> SystemTime {
    SystemTime::now()
}

/// Its monotonic clock: tokio's, so tests on paused time see the limits move with it.
#[allow(
    clippy::disallowed_methods,
    reason = "a stand-in server keeps its own clock"
)]
pub(crate) fn now() -> Instant {
    Instant::now()
}

fn respond(status: u16, headers: Headers, body: String) -> Response<Body> {
    let whole = Full::new(Bytes::from(body)).map_err(|never| match never {});
    with_headers(status, headers, whole.boxed(), "application/json")
}

fn with_headers(
    status: u16,
    headers: Headers,
    body: Body,
    content_type: &'static str,
) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert(
        "content-type",
        hyper::header::HeaderValue::from_static(content_type),
    );
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(&value),
        ) {
            h.append(n, v);
        }
    }
    r
}

/// Answers one attempt. A provider finishes what it received even when its client has gone
/// (timed out, or killed): the attempt runs in a task of its own, which the connection's
/// end does not cancel, so a slow write is stored after its client stopped waiting — as a
/// real provider's would be.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    connection: u64,
    req: Request<Incoming>,
) -> Result<Response<Body>, Dropped> {
    tokio::spawn(attempt(shared, connection, req))
        .await
        .unwrap_or(Err(Dropped))
}

async fn attempt(
    shared: Arc<Shared>,
    connection: u64,
    req: Request<Incoming>,
) -> Result<Response<Body>, Dropped> {
    let (parts, body) = req.into_parts();
    let version = HttpVersion::of(parts.version);
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or("").to_owned();
    let key = parts
        .headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let write = !matches!(method.as_str(), "GET" | "HEAD");
    let style = shared.config.style;
    let authorized = shared
        .ledger()
        .credential
        .as_ref()
        .is_none_or(|(name, value)| {
            parts
                .headers
                .get(name.as_str())
                .and_then(|v| v.to_str().ok())
                == Some(value.as_str())
        });

    let (index, fault) = {
        let mut ledger = shared.ledger();
        let fault = ledger.next_fault(&path, write);
        let (index, _) = ledger.attempts.push(Attempt {
            at: now().duration_since(shared.started),
            method,
            path: path.clone(),
            version,
            connection,
            idempotency_key: key.clone(),
            traceparent: parts
                .headers
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            headers: parts
                .headers
                .keys()
                .map(|n| n.as_str().to_owned())
                .collect(),
            status: None,
            tokens: 0,
            input_tokens: 0,
            output_tokens: 0,
            stream: None,
        });
        (index, fault)
    };
    let answer = |status: u16, mut headers: Headers, body: String| {
        learnt(&shared, index, |a| a.status = Some(status));
        // AWS names an error's type in a header, never in a `{"message"}` body: the code
        // the fake's own message carries is lifted into it. Only a Bedrock error's body is
        // read for it: every other answer goes out as it is.
        if style == Style::Bedrock && status >= 400 {
            let code = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    let message = v.get("message")?.as_str()?;
                    let code = message
                        .strip_prefix("fake provider: ")?
                        .split(" (")
                        .next()?;
                    Some(code.to_owned())
                });
            if let Some(kind) = style.aws_error_type(status, code.as_deref().unwrap_or("")) {
                headers.push(("x-amzn-errortype".into(), kind));
            }
        }
        Ok(respond(status, headers, body))
    };
    // A scripted refusal carries the quota headers every answer carries, as a real
    // provider's does: they say which quota (and, in its figures, which model's) it is about.
    let retry = |ra: Option<RetryAfter>| {
        let mut h = style.quota_headers(&figures(&shared, now()), wall());
        h.extend(
            ra.map(|ra| Style::retry_after_headers(ra, wall()))
                .unwrap_or_default(),
        );
        h
    };

    let signed = shared.ledger().aws.clone().map(|account| {
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let target = parts
            .uri
            .path_and_query()
            .map_or("/", hyper::http::uri::PathAndQuery::as_str);
        let arrived = crate::sigv4::Arrived {
            method: parts.method.as_str(),
            target,
            headers: &headers,
            body: &body,
        };
        account.check(&arrived, wall())
    });
    if let Some(Err(refusal)) = signed {
        learnt(&shared, index, |a| a.status = Some(403));
        let headers = vec![("x-amzn-errortype".into(), refusal.kind.to_owned())];
        let body = serde_json::json!({ "message": refusal.message }).to_string();
        return Ok(respond(403, headers, body));
    }
    if !authorized {
        return answer(
            401,
            Headers::default(),
            style.error_body(401, "invalid_api_key"),
        );
    }
    let mut cut_after = None;
    match fault {
        Some(Fault::CutStream { after_events }) => {
            cut_after = Some(usize::try_from(after_events).unwrap_or(usize::MAX));
        }
        Some(Fault::Hang) => std::future::pending().await,
        Some(Fault::Slow(d)) => tokio::time::sleep(d).await,
        Some(Fault::StoreThenDrop) => {
            // A read has nothing to store: it is only dropped.
            if write {
                shared.keep(key.as_deref(), &path, body);
            }
            return Err(Dropped);
        }
        Some(Fault::RateLimited { retry_after }) => {
            let body = style.error_body(429, style.rate_limit_code());
            return answer(429, retry(retry_after), body);
        }
        Some(Fault::Unavailable { retry_after }) => {
            let status = style.overloaded_status();
            return answer(
                status,
                retry(retry_after),
                style.error_body(status, "overloaded"),
            );
        }
        Some(Fault::Status { status, code }) => {
            return answer(status, retry(None), style.error_body(status, code));
        }
        Some(Fault::Redirect { status, location }) => {
            return answer(
                status,
                vec![("location".into(), location.into())],
                String::new(),
            );
        }
        None => {}
    }

    // A long body is parsed off the threads that serve other connections, as a provider's
    // other customers are not served by the machine parsing one customer's upload.
    let parsed = if body.len() > 64 << 10 {
        let whole = body.clone();
        tokio::task::spawn_blocking(move || {
            serde_json::from_slice::<serde_json::Value>(&whole).ok()
        })
        .await
        .ok()
        .flatten()
    } else {
        serde_json::from_slice::<serde_json::Value>(&body).ok()
    };
    let asked = asked(&path, &body, parsed.as_ref(), style);
    let (rpm, tpm) = (shared.config.rpm, shared.config.tpm);
    let t = now();
    let model = if style == Style::Gemini {
        crate::asked::gemini_model(&path).map(str::to_owned)
    } else if style == Style::Bedrock {
        crate::asked::bedrock_model(&path).map(str::to_owned)
    } else {
        parsed
            .as_ref()
            .and_then(|v| v.get("model")?.as_str().map(str::to_owned))
    };
    let day_spent = model.as_deref().and_then(|m| {
        shared
            .ledger()
            .model_days
            .take(m, t.duration_since(shared.started))
            .err()
    });
    if let Some(next_day) = day_spent {
        let mut headers = style.quota_headers(&figures(&shared, t), wall());
        if !style.delay_in_body() {
            headers.extend(Style::retry_after_headers(
                RetryAfter::Seconds(next_day.as_secs().max(1)),
                wall(),
            ));
        }
        // As Gemini does, a day's refusal asks for a short delay all the same: only its
        // quota's id says the day is spent.
        let body = style.limit_body(true, Duration::from_secs(22), model.as_deref());
        return answer(429, headers, body);
    }
    let refused = shared.ledger().validation.refuse(
        crate::asked::model_route(&path, style),
        model.as_deref(),
        parsed.as_ref(),
        &asked,
    );
    if let Some((status, code)) = refused {
        // Counted as a request of the window, with no tokens, as the provider counts it.
        let counted = shared.ledger().window.take(t, 0, rpm, tpm);
        if counted.is_ok() {
            let headers = style.quota_headers(&figures(&shared, t), wall());
            return answer(status, headers, style.error_body(status, code));
        }
    }
    let (taken, quota) = {
        let mut ledger = shared.ledger();
        let ledger = &mut *ledger;
        let taken = ledger
            .buckets
            .take(&shared.config, t, asked.input, asked.max_output)
            .and_then(|()| {
                ledger
                    .window
                    .take(t, asked.input + asked.max_output, rpm, tpm)
                    .inspect_err(|_| ledger.buckets.give_back(t, asked.input, asked.max_output))
            });
        (taken, quota_of(&shared.config, ledger, t))
    };
    let mut headers = style.quota_headers(&quota, wall());
    if taken.is_ok() {
        learnt(&shared, index, |a| {
            a.tokens = asked.input + asked.max_output;
            a.input_tokens = asked.input;
        });
    }
    if let Err(exceeded) = taken {
        if style.delay_in_body() {
            let body = style.limit_body(false, exceeded.retry_after, model.as_deref());
            return answer(429, headers, body);
        }
        let secs =
            exceeded.retry_after.as_secs() + u64::from(exceeded.retry_after.subsec_nanos() > 0);
        headers.extend(Style::retry_after_headers(
            RetryAfter::Seconds(secs.max(1)),
            wall(),
        ));
        if style == Style::OpenAi {
            let ms = u64::try_from(exceeded.retry_after.as_millis()).unwrap_or(u64::MAX);
            headers.push(("retry-after-ms".into(), ms.max(1).to_string()));
        }
        return answer(429, headers, style.error_body(429, style.rate_limit_code()));
    }

    if style == Style::GitHub && !asked.stream {
        produced(&shared, index, t, &asked, asked.output);
        let origin = origin(shared.scheme, &parts.headers, &parts.uri);
        let (status, extra, body) = if write {
            issues::create(&mut shared.ledger(), &path, body, &origin)
        } else {
            issues::read(&shared.ledger(), &path, &query, &origin)
        };
        headers.extend(extra);
        return answer(status, headers, body);
    }
    if !write {
        if let Some(id) = path.strip_prefix("/v1/objects/") {
            let found = shared
                .ledger()
                .stored
                .iter()
                .find(|s| s.id == id)
                .map(|s| s.id.clone());
            return match found {
                Some(id) => answer(200, headers, style.success_body(&id, 0, 0, None)),
                None => answer(404, headers, style.error_body(404, "resource_missing")),
            };
        }
        if path == "/v1/objects" {
            let wanted = query.strip_prefix("idempotency_key=").unwrap_or("");
            let ids: Vec<String> = shared
                .ledger()
                .stored
                .iter()
                .filter(|s| s.idempotency_key.as_deref() == Some(wanted))
                .map(|s| s.id.clone())
                .collect();
            return answer(200, headers, serde_json::json!({ "data": ids }).to_string());
        }
    }
    if asked.stream {
        return Ok(streamed(&shared, index, asked, cut_after, headers));
    }
    produced(&shared, index, t, &asked, asked.output);
    if !write {
        return answer(
            200,
            headers,
            style.success_body("read", asked.input, asked.output, asked.model.as_deref()),
        );
    }
    let (i, replayed) = shared.keep(key.as_deref(), &path, body);
    // The write just stored or replayed is kept: a record lets go only its oldest.
    let id = shared
        .ledger()
        .stored
        .get(i)
        .map(|s| s.id.clone())
        .unwrap_or_default();
    if replayed {
        headers.push(("idempotent-replayed".into(), "true".into()));
    }
    answer(
        200,
        headers,
        style.success_body(&id, asked.input, asked.output, asked.model.as_deref()),
    )
}

/// The quota figures at `t`, as every answer reports them.
fn quota_of(config: &FakeConfig, ledger: &mut Ledger, t: Instant) -> Quota {
    let (rpm, tpm) = (config.rpm, config.tpm);
    let (remaining_requests, remaining_tokens) = ledger.window.remaining(t, rpm, tpm);
    Quota {
        rpm,
        tpm,
        remaining_requests,
        remaining_tokens,
        reset_after: ledger.window.reset_after(t),
        input: ledger.buckets.input.as_mut().map(|b| b.figures(t)),
        output: ledger.buckets.output.as_mut().map(|b| b.figures(t)),
    }
}

/// The quota figures at `t`, taking nothing.
fn figures(shared: &Shared, t: Instant) -> Quota {
    quota_of(&shared.config, &mut shared.ledger(), t)
}

/// Records what an attempt produced, and gives its reservation's unused part back. A
/// generation that named no maximum was admitted for its prompt alone: what it wrote is
/// counted in the tokens-per-minute window now (stricter than counting at admission only).
fn produced(shared: &Shared, index: usize, at: Instant, asked: &Asked, output: u64) {
    let mut ledger = shared.ledger();
    ledger
        .buckets
        .finish(at, asked.max_output.saturating_sub(output));
    if asked.max_output == 0 {
        ledger.window.count(at, output);
    }
    if let Some(a) = ledger.attempts.get_mut(index) {
        if asked.max_output == 0 {
            a.tokens += output;
        }
        a.output_tokens = output;
    }
}

/// Sets what is learnt of attempt `index`, if the record still keeps it.
fn learnt(shared: &Shared, index: usize, set: impl FnOnce(&mut Attempt)) {
    if let Some(a) = shared.ledger().attempts.get_mut(index) {
        set(a);
    }
}

/// A streamed answer: its output reservation is held until the stream ends, and what it
/// produced is counted then (the tokens of the content events delivered, if it was cut).
fn streamed(
    shared: &Arc<Shared>,
    index: usize,
    asked: Asked,
    cut_after: Option<usize>,
    headers: Headers,
) -> Response<Body> {
    let plan = stream::Plan {
        style: shared.config.style,
        input_tokens: asked.input,
        output_tokens: asked.output,
        include_usage: asked.include_usage,
        cut_after,
        gap: shared.config.stream_gap,
    };
    let id = format!("stream_{index:06}");
    let events = stream::events(&plan, &id);
    let style = plan.style;
    let on_end = {
        let shared = shared.clone();
        Box::new(move |delivered: usize, whole: bool| {
            let output = if whole {
                asked.output
            } else {
                stream::produced(style, asked.output, delivered)
            };
            produced(&shared, index, now(), &asked, output);
            learnt(&shared, index, |a| a.stream = Some(whole));
        })
    };
    learnt(shared, index, |a| a.status = Some(200));
    let body = SseBody::new(&plan, events, on_end);
    let content_type = if style == Style::Bedrock {
        "application/vnd.amazon.eventstream"
    } else {
        "text/event-stream"
    };
    with_headers(200, headers, body.boxed(), content_type)
}

/// Serves one accepted plain connection, over HTTP/1.1, until the client closes it or an
/// attempt drops it.
pub(crate) async fn serve(shared: Arc<Shared>, stream: tokio::net::TcpStream, connection: u64) {
    let io = hyper_util::rt::TokioIo::new(stream);
    let service = hyper::service::service_fn(move |req| handle(shared.clone(), connection, req));
    // An error here is a dropped connection (on purpose or by the client): nothing to do.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await;
}

/// Serves one accepted TLS connection: the handshake, then HTTP/2 or HTTP/1.1 (whichever
/// the client speaks, among what `offer` allows) until the client closes it.
pub(crate) async fn serve_tls(
    shared: Arc<Shared>,
    acceptor: tokio_rustls::TlsAcceptor,
    stream: tokio::net::TcpStream,
    connection: u64,
    offer: Offer,
) {
    // A client that refuses the certificate ends the handshake: no attempt reached us.
    let Ok(tls) = acceptor.accept(stream).await else {
        return;
    };
    let io = hyper_util::rt::TokioIo::new(tls);
    let service = hyper::service::service_fn(move |req| handle(shared.clone(), connection, req));
    let _ = match offer {
        Offer::Http2AndHttp1 => {
            hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                .serve_connection(io, service)
                .await
        }
        Offer::Http1Only => hyper::server::conn::http1::Builder::new()
            .serve_connection(io, service)
            .await
            .map_err(Into::into),
    };
}
