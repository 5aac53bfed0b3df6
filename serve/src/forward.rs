//! One agent request, through the whole host: `/{provider}/{path}` is authenticated, its
//! hints read, and sent to the provider's base URL as a [`Call`] — a read through the retry
//! engine (streamed straight through when it asks for a stream), a write through the
//! journal, so it is sent with one idempotency key and never twice.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Request, Response};
use serde_json::json;
use sluice::admission::Class;
use sluice::admission::shared::ClaimError;
use sluice::contract::ErrorShape;
use sluice::contract::{ReconcilePlan, RequestClass, UncertainWrite};
use sluice::execute::{Call, Outcome, StreamOutcome};
use sluice::journal::JournalError;
use sluice::offload;
use sluice::task::TaskId;
use sluice::writes::{Write, WriteError};

use crate::Shared;
use crate::agents::{Admitted, Agent, Refusal};
use crate::allowance::Hold;
use crate::bodies;
use crate::failed_tokens::Presenter;
use crate::hints::{self, Hints};
use crate::places::{Full, Place};
use crate::reply::{self, Body};
use crate::request_path;
use crate::shape::SluiceError;
use crate::stream_usage::{self, Asked};
use crate::streaming;
use crate::task_names;
use crate::upstream::Upstream;

pub(crate) use crate::metric_names::REQUESTS;

/// Answers one request. Never fails: every refusal is an answer in the provider's shape.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Result<Response<Body>, Infallible> {
    // The provider's name as the configuration holds it: nothing copied from the request.
    let (label, response) = match shared
        .upstreams
        .get_key_value(provider_of(req.uri().path()))
    {
        None => (
            "unknown",
            unknown_provider(&shared, provider_of(req.uri().path())),
        ),
        Some((name, up)) => {
            let response = match forward(&shared, up, req, peer).await {
                Ok(r) => r,
                Err(e) => reply::error(up.shape, &e),
            };
            (name.as_str(), response)
        }
    };
    (shared.requests)
        .get([label, response.status().as_str()])
        .increment(1);
    Ok(response)
}

/// The first segment of `path`: the provider's name.
fn provider_of(path: &str) -> &str {
    let rest = path.strip_prefix('/').unwrap_or(path);
    rest.split('/').next().unwrap_or("")
}

fn unknown_provider(shared: &Shared, provider: &str) -> Response<Body> {
    let known: Vec<&str> = shared.upstreams.keys().map(String::as_str).collect();
    let named = sluice::printable::printable_cut(provider, 100);
    let message = if provider.is_empty() {
        format!(
            "sluice: name a provider first in the path, /PROVIDER/...; the providers are: {}",
            known.join(", ")
        )
    } else {
        format!(
            "sluice: no provider `{named}` is configured; the providers are: {} (requests go \
             to /PROVIDER/...)",
            known.join(", ")
        )
    };
    reply::error(
        ErrorShape::OpenAi,
        &SluiceError::new(404, "unknown_provider", message)
            .detail(json!({"provider": named, "providers": known})),
    )
}

