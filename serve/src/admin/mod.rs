//! The admin API, on a listener and a token of its own (`[serve.admin]`): what operators
//! and monitoring ask the sidecar, and what they tell it. Every route but `/healthz` needs
//! `authorization: Bearer <admin token>`; every answer is JSON (but `/metrics`), and every
//! error is `{"error": {"message": ...}}`, saying what is wrong and what to do.
//!
//! - `GET /healthz`: 200 while the process serves;
//! - `GET /readyz`: 200 once the writes a previous run left were carried on and while new
//!   writes can be recorded and claimed, else 503 with the reason (`recovering`, or
//!   `writes_refused`: the journal cannot be written, or the shared store does not answer
//!   or lost its state);
//! - `GET /metrics`: the Prometheus text format;
//! - `GET /scopes`: every quota scope — limits, paced rate, what is available, what the
//!   provider last reported, the hold, when the next request may go and why it waits
//!   (`scopes.rs`);
//! - `GET /queue`: the requests waiting and in flight, by tenant and class (`scopes.rs`);
//! - `GET /tasks`: the tasks agents named (`x-sluice-task`); `POST /tasks/{name}/cancel`
//!   cancels one: its waiting calls and its unsent writes (`tasks.rs`);
//! - `GET /escalations` (the open ones; `?all=true`: all), `GET /escalations/{id}` (the case),
//!   `POST /escalations/{id}/resolve` (a decision, carried out at once) (`escalations.rs`);
//! - `GET /audit/verify`: verifies the audit log (`audit.rs`);
//! - `POST /plugins/{provider}/reload`: swaps the provider's plugin for the version its file
//!   holds now, once that version passed its checks (`plugins.rs`).
//!
//! The operator's console (`/console`, HTML for people, signed in with a session cookie) is
//! served on the same listener: see `crate::console`.
//!
//! An unknown route is answered 404 with the list of routes; a known one asked with another
//! method, 405 with `Allow`.
//!
//! The admin API acts on the host the agents use, through the same library calls an
//! embedding platform or the `sluice` CLI makes: a cancel, a decision and a verification here
//! are the CLI's, recorded and audited the same way.

pub(crate) mod audit;
pub(crate) mod escalations;
mod plugins;
mod scopes;
mod tasks;
mod text;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use crate::Shared;
use crate::agents::digest;
use crate::listener::Peer;
use crate::reply::{Body, full};

/// Every route, as an unknown route's answer lists them.
pub const ROUTES: &[&str] = &[
    "GET /healthz",
    "GET /readyz",
    "GET /metrics",
    "GET /scopes",
    "GET /queue",
    "GET /tasks",
    "POST /tasks/{name}/cancel",
    "GET /escalations",
    "GET /escalations/{id}",
    "POST /escalations/{id}/resolve",
    "GET /audit/verify",
    "POST /plugins/{provider}/reload",
];

/// The admin API's state.
#[derive(Debug)]
pub struct Admin {
    pub(crate) shared: Arc<Shared>,
    token: [u8; 32],
}

impl Admin {
    pub(crate) fn new(shared: Arc<Shared>, token: [u8; 32]) -> Self {
        Self { shared, token }
    }

    /// Whether `req` carries the admin token.
    fn authorized(&self, req: &Request<Incoming>) -> bool {
        let Some(v) = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        let token = v.strip_prefix("Bearer ").unwrap_or(v);
        // Digests of equal length: comparing them leaks nothing about the token.
        digest(token) == self.token
    }
}

