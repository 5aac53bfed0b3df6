//! The operator's console: one page on the admin listener, under `/console`, for the people
//! who decide escalations and watch quotas — without the CLI and without SQLite.
//!
//! - `GET /console`: the live page (or the sign-in form): scopes with their limits, paced
//!   rates, what the provider reports remaining, the next allowed time and why calls wait;
//!   utilization per scope and waits (p50/p99) per tenant drawn as plots; the queue per
//!   tenant and class, calls in flight, recent 429s, holds and breakers; the open
//!   escalations; the audit log's verification and its key's fingerprint;
//! - `POST /console/sign-in` (`token`), `POST /console/sign-out`;
//! - `GET /console/data`, `GET /console/audit`: the JSON the page polls ([`data`]);
//! - `GET /console/escalations/{id}`: a case and its options; `POST
//!   /console/escalations/{id}/resolve` (`option`, `note`, `operation_id`) decides it; `POST
//!   /console/escalations/{id}/body` shows the action's body, recorded first
//!   ([`escalation`]).
//!
//! Why a page on the admin listener rather than a separate tool: it acts on the host the
//! agents use, through the same library calls as the admin API and the CLI, so a decision
//! made here is recorded, carried out and audited exactly as theirs. Sign-in, sessions and
//! the checks against forged forms are in [`session`]; the page never holds a credential
//! (the token typed in is compared by digest and forgotten; the session cookie is
//! `HttpOnly`), and no provider key or agent token is ever in an answer.

mod data;
mod escalation;
mod form;
pub(crate) mod history;
mod html;
mod session;

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, Response};

use crate::Shared;
use crate::admin::error_reply;
use crate::reply::Body;
use form::Form;
use history::History;
use session::{Session, Sessions, set_cookie};

/// The console's state: who may sign in, who is, and what the plots draw.
#[derive(Debug)]
pub(crate) struct Console {
    sessions: Sessions,
    history: Arc<History>,
    /// The origin browsers reach the console at, when configured.
    public_origin: Option<String>,
}

impl Console {
    /// A console for the admin token and `operators` (name, token digest), plotting
    /// `history`.
    pub(crate) fn new(
        admin: [u8; 32],
        operators: Vec<(String, [u8; 32])>,
        history: Arc<History>,
        public_origin: Option<String>,
    ) -> Self {
        Self {
            sessions: Sessions::new(admin, operators),
            history,
            public_origin,
        }
    }
}

/// Whether `path` is the console's.
pub(crate) fn owns(path: &str) -> bool {
    path == "/console" || path.starts_with("/console/")
}

/// Answers one request under `/console`.
pub(crate) async fn handle(
    shared: &Shared,
    console: &Console,
    req: Request<Incoming>,
) -> Response<Body> {
    let now = shared.sluice.clock().wall_ms();
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let session = console.sessions.of(req.headers(), now);
    let method = req.method().clone();
    match (&method, &segments[..], session) {
        (&Method::GET, ["console"], None) => html::sign_in(200, None),
        (&Method::GET, ["console"], Some(s)) => main_page(&s),
        (&Method::POST, ["console", "sign-in"], _) => sign_in(shared, console, req).await,
        (&Method::GET, ["console", "data"], Some(_)) => data::live(shared, &console.history),
        (&Method::GET, ["console", "audit"], Some(_)) => crate::admin::audit::verify(shared, None),
        (&Method::GET, ["console", "data" | "audit"], None) => error_reply(
            401,
            "sign in to the console first (POST /console/sign-in); the admin API's routes \
             take the admin token instead",
        ),
        (&Method::GET, ["console", "escalations", id], Some(s)) => match escalation::id_of(id) {
            Ok(id) => escalation::show(shared, &s, id),
            Err(m) => html::problem(400, Some(&s), &m),
        },
        (&Method::POST, ["console", ..], Some(s)) => post(shared, console, s, req).await,
        (&Method::POST, ["console", ..], None) => html::sign_in(
            401,
            Some("you are signed out (or the session expired): sign in, then try again"),
        ),
        (&Method::GET, ["console", ..], None) => html::see_other("/console", None),
        _ => html::problem(404, None, "no such console page: start at /console"),
    }
}