async fn forward(
    shared: &Arc<Shared>,
    up: &Upstream,
    req: Request<Incoming>,
    peer: IpAddr,
) -> Result<Response<Body>, SluiceError> {
    let (mut parts, body) = req.into_parts();
    let Caller {
        agent,
        tenant,
        hints,
        sdk_retry,
    } = caller(shared, up, &mut parts, peer)?;
    // Before the body is read: a path that would leave the base URL goes no further.
    let path = &parts.uri.path()[up.name.len() + 1..];
    request_path::check(path).map_err(|why| {
        SluiceError::new(
            400,
            "path_not_allowed",
            format!(
                "sluice: the path after /{} holds {}, which could leave the provider's base \
                 URL: name the provider's path as it is",
                up.name, why.0
            ),
        )
    })?;

    // The body arrives whole within its time, and within the memory bodies may hold: its
    // tenant's, and the sidecar's. Its memory is counted until its call ends.
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let (body, body_hold) = bodies::read(&shared.body_bounds(), body, declared, &tenant).await?;

    let (path, url) = provider_url(up, &parts.uri);
    let method = parts.method.as_str();
    let dedupes = || dedupes_by_key(shared, up, method, &url);
    let class = class_of(&agent, up, &hints, method, path, dedupes)?;
    // An OpenAI-style stream that does not ask for its usage is asked for it, so its charge
    // is corrected at its end; what asking adds is taken out of the agent's stream.
    // A long body is read on the blocking pool: this thread serves other agents' connections.
    let completion =
        up.shape == ErrorShape::OpenAi && method == "POST" && stream_usage::is_completion(path);
    let Asked {
        streamed,
        rewritten,
    } = offload::read(&body, move |b| Asked::of(b, completion)).await;
    let streamed = streamed || stream_usage::streams_by_path(path);
    let strip_usage = rewritten.is_some();
    // The body as it arrived, shared and not copied, unless asking for the usage changed it.
    let body = rewritten.map_or(body, bytes::Bytes::from);
    let label = up.credential(agent.credentials.get(&up.name));
    let call = Call::new(up.name.clone(), method, url);
    let call = if up.is_pool(&label) {
        call.pool(label)
    } else {
        call.credential(label)
    };
    let mut call = call.tenant(tenant.clone()).class(class).body(body);
    call.headers = headers_for_provider(&parts.headers);
    if let Some(p) = hints.priority {
        call = call.priority(allowed_priority(&agent, p)?);
    }
    if let Some(d) = hints.deadline {
        call = call.deadline(d);
    }

    let writes = class != RequestClass::Read;
    let action = match (&hints.action, writes) {
        (_, false) => None,
        (Some(a), true) => Some(a.clone()),
        (None, true) => Some(unnamed_action(&parts.headers)?),
    };
    let task = named_task(shared, &agent, &tenant, &hints, action.as_deref()).await?;
    if let Some(t) = &task {
        call = call.task(TaskId::named(&t.name));
        let evicted = shared.tasks.begin(
            &t.name,
            &agent.name,
            &tenant,
            shared.sluice.clock().wall_ms(),
        );
        if let Some(old) = evicted {
            shared.sluice.executor().forget_task(TaskId::named(&old));
        }
    }
    let _ended = task.clone().map(|t| TaskEnd(shared.clone(), t));

    let mut response = if let Some(action) = action {
        let goal = hints
            .goal
            .clone()
            .unwrap_or_else(|| format!("{method} {path} for agent {}", agent.name));
        let write = Write {
            task: task.map(|t| t.name).unwrap_or_default(),
            action,
            goal,
            call,
        };
        write_through_journal(shared, up.shape, write, body_hold).await?
    } else {
        read(
            shared,
            up.shape,
            call,
            streamed.then_some(strip_usage),
            body_hold,
        )
        .await
    };
    if let Some(n) = sdk_retry {
        response
            .headers_mut()
            .insert(hints::SDK_RETRY, HeaderValue::from(n));
    }
    Ok(response)
}

/// Who sends a request, and what it asks of sluice.
struct Caller {
    /// The agent its token names.
    agent: Arc<Agent>,
    /// The tenant its call is billed to: the agent's, or one it may name.
    tenant: String,
    /// Its hints, taken out of its headers.
    hints: Hints,
    /// The SDK's own retry it is, when it is one.
    sdk_retry: Option<u32>,
}