/// One route, its path's parameters still as they came (percent-encoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route<'a> {
    Healthz,
    Readyz,
    Metrics,
    Scopes,
    Queue,
    Tasks,
    CancelTask(&'a str),
    Escalations,
    Escalation(&'a str),
    Resolve(&'a str),
    AuditVerify,
    ReloadPlugin(&'a str),
}

impl<'a> Route<'a> {
    /// The route `path` names, if any.
    fn of(path: &'a str) -> Option<Self> {
        let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
        Some(match segments[..] {
            ["healthz"] => Self::Healthz,
            ["readyz"] => Self::Readyz,
            ["metrics"] => Self::Metrics,
            ["scopes"] => Self::Scopes,
            ["queue"] => Self::Queue,
            ["tasks"] => Self::Tasks,
            ["tasks", name, "cancel"] => Self::CancelTask(name),
            ["escalations"] => Self::Escalations,
            ["escalations", id] => Self::Escalation(id),
            ["escalations", id, "resolve"] => Self::Resolve(id),
            ["audit", "verify"] => Self::AuditVerify,
            ["plugins", provider, "reload"] => Self::ReloadPlugin(provider),
            _ => return None,
        })
    }

    /// The one method the route answers.
    fn method(self) -> &'static str {
        match self {
            Self::CancelTask(_) | Self::Resolve(_) | Self::ReloadPlugin(_) => "POST",
            _ => "GET",
        }
    }
}

/// A JSON answer.
pub(crate) fn json_reply(status: u16, value: &Value) -> Response<Body> {
    let mut r = Response::new(full(value.to_string()));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// An error answer: `{"error": {"message": ...}}`.
pub(crate) fn error_reply(status: u16, message: impl Into<String>) -> Response<Body> {
    json_reply(status, &json!({"error": {"message": message.into()}}))
}

/// Answers one admin request.
pub(crate) async fn handle(
    admin: Arc<Admin>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    if req.method() == Method::GET && path == "/healthz" {
        return Ok(json_reply(200, &json!({"status": "ok"})));
    }
    // An address past its wrong tokens for the minute is refused before its token is
    // looked at (`crate::failed_tokens`).
    let token = crate::agents::presented(req.headers(), &[]);
    let who = crate::failed_tokens::Presenter::of(Peer::of(&req), token);
    let now = admin.shared.sluice.clock().wall_ms();
    if let Err(wait_ms) =
        admin
            .shared
            .failed_tokens
            .check(who, crate::failed_tokens::Door::Operators, now)
    {
        return Ok(too_many_failed_tokens(wait_ms));
    }
    if !admin.authorized(&req) {
        admin
            .shared
            .failed_tokens
            .failed(who, "admin", crate::failed_tokens::Door::Operators, now);
        let mut r = error_reply(
            401,
            "the admin API needs `authorization: Bearer <admin token>` (the token of \
             [serve.admin])",
        );
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
        return Ok(r);
    }
    let Some(route) = Route::of(&path) else {
        return Ok(json_reply(
            404,
            &json!({"error": {
                "message": format!(
                    "no admin route {} {}; the routes are: {}",
                    req.method(),
                    sluice::printable::printable_cut(&path, 200),
                    ROUTES.join(", ")
                ),
                "routes": ROUTES,
            }}),
        ));
    };
    if req.method().as_str() != route.method() {
        let mut r = error_reply(
            405,
            format!(
                "{} takes {}, not {}",
                sluice::printable::printable_cut(&path, 200),
                route.method(),
                req.method()
            ),
        );
        r.headers_mut().insert(
            hyper::header::ALLOW,
            HeaderValue::from_static(route.method()),
        );
        return Ok(r);
    }
    let shared = &admin.shared;
    let query = req.uri().query().map(str::to_owned);
    let query = query.as_deref();
    let r = match route {
        Route::Healthz => json_reply(200, &json!({"status": "ok"})),
        Route::Readyz => readyz(shared),
        Route::Metrics => metrics(shared),
        Route::Scopes => scopes::scopes(shared),
        Route::Queue => scopes::queue(shared),
        Route::Tasks => tasks::list(shared),
        Route::CancelTask(name) => tasks::cancel(shared, name),
        Route::Escalations => escalations::list(shared, query),
        Route::Escalation(id) => escalations::show(shared, id),
        Route::Resolve(id) => escalations::resolve(shared, id, req.into_body()).await,
        Route::AuditVerify => audit::verify(shared, query),
        Route::ReloadPlugin(provider) => plugins::reload(shared, provider).await,
    };
    Ok(r)
}

/// The answer to an address past its wrong tokens for the minute.
pub(crate) fn too_many_failed_tokens(wait_ms: u64) -> Response<Body> {
    let secs = wait_ms.div_ceil(1000);
    let mut r = error_reply(
        429,
        format!(
            "too many wrong tokens from this address this minute: wait {secs} s \
             (serve.failed_tokens_per_minute)"
        ),
    );
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(hyper::header::RETRY_AFTER, v);
    }
    r
}

fn readyz(shared: &Shared) -> Response<Body> {
    if !shared.ready.load(Ordering::Acquire) {
        json_reply(
            503,
            &json!({"status": "recovering",
                    "detail": "carrying on the writes the previous run left unfinished"}),
        )
    } else if let Some(why) = shared.sluice.writes().refused_because() {
        json_reply(503, &json!({"status": "writes_refused", "detail": why}))
    } else {
        json_reply(200, &json!({"status": "ready"}))
    }
}

fn metrics(shared: &Shared) -> Response<Body> {
    match &shared.metrics {
        Some(handle) => {
            let mut r = Response::new(full(handle.render()));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            r
        }
        None => error_reply(404, "no metrics recorder is installed in this process"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_route_is_parsed_and_nothing_else() {
        assert_eq!(Route::of("/scopes"), Some(Route::Scopes));
        assert_eq!(
            Route::of("/tasks/a%20b/cancel"),
            Some(Route::CancelTask("a%20b"))
        );
        assert_eq!(Route::of("/escalations/7"), Some(Route::Escalation("7")));
        assert_eq!(
            Route::of("/escalations/7/resolve"),
            Some(Route::Resolve("7"))
        );
        assert_eq!(Route::of("/audit/verify"), Some(Route::AuditVerify));
        assert_eq!(
            Route::of("/plugins/acme/reload"),
            Some(Route::ReloadPlugin("acme"))
        );
        for path in [
            "/",
            "/scopes/",
            "/tasks/x",
            "/audit",
            "scopes",
            "/escalations/7/x",
            "/plugins/acme",
        ] {
            assert_eq!(Route::of(path), None, "{path}");
        }
        for listed in ROUTES {
            let (method, path) = listed.split_once(' ').unwrap();
            let path = path
                .replace("{name}", "t")
                .replace("{id}", "1")
                .replace("{provider}", "p");
            let route = Route::of(&path).unwrap_or_else(|| panic!("{listed}"));
            assert_eq!(route.method(), method, "{listed}");
        }
    }
}
