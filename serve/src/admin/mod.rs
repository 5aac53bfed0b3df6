//! The admin API, on a listener and a token of its own (`[serve.admin]`): what operators
//! and monitoring ask the sidecar. Every route but `/healthz` needs
//! `authorization: Bearer <admin token>`.
//!
//! - `GET /healthz`: 200 while the process serves;
//! - `GET /readyz`: 200 once the writes a previous run left were carried on, else 503;
//! - `GET /metrics`: the Prometheus text format.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use crate::Shared;
use crate::agents::digest;
use crate::reply::{Body, full};

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
    if !admin.authorized(&req) {
        let mut r = error_reply(
            401,
            "the admin API needs `authorization: Bearer <admin token>`",
        );
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer"),
        );
        return Ok(r);
    }
    let shared = &admin.shared;
    let r = match (req.method().clone(), path.as_str()) {
        (Method::GET, "/readyz") => {
            if shared.ready.load(Ordering::Acquire) {
                json_reply(200, &json!({"status": "ready"}))
            } else {
                json_reply(
                    503,
                    &json!({"status": "recovering",
                            "detail": "carrying on the writes the previous run left unfinished"}),
                )
            }
        }
        (Method::GET, "/metrics") => match &shared.metrics {
            Some(handle) => {
                let mut r = Response::new(full(handle.render()));
                r.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4"),
                );
                r
            }
            None => error_reply(404, "no metrics recorder is installed in this process"),
        },
        _ => error_reply(404, format!("no admin route {} {path}", req.method())),
    };
    Ok(r)
}