/// The agent a request's token names, seated on its connection, with the request's hints
/// (taken out of its headers) and its tenant.
fn caller(
    shared: &Arc<Shared>,
    up: &Upstream,
    parts: &mut hyper::http::request::Parts,
    peer: IpAddr,
) -> Result<Caller, SluiceError> {
    let Admitted {
        agent,
        stripped_key,
    } = shared
        .agents
        .admit(&mut parts.headers, up.credential_headers())
        .map_err(|r| {
            let token = crate::agents::presented(&parts.headers, up.credential_headers());
            refused(shared, Presenter::of(peer, token), &r)
        })?;
    if stripped_key {
        tracing::debug!(agent = %agent.name, "a provider key sent by the agent was stripped");
    }
    // The connection is seated as its agent's: past the agent's (or its tenant's) places,
    // this request is refused and the connection closed, and no one else is kept out.
    if let Some(place) = parts.extensions.get::<Arc<Place>>() {
        place
            .sit(&agent.name, &agent.tenant)
            .map_err(Full::refusal)?;
    }
    let hints = Hints::take(&mut parts.headers)
        .map_err(|e| SluiceError::new(400, "bad_hint", e.to_string()))?;
    let tenant = match &hints.tenant {
        Some(t) if *t != agent.tenant && !agent.name_tenant => {
            return Err(SluiceError::new(
                403,
                "tenant_not_allowed",
                format!(
                    "sluice: agent `{}` may not name a tenant (its calls are billed to `{}`); \
                     allow it with `serve.agents.{}.name_tenant = true`",
                    agent.name, agent.tenant, agent.name
                ),
            ));
        }
        Some(t) => t.clone(),
        None => agent.tenant.clone(),
    };
    let sdk_retry = shared.sdk_retries.detect(&agent.name, &parts.headers);
    Ok(Caller {
        agent,
        tenant,
        hints,
        sdk_retry,
    })
}

/// The provider's path of a request to `uri` (after `/PROVIDER`; `/` for none), and the
/// provider's URL for it, written once at its length.
fn provider_url<'u>(up: &Upstream, uri: &'u hyper::Uri) -> (&'u str, String) {
    let path = match &uri.path()[up.name.len() + 1..] {
        "" => "/",
        path => path,
    };
    let query = uri.query();
    let mut url =
        String::with_capacity(up.base_url.len() + path.len() + query.map_or(0, |q| q.len() + 1));
    url.push_str(&up.base_url);
    url.push_str(path);
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    (path, url)
}

/// The task a request's call belongs to: the one its hint names, or, for a write
/// (`action`), the one the journal knows the action under, else a task of its own.
async fn named_task(
    shared: &Arc<Shared>,
    agent: &Agent,
    tenant: &str,
    hints: &Hints,
    action: Option<&str>,
) -> Result<Option<task_names::Named>, SluiceError> {
    let Some(action) = action else {
        return Ok(task_names::task_of(
            shared.sluice.journal(),
            &agent.name,
            tenant,
            hints.task.as_deref(),
            None,
        ));
    };
    // Naming a write's task may look its action up in the journal, whose calls block their
    // thread: on the main runtime, as the write itself, never on a thread that serves other
    // agents' connections.
    let (sluice, agent, tenant) = (shared.sluice.clone(), agent.name.clone(), tenant.to_owned());
    let (hint, action) = (hints.task.clone(), action.to_owned());
    shared
        .drain
        .spawn(async move {
            task_names::task_of(
                sluice.journal(),
                &agent,
                &tenant,
                hint.as_deref(),
                Some(&action),
            )
        })
        .await
        .map_err(|_| {
            SluiceError::new(
                503,
                "shutting_down",
                "sluice: the sidecar is stopping; send the write again once it is back",
            )
        })
}

/// A read sent through the host: its answer whole, or its stream passed through when
/// `streamed` (`Some(strip_usage)`: whether what asking for its usage added is taken out).
/// The body's memory stays counted until the answer or the stream ends.
async fn read(
    shared: &Arc<Shared>,
    shape: ErrorShape,
    call: Call,
    streamed: Option<bool>,
    body_hold: Hold,
) -> Response<Body> {
    let Some(strip_usage) = streamed else {
        return match shared.sluice.execute(&call).await {
            Outcome::Succeeded {
                response,
                attempts,
                waited,
            } => reply::provider(response, attempts, waited),
            Outcome::Ended(t) => reply::ended(shape, &t),
        };
    };
    let response = match shared.sluice.execute_stream(&call).await {
        StreamOutcome::Streaming(stream) => streaming::respond(*stream, shape, strip_usage),
        StreamOutcome::Ended(t) => reply::ended(shape, &t),
    };
    // The stream still carries the call: its body is counted until the stream ends.
    drop(call);
    reply::keeping(response, body_hold)
}