/// A POST of a signed-in session: from the console's own origin and with its CSRF token,
/// or refused before anything is done.
async fn post(
    shared: &Shared,
    console: &Console,
    session: Session,
    req: Request<Incoming>,
) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let (headers, form) = match Form::read(req).await {
        Ok(f) => f,
        Err(m) => return html::problem(400, Some(&session), &m),
    };
    if let Err(forged) = session::same_origin(&headers, console.public_origin.as_deref())
        .and_then(|()| session::check_csrf(&session, form.get("csrf")))
    {
        tracing::warn!("the console refused a forged or stale form: {forged}");
        return html::problem(403, Some(&session), &forged.to_string());
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments[..] {
        ["console", "sign-out"] => {
            console.sessions.sign_out(&headers);
            html::see_other(
                "/console",
                Some(set_cookie("", 0, console.public_origin.as_deref())),
            )
        }
        ["console", "escalations", id, what @ ("resolve" | "body")] => {
            let id = match escalation::id_of(id) {
                Ok(id) => id,
                Err(m) => return html::problem(400, Some(&session), &m),
            };
            if what == "resolve" {
                escalation::resolve(shared, &session, id, &form).await
            } else {
                escalation::body(shared, &session, id)
            }
        }
        _ => html::problem(404, Some(&session), "no such console form"),
    }
}

/// `POST /console/sign-in`: a session for the operator whose token was typed in.
async fn sign_in(shared: &Shared, console: &Console, req: Request<Incoming>) -> Response<Body> {
    let peer = crate::listener::Peer::of(&req);
    let now = shared.sluice.clock().wall_ms();
    let (headers, form) = match Form::read(req).await {
        Ok(f) => f,
        Err(m) => return html::sign_in(400, Some(&m)),
    };
    // Refused before the token is compared, when it (or its address) was wrong too often.
    let who = crate::failed_tokens::Presenter::of(peer, form.get("token").unwrap_or(""));
    if let Err(wait_ms) =
        shared
            .failed_tokens
            .check(who, crate::failed_tokens::Door::Operators, now)
    {
        return crate::admin::too_many_failed_tokens(wait_ms);
    }
    // A page elsewhere must not sign this browser in under a token of its choosing.
    if let Err(forged) = session::same_origin(&headers, console.public_origin.as_deref()) {
        return html::sign_in(403, Some(&forged.to_string()));
    }
    let token = form.get("token").unwrap_or("");
    match console.sessions.sign_in(token, now) {
        Some((id, s)) => {
            tracing::info!(operator = %sluice::printable::printable(&s.operator), "an operator signed in to the console");
            html::see_other(
                "/console",
                Some(set_cookie(
                    &id,
                    session::SESSION_MS,
                    console.public_origin.as_deref(),
                )),
            )
        }
        None => {
            shared
                .failed_tokens
                .failed(who, "console", crate::failed_tokens::Door::Operators, now);
            html::sign_in(
                401,
                Some(
                    "that token is not an operator's ([serve.admin.operators]) nor the admin \
                     token",
                ),
            )
        }
    }
}

/// The live page: its sections, filled and redrawn by the script from `/console/data`.
fn main_page(session: &Session) -> Response<Body> {
    html::page(200, "Console", Some(session), MAIN, true)
}

/// The live page's sections; the script fills them.
const MAIN: &str = r#"
<p class="status">Live: <span id="updated">loading…</span></p>
<section id="escalations-section"><h2>Escalations</h2><div id="escalations"></div></section>
<section><h2>Scopes</h2><div id="scopes"></div>
<h3>Utilization per scope (last 5 minutes)</h3><div id="utilization-plot" class="plot"></div></section>
<section><h2>Waits per tenant</h2><p class="hint">Admission waits, p50 (solid) and p99 (dashed), over the last 10 s at each point.</p><div id="waits-plot" class="plot"></div></section>
<section><h2>Traffic</h2><p id="totals"></p><div id="queue"></div>
<h3>Holds</h3><div id="holds"></div>
<h3>Pools</h3><div id="pools"></div>
<h3>Recent 429s</h3><div id="recent-429s"></div>
<h3>Breakers</h3><div id="breakers"></div></section>
<section><h2>Audit log</h2><div id="audit"></div></section>
"#;