/// Marks a task's call ended when the request's work is dropped, however it ends.
struct TaskEnd(Arc<Shared>, task_names::Named);

impl Drop for TaskEnd {
    fn drop(&mut self) {
        let Self(shared, task) = self;
        shared.tasks.end(&task.name);
        // A write's own task ends with it: nothing of it is kept.
        if task.own && shared.tasks.forget_idle(&task.name) {
            shared
                .sluice
                .executor()
                .forget_task(TaskId::named(&task.name));
        }
    }
}

/// The agent's headers as they go to the provider: no hop-by-hop header, no credential,
/// no hint, no `accept-encoding` (the plugin reads the answer).
fn headers_for_provider(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(n, _)| reply::forwarded(n.as_str()))
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

/// The action name of a write that names none: the agent's own `Idempotency-Key`, so its
/// resubmits are the same action; else a fresh name (journaled and sent once, but a
/// resubmit is a new action).
fn unnamed_action(headers: &HeaderMap) -> Result<String, SluiceError> {
    if let Some(key) = headers.get("idempotency-key") {
        let key = key.to_str().unwrap_or("").trim();
        if key.is_empty() || key.len() > 200 {
            return Err(SluiceError::new(
                400,
                "bad_idempotency_key",
                "sluice: the Idempotency-Key header must be 1 to 200 visible characters",
            ));
        }
        return Ok(format!("key:{key}"));
    }
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).map_err(|e| {
        SluiceError::new(
            500,
            "no_randomness",
            format!("sluice: the system's random source failed: {e}"),
        )
    })?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{}{hex}", task_names::FRESH_ACTION))
}

/// Writes `write` through the journal, in a task of its own: an agent that hangs up does
/// not cut a write short between its send and its record. The sidecar's shutdown waits for
/// it (up to its deadline; past it, the write is cut, and the journal holds it for the next
/// start).
async fn write_through_journal(
    shared: &Arc<Shared>,
    shape: ErrorShape,
    write: Write,
    body_hold: Hold,
) -> Result<Response<Body>, SluiceError> {
    let sluice = shared.sluice.clone();
    // Named as the agent knows it, never by the runtime's own task id.
    let named = format!(
        "action {:?} of task {:?}",
        sluice::printable::printable(&write.action),
        sluice::printable::printable(&write.task)
    );
    let done = shared
        .drain
        .spawn(async move {
            // Its body's memory is counted until the write ends, whether or not the agent
            // waits for it.
            let _body = body_hold;
            sluice.write(&write).await
        })
        .await
        .map_err(|_| {
            SluiceError::new(
                503,
                "write_interrupted",
                format!(
                    "sluice: the sidecar stopped before the write of {named} ended; the journal \
                     holds it and the next start carries it on: send it again with the same \
                     x-sluice-action to learn its outcome"
                ),
            )
        })?;
    match done {
        Ok(outcome) => Ok(reply::write(shape, outcome)),
        // The journal could not be written: a host failure, not the agent's. What the
        // journal holds of the action is settled as always; the same action sent again
        // learns its outcome, and is never done twice.
        Err(WriteError::Journal(
            e @ (JournalError::Sqlite { .. }
            | JournalError::Postgres { .. }
            | JournalError::LeaseLost { .. }
            | JournalError::Io { .. }
            | JournalError::Corrupt { .. }),
        )) => Err(SluiceError::new(
            503,
            "journal_unavailable",
            format!(
                "sluice: the journal could not be written ({}); send the write again with the \
                 same x-sluice-action once the admin API's /readyz answers 200, to learn its \
                 outcome",
                sluice::printable::printable(&e.to_string())
            ),
        )),
        // Another host of the group owns it (a journal in PostgreSQL): as a claim in the
        // store says, until that host is gone and its writes are taken over.
        Err(WriteError::Journal(e @ JournalError::OwnedElsewhere { .. })) => {
            Err(SluiceError::of(409, "action_owned_elsewhere", &e))
        }
        // The journal was restored, replaced or made again while the sidecar ran: nothing
        // more is recorded or sent until it is started again, beside the right journal.
        Err(WriteError::Journal(e @ JournalError::MovedUnder { .. })) => {
            Err(SluiceError::of(503, "journal_changed", &e))
        }
        Err(WriteError::Journal(e)) => Err(SluiceError::of(409, "write_refused", &e)),
        Err(WriteError::Claim(e)) => Err(claim_refused(&e)),
        Err(e) => Err(SluiceError::new(
            500,
            "write_not_recorded",
            format!(
                "sluice: {}; nothing more was sent",
                sluice::printable::printable(&e.to_string())
            ),
        )),
    }
}

/// What the agent is told of a write this sidecar did not claim: nothing went from here, and
/// each variant its own code (exhaustive, so a new refusal cannot fall to a 500).
fn claim_refused(e: &ClaimError) -> SluiceError {
    let (status, kind) = match e {
        ClaimError::Elsewhere { .. } => (409, "action_owned_elsewhere"),
        ClaimError::HostIdInUse { .. } => (503, "host_id_in_use"),
        ClaimError::StoreLostState { .. } => (503, "shared_store_lost_state"),
        ClaimError::LostLocally { .. } => (409, "action_record_lost"),
        ClaimError::NotInitialized { .. } => (503, "shared_store_not_initialized"),
        ClaimError::MayVanish { .. } => (503, "shared_store_may_lose_claims"),
        ClaimError::Unreachable { .. } => (503, "shared_store_unreachable"),
    };
    SluiceError::of(status, kind, e)
}

/// The class of a request: the route's (the host's reads, the operator's read routes), or
/// the agent's `x-sluice-class` hint. A hint that loosens a write is refused unless the
/// agent's table allows class hints (`class_hints`): a write is never made safer to repeat by
/// the caller's word alone. `read` would send it without a key, a journal row, or any care
/// not to do it twice; `idempotent-write` would resend it after an unknown outcome, which is
/// safe only where the provider suppresses a repeat by its idempotency key — so that hint is
/// taken where the provider's plugin says it does (`dedupes`: its `reconcile` of the write is
/// a resend with the same key), as Stripe's does.
fn class_of(
    agent: &Agent,
    up: &Upstream,
    hints: &Hints,
    method: &str,
    path: &str,
    dedupes: impl FnOnce() -> bool,
) -> Result<RequestClass, SluiceError> {
    let routed = up.class_of(method, path);
    let Some(hint) = hints.class else {
        return Ok(routed);
    };
    // How freely a class lets a request be sent again: a hint may tighten the route's class,
    // and loosen it only as said above.
    let freedom = |c: RequestClass| match c {
        RequestClass::Read => 2,
        RequestClass::IdempotentWrite => 1,
        RequestClass::UncertainWrite => 0,
    };
    if freedom(hint) <= freedom(routed)
        || agent.class_hints
        || (hint == RequestClass::IdempotentWrite && dedupes())
    {
        return Ok(hint);
    }
    // Only `read` and `idempotent-write` can loosen a route's class.
    let (named, why) = match hint {
        RequestClass::IdempotentWrite => (
            "idempotent-write",
            format!(
                "the {} plugin does not say the provider suppresses a repeat of this write by its \
             idempotency key, so a resend after an unknown outcome could do it twice (nothing \
             was sent). Leave the hint out (the write is sent once, and checked rather than \
             resent)",
                up.name
            ),
        ),
        _ => (
            "read",
            format!(
                "agent {:?} may not make a write a read (nothing was sent). Name an action for it \
             with `x-sluice-action`, or leave the hint out; an operator may list the route in \
             [serve.providers.{}] read_routes",
                sluice::printable::printable(&agent.name),
                up.name
            ),
        ),
    };
    Err(SluiceError::new(
        400,
        "class_hint_not_allowed",
        format!(
            "sluice: `x-sluice-class: {named}` on {method} {path}, which is a write: {why}, or \
             an operator may allow the agent's hints with `serve.agents.{}.class_hints = true`",
            sluice::printable::printable(&agent.name)
        ),
    ))
}

/// Whether `up`'s plugin says its provider suppresses a repeat of a `method` write to `url`
/// by its idempotency key (its `reconcile` answers a resend with the same key). A provider
/// without a plugin, or one quarantined, does not.
fn dedupes_by_key(shared: &Shared, up: &Upstream, method: &str, url: &str) -> bool {
    let Some(policy) = shared.sluice.executor().policy(&up.name) else {
        return false;
    };
    let write = UncertainWrite {
        method: method.to_owned(),
        url: url.to_owned(),
        idempotency_key: Some("sluice-class-hint".to_owned()),
        client_reference: None,
        operation_id: None,
        now_ms: shared.sluice.clock().wall_ms(),
    };
    matches!(policy.reconcile(&write).value, ReconcilePlan::ResendSameKey)
}

/// The class a request of `agent` asking for `asked` is queued in: `asked` when the agent
/// may use it, else the nearest it may (less urgent first) when the configuration lowers,
/// else a refusal naming the hint and what the agent may use.
fn allowed_priority(agent: &Agent, asked: Class) -> Result<Class, SluiceError> {
    if agent.priorities.contains(asked) || agent.lower_priority {
        return Ok(agent.priorities.allowed(asked));
    }
    let may: Vec<&str> = agent.priorities.classes().map(Class::name).collect();
    Err(SluiceError::new(
        400,
        "priority_not_allowed",
        format!(
            "sluice: agent {:?} may not ask for `x-sluice-priority: {}`; it may use {}: send \
             one of those, or none (the plugin's advice)",
            sluice::printable::printable(&agent.name),
            asked.name(),
            may.join(", ")
        ),
    ))
}

/// The answer to a request `refusal` let in no further. A wrong or missing token is counted
/// against its address (`crate::failed_tokens`); past the address's limit the answer is a
/// 429 that says to slow down. An agent with a right token is never refused for its
/// address's failures: agents share an address (loopback, a NAT), and one misconfigured
/// agent must not lock the others out.
fn refused(shared: &Shared, who: Presenter, refusal: &Refusal) -> SluiceError {
    if matches!(refusal, Refusal::ProviderKey(_)) {
        return SluiceError::new(403, "unauthorized", refusal.message());
    }
    let now = shared.sluice.clock().wall_ms();
    let door = crate::failed_tokens::Door::Agents;
    shared.failed_tokens.failed(who, "agents", door, now);
    match shared.failed_tokens.check(who, door, now) {
        Ok(()) => SluiceError::new(401, "unauthorized", refusal.message()),
        Err(wait_ms) => SluiceError::new(
            429,
            "too_many_failed_tokens",
            format!(
                "{} — and this token, or this address, was wrong too many times this minute: \
                 wait {} s (serve.failed_tokens_per_minute)",
                refusal.message(),
                wait_ms.div_ceil(1000)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_is_the_first_path_segment() {
        assert_eq!(provider_of("/openai/v1/chat/completions"), "openai");
        assert_eq!(provider_of("/anthropic"), "anthropic");
        assert_eq!(provider_of("/"), "");
    }

    #[test]
    fn only_a_top_level_stream_true_asks_for_a_stream() {
        let wants = |body: &[u8]| Asked::of(body, true).streamed;
        assert!(wants(br#"{"model":"m","stream":true}"#));
        assert!(!wants(br#"{"model":"m","stream":false}"#));
        assert!(!wants(br#"{"model":"m","options":{"stream":true}}"#));
        assert!(!wants(b"not json \"stream\": true"));
    }
}
