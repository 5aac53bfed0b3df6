//! The attempt loop, in the steps the design names: prepare (the plugin's plan), admit (the
//! queue), send, read (one plugin reading per attempt), decide — until the call is done,
//! stopped, or streaming.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{Instrument, Span};

use super::breaking::BreakerPaths;
use super::charge;
use super::pool::{self, choosing};
use super::stream::Stream;
use super::tally::Tally;
use super::underway::Underway;
use super::{Call, Executor, NextAction, Observer, Outcome, Reason};
use super::{recent, trace};
use crate::admission::{Acquire, Class, Permit, Refused, Rejection, Usage};
use crate::contract::{BodyDigest, Request, WireOutcome as Wire};
use crate::guard::GuardedPolicy;
use crate::headers::encode_fields;
use crate::offload;
use crate::retry::{Stop, route_template};
use crate::transport::Fault;

/// A call made ready to queue: the request plugins see, and what its plan decided.
pub(super) struct Prepared {
    pub(super) req: Request,
    pub(super) estimate: Usage,
    pub(super) class: Class,
    pub(super) tenant: String,
    pub(super) deadline: Option<Duration>,
    pub(super) scopes: Vec<String>,
    /// The usage the last answer reported as billed, and the input tokens of it read from
    /// the provider's cache: what the call's budget charge is corrected to. Boxed: only an
    /// answer sets it, and a waiting call carries a pointer's worth of it.
    pub(super) billed: Option<Box<(Usage, crate::budget::CacheUse)>>,
    /// How long a whole answer may take to begin, when the model's settings say.
    pub(super) generation_timeout: Option<Duration>,
    /// Its breaker paths, with the credential the attempt goes with.
    pub(super) paths: BreakerPaths,
    /// A pool's call: the member its attempt goes with and what choosing the next needs;
    /// boxed, so that a call of one credential carries a pointer's worth of it while it
    /// waits.
    pub(super) pooled: Option<Box<pool::Pooled>>,
}

impl Prepared {
    /// The credential the attempt goes with: the call's, or the member of its pool the
    /// attempt was admitted on.
    pub(super) fn credential<'a>(&'a self, call: &'a Call) -> &'a str {
        match &self.pooled {
            Some(p) => p.member.as_deref().unwrap_or(&call.credential),
            None => &call.credential,
        }
    }
}

/// What every attempt of a call shares.
struct Attempting<'a> {
    call: &'a Call,
    policy: &'a Arc<GuardedPolicy>,
    /// When the call began.
    started: Instant,
    /// Whether a successful answer is handed over as a stream.
    stream: bool,
    /// The call's span.
    span: &'a Span,
}

// ARGUMENTS_ONCE: `attempt_loop`, `attempt` and `admit` are futures a call waiting in the
// queue holds, one inside the other. Written as `async fn`, each would keep its arguments
// twice (as passed, and moved into its body); a function returning an `async move` block
// keeps them once (`benches/call_memory.rs`).

/// How a run of the attempt loop ended.
pub(super) enum Run {
    Done(Outcome),
    Stream(Box<Stream>),
}

impl Executor {
    /// The request plugins see, with the provider's per-model settings applied (its
    /// default output limit); the body's model, looked up once for the settings and the
    /// breaker's path; and how long its answer may take to begin.
    ///
    /// A long body is read on the blocking pool ([`offload::read`]): the thread this call is
    /// awaited on may be serving other tenants' calls.
    async fn request(&self, call: &Call) -> Option<(Request, Option<String>, Option<Duration>)> {
        let headers = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let headers = encode_fields(headers).ok()?;
        let digest = offload::read(&call.body, BodyDigest::of).await;
        let mut req = Request::digested(
            call.method.clone(),
            self.url_of(call),
            call.class,
            headers,
            call.body.clone(),
            digest,
            self.clock.wall_ms(),
        );
        let model = req.digest.string("model");
        let generation = self
            .generations
            .get(&call.provider)
            .map(|g| g.of(model.as_deref()))
            .unwrap_or_default();
        if generation.default_max_output.is_some() {
            req.digest
                .set_default_max_output(generation.default_max_output);
        }
        Some((req, model, generation.timeout))
    }

    /// Where `req` belongs: the call's own settings first, then its plugin's plan (tenant,
    /// deadline, class), and every scope the plan names.
    pub(super) fn prepare(
        &self,
        call: &Call,
        (req, model, generation_timeout): (Request, Option<String>, Option<Duration>),
        paths: BreakerPaths,
        policy: &GuardedPolicy,
    ) -> Prepared {
        let now_ms = req.now_ms;
        let plan = policy.plan_request(&req).value;
        let deadline = call.deadline.or_else(|| {
            let ms = plan.deadline_ms?.saturating_sub(now_ms);
            Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
        });
        let mut scopes = call.scopes.clone();
        for s in plan.scopes {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        Prepared {
            estimate: Usage::from_estimate(&plan.cost),
            class: call.priority.unwrap_or_else(|| plan.class.into()),
            tenant: call
                .tenant
                .clone()
                .or(plan.tenant)
                .unwrap_or_else(|| "default".to_owned()),
            deadline,
            scopes,
            billed: None,
            generation_timeout,
            paths,
            pooled: call
                .pool
                .is_some()
                .then(|| Box::new(pool::Pooled::new(call, model))),
            req,
        }
    }

    /// The attempt loop: queue, send, read, decide — until done, stopped, or streaming.
    /// Everything it does is recorded in the call's span (see [`crate::observe`]).
    pub(super) async fn run(&self, call: &Call, observer: &mut dyn Observer, stream: bool) -> Run {
        let span = trace::call_span(call);
        let run = self
            .attempts(call, observer, stream, &span)
            .instrument(span.clone())
            .await;
        trace::ended(&self.metrics, &span, call, &run);
        run
    }

    /// The checks before a call queues ([`Self::before_queue`]), its budget's charge, then
    /// one attempt after another ([`Self::attempt_loop`]). Futures one after the other, so a
    /// call waiting in the queue keeps no room for the checks' state
    /// (`benches/call_memory.rs`).
    async fn attempts(
        &self,
        call: &Call,
        observer: &mut dyn Observer,
        stream: bool,
        span: &Span,
    ) -> Run {
        let started = self.clock.now();
        let (policy, p) = match self.before_queue(call, span, started).await {
            Ok(ready) => ready,
            Err(end) => return Run::Done(end),
        };
        // From here the call holds what its caller may leave behind: see `Underway`.
        let mut run = Underway::new(self, p);
        // A spent budget refuses before the call takes a place in the queue.
        // Boxed: a reservation is large, and held inline it would grow every waiting call,
        // with budgets or without (`benches/call_memory.rs`).
        match self.charge(&call.provider, &run.p).await {
            Ok(r) => run.reservation = r.map(Box::new),
            Err(end) => {
                // Refused before its send: a probe it took goes back.
                self.breakers.release(&run.p.paths);
                run.ended();
                return Run::Done(end);
            }
        }
        let cx = Attempting {
            call,
            policy: &policy,
            started,
            stream,
            span,
        };
        self.attempt_loop(&cx, observer, &mut run).await
    }

    /// One attempt after another, each in its own span, until the call is done, stopped or
    /// streaming; then its budget's charge settled.
    #[allow(
        clippy::manual_async_fn,
        reason = "each argument kept once: see `ARGUMENTS_ONCE`"
    )]
    fn attempt_loop(
        &self,
        cx: &Attempting<'_>,
        observer: &mut dyn Observer,
        underway: &mut Underway<'_>,
    ) -> impl Future<Output = Run> {
        async move {
            let span = cx.span;
            loop {
                let (p, t) = (&mut underway.p, &mut underway.t);
                // The model read in a block of its own: a call waiting in the queue keeps no
                // copy of it (`benches/call_memory.rs`).
                let attempt = {
                    let model = p.req.digest.string("model");
                    trace::attempt_span(span, cx.call, t.attempts + 1, model.as_deref())
                };
                let sent_before = t.attempts;
                let step = self.attempt(cx, p, t, observer);
                if let Some(run) = step.instrument(attempt).await {
                    // It ends here: its paths and its charge are settled below, not left.
                    underway.ended();
                    if let Some(billed) = &underway.p.billed {
                        trace::usage(span, &billed.0);
                    }
                    let (p, reservation) = (&underway.p, underway.reservation.take());
                    return match run {
                        Run::Done(outcome) => {
                            if let Outcome::Ended(end) = &outcome
                                && end.attempts == sent_before
                            {
                                // Passed the breakers, then refused before its send (in the
                                // queue: a bound, a deadline, a cancel; or unrecorded): a probe
                                // it took goes back.
                                self.breakers.release(&p.paths);
                            }
                            Run::Done(match reservation {
                                Some(r) => {
                                    Box::pin(charge::settle(r, outcome, p.billed.as_deref())).await
                                }
                                None => outcome,
                            })
                        }
                        Run::Stream(mut stream) => {
                            stream.charged_to(reservation.map(|r| *r));
                            Run::Stream(stream)
                        }
                    };
                }
            }
        }
    }

    /// The checks before a call queues: its provider and credential, its path's breakers and
    /// its plugin's plan; `Err`: the call ends here, nothing sent. A future of its own, so
    /// what the checks hold is gone before the call waits in the queue
    /// (`benches/call_memory.rs`).
    async fn before_queue(
        &self,
        call: &Call,
        span: &Span,
        started: Instant,
    ) -> Result<(Arc<GuardedPolicy>, Prepared), Outcome> {
        // Read once: every attempt of this call plans and reads on this version.
        let Some(policy) = self.policy(&call.provider) else {
            return Err(Tally::default().end(
                Reason::UnknownProvider(call.provider.clone()),
                NextAction::FixRequest,
            ));
        };
        let known = match &call.pool {
            Some(pool) => self.admission.has_pool(&call.provider, pool),
            None => self.credentials.knows(&call.provider, &call.credential) != Some(false),
        };
        if !known {
            // Sent without its key, the request would only be refused: nothing goes out.
            return Err(Tally::default().end(
                Reason::UnknownCredential {
                    provider: call.provider.clone(),
                    label: call.sent_with().to_owned(),
                },
                NextAction::FixRequest,
            ));
        }
        let Some((req, model, generation_timeout)) = self.request(call).await else {
            return Err(
                Tally::default().end(Reason::Stopped(Stop::NeverRetry), NextAction::FixRequest)
            );
        };
        if let Some(key) = req.digest.duplicate_key() {
            // sluice prices and routes by one of the two values; the provider may act on the
            // other. Nothing is sent, and no breaker or budget hears of it.
            return Err(Tally::default().end(
                Reason::Malformed(format!(
                    "the body gives `{}` more than once: sluice and the provider could read \
                     different values (a model, a maximum); send each key once",
                    crate::printable::printable(&key)
                )),
                NextAction::FixRequest,
            ));
        }
        // The breakers are one credential's and one model's: another credential's revoked
        // key never stops this one's calls, and another tenant's malformed requests never
        // stop this tenant's (`breaking`). Both are checked before the plugin plans the
        // call when the call names its tenant (the sidecar's always do); else the
        // credential's before and the tenant's once the plan has named the tenant. A pool's
        // call checks its member's once admitted on it.
        let mut paths = BreakerPaths::before_plan(
            &call.provider,
            call.sent_with(),
            &route_template(&call.method, &call.url),
            model.as_deref(),
        );
        let before_plan = match &call.tenant {
            Some(tenant) => {
                paths = paths.of_tenant(tenant);
                self.breakers.allow(&paths, started)
            }
            None => self.breakers.allow_path(&paths, started),
        };
        if let Err(open) = before_plan {
            return Err(breaker_open(&mut Tally::default(), open));
        }
        trace::model(span, model.as_deref());
        let mut p = self.prepare(call, (req, model, generation_timeout), paths, &policy);
        span.record("tenant", p.tenant.as_str());
        if call.tenant.is_none() {
            p.paths.name_tenant(&p.tenant);
            if let Err(open) = self.breakers.allow_tenant(&p.paths, started) {
                return Err(breaker_open(&mut Tally::default(), open));
            }
        }
        Ok((policy, p))
    }

    /// One attempt: admitted, sent, read, decided. `None`: go on to the next one.
    #[allow(
        clippy::manual_async_fn,
        reason = "each argument kept once: see `ARGUMENTS_ONCE`"
    )]
    fn attempt(
        &self,
        cx: &Attempting<'_>,
        p: &mut Prepared,
        t: &mut Tally,
        observer: &mut dyn Observer,
    ) -> impl Future<Output = Option<Run>> {
        async move {
            let permit = match self.admit(cx, p, t).await {
                Ok(permit) => permit,
                Err(end) => return Some(Run::Done(end)),
            };
            // Boxed: the send and the read are only made once admitted, so a call that waits
            // in the queue does not hold their state inline (`benches/call_memory.rs`).
            Box::pin(self.send(cx, p, t, observer, permit)).await
        }
    }

    /// One admitted attempt: sent, read, decided. `None`: go on to the next one.
    async fn send(
        &self,
        cx: &Attempting<'_>,
        p: &mut Prepared,
        t: &mut Tally,
        observer: &mut dyn Observer,
        permit: Permit,
    ) -> Option<Run> {
        let (call, policy) = (cx.call, cx.policy);
        // Asked for at each send, not held while the call waits.
        let credential = p.credential(call);
        let credentials = self.credentials.send_headers(&call.provider, credential);
        if let Some(url) = self.endpoint_url(call, credential) {
            p.req.url = url;
        } else if call.pool.is_some() {
            p.req.url = self.url_of(call);
        }
        p.req.now_ms = self.clock.wall_ms();
        trace_headers(&mut p.req, trace::outbound_headers());
        if let Err(why) = observer.before_send(t.attempts + 1) {
            let end = std::mem::take(t).end(Reason::NotRecorded(why), NextAction::RetryLater(None));
            return Some(Run::Done(end));
        }
        t.attempts += 1;
        // The call's deadline bounds the attempt in flight as well as the wait: past it, the
        // attempt is dropped (its connection closed) and read as one that got no answer
        // after it was sent — a read ends, a write is settled by asking the provider.
        let started = within(
            self.time_left(p, cx.started),
            (self.transport).start(&p.req, &credentials, cx.stream, p.generation_timeout),
        )
        .await
        .inspect_err(|_| t.cut_by_caller = true)
        .and_then(|r| r);
        let status = started.as_ref().ok().map(|s| s.status);
        trace::answered(&self.metrics, call, status);
        if status == Some(429) {
            self.recent.answered_429(recent::Answered429 {
                at_ms: self.clock.wall_ms(),
                path: p.paths.shared.clone(),
                tenant: p.tenant.clone(),
                attempt: t.attempts,
            });
        }
        let (wire, permit) = match started {
            Ok(s) if cx.stream && (200..300).contains(&s.status) => {
                match self.open_stream(s, permit, policy, p, t, observer).await {
                    Ok(opened) => {
                        self.breakers.success(&p.paths);
                        return Some(Run::Stream(Box::new(opened)));
                    }
                    // The stream broke before its first chunk: an attempt that got no
                    // answer, read as any other.
                    Err(broken) => broken,
                }
            }
            Ok(s) => {
                match within(self.time_left(p, cx.started), s.collect())
                    .await
                    .inspect_err(|_| t.cut_by_caller = true)
                    .and_then(|r| r)
                {
                    Ok(r) => (Wire::Response(r), permit),
                    Err(fault) => (failed(fault, t), permit),
                }
            }
            Err(fault) => (failed(fault, t), permit),
        };
        let (c, mut plan) =
            self.read_attempt(call, p, policy, &wire, permit, cx.started, t, observer);
        if cx.stream && matches!(plan.next, crate::retry::Next::Done) {
            // Only a 2xx answer is handed over as a stream (above): a plugin that reads
            // another as a success is wrong, and the call ends with the answer as it came.
            tracing::warn!(
                provider = %call.provider,
                status = ?t.last_status,
                "the plugin read an answer that is not a 2xx as a success of a streamed call; \
                 the call ends with it"
            );
            plan.next = crate::retry::Next::Stop(Stop::NeverRetry);
        }
        let end = self.after(call, p, (c, plan), wire, t, observer).await;
        end.map(Run::Done)
    }

    /// What is left of the call's deadline (it began at `started`); `None`: it has none.
    fn time_left(&self, p: &Prepared, started: Instant) -> Option<Duration> {
        let elapsed = self.clock.now().saturating_duration_since(started);
        p.deadline.map(|d| d.saturating_sub(elapsed))
    }

    /// Waits for the call's next attempt to be admitted, after the checks that come before
    /// any queueing: cancellation, and the task's attempt budget.
    #[allow(
        clippy::manual_async_fn,
        reason = "each argument kept once: see `ARGUMENTS_ONCE`"
    )]
    fn admit(
        &self,
        cx: &Attempting<'_>,
        p: &mut Prepared,
        t: &mut Tally,
    ) -> impl Future<Output = Result<Permit, Outcome>> {
        async move {
            let (call, started) = (cx.call, cx.started);
            // Checked before every attempt, so a retry that was asleep when its task was
            // cancelled wakes to nothing.
            if call.task.is_some_and(|task| self.is_cancelled(task)) {
                return Err(std::mem::take(t).end(Reason::Cancelled, NextAction::FixRequest));
            }
            // Counted before queueing, so a task out of budget takes no queue place.
            if !self.count_task_attempt(call.task) {
                let max_attempts = self.retry.task_max_attempts;
                return Err(std::mem::take(t).end(
                    Reason::TaskBudgetExhausted { max_attempts },
                    NextAction::RetryLater(None),
                ));
            }
            // Queued again only when the pool's member it was queued on is refused by its
            // breaker by the time its turn comes.
            let permit = loop {
                let left = self.time_left(p, started);
                let mut acquire = Acquire::new(&call.provider, p.credential(call))
                    .tenant(&p.tenant)
                    .class(p.class)
                    .usage(p.estimate);
                for s in &p.scopes {
                    acquire = acquire.scope(s);
                }
                if let Some(left) = left {
                    acquire = acquire.deadline(left);
                }
                if let Some(task) = call.task {
                    acquire = acquire.task(task);
                }
                // A read of a pool goes, at each attempt, with the member that would admit it
                // soonest; a write, with the member its first attempt was admitted on (one given
                // before it was recorded, when the write engine sends it).
                if let Some(pool) = choosing(call, p) {
                    acquire = self.avoiding(call, pool, p, acquire);
                }
                let queued_at = self.clock.now();
                // Submitted here and the ticket awaited, rather than `Admission::acquire`, whose
                // future would hold the request while the call waits; a refusal boxed, so the wait
                // keeps no room for one; the ticket awaited where it lies, not moved into a second
                // place of its size in the future.
                let mut submitted = self.admission.submit(acquire).map_err(Box::new);
                let admitted = match &mut submitted {
                    Ok(ticket) => ticket.await,
                    Err(refused) => Err(Refused::clone(refused)),
                };
                drop(submitted);
                let admitted = match admitted {
                    // Its task was cancelled while it waited past the queue (at the shared store's
                    // gate): sent it is not, and its charge is given back.
                    Ok(permit) if call.task.is_some_and(|task| self.is_cancelled(task)) => {
                        permit.complete(Some(Usage::default()));
                        Err(Refused::Cancelled)
                    }
                    admitted => admitted,
                };
                let waited = self.clock.now().saturating_duration_since(queued_at);
                t.queued += waited;
                if admitted.is_ok() {
                    trace::admitted(&self.metrics, call, cx.span, &p.tenant, waited, t.queued);
                    self.recent.waited(recent::Waited {
                        at_ms: self.clock.wall_ms(),
                        tenant: p.tenant.clone(),
                        waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                    });
                }
                let permit = admitted.map_err(|refused| {
                    trace::left_queue(call, &refused);
                    let reason = match &refused {
                        Refused::Cancelled => Reason::Cancelled,
                        Refused::Expired(_)
                        | Refused::Rejected(Rejection::DeadlineUnreachable { .. }) => {
                            Reason::OutOfTime(refused.clone())
                        }
                        Refused::Rejected(rejection) => Reason::Refused(rejection.clone()),
                    };
                    let next = match reason {
                        Reason::Cancelled => NextAction::FixRequest,
                        _ => NextAction::RetryLater(None),
                    };
                    std::mem::take(t).end(reason, next)
                })?;
                let (Some(pool), Some(member)) = (call.pool.as_deref(), permit.member().cloned())
                else {
                    break permit;
                };
                // The member's breaker, now that the attempt goes with it: a read's retry's was
                // not checked before its wait (`after`), the first attempt's tenant path was.
                let Err(open) = self.went_with(call, pool, p, &member, t.attempts == 0) else {
                    break permit;
                };
                permit.complete(Some(Usage::default()));
                // It opened while the call waited: the call queues again for another member, if
                // one was not already passed over for being refused.
                if !pool::choose_again(p, &member) {
                    return Err(breaker_open(t, open));
                }
            };
            Ok(permit)
        }
    }
}

/// Puts `traced` (the attempt's `traceparent` and `tracestate`) in `req`'s headers in place
/// of the caller's; nothing when it is empty (no trace context installed).
fn trace_headers(req: &mut Request, traced: Vec<(String, String)>) {
    if traced.is_empty() {
        return;
    }
    let kept = crate::headers::field_pairs(&req.headers)
        .filter(|(n, _)| !crate::observe::propagate::is_trace_header(n));
    let traced = traced.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    if let Ok(block) = encode_fields(kept.chain(traced)) {
        req.headers = block;
    }
}

/// An attempt that got no answer; what the client said is kept for the call's end.
pub(super) fn failed(fault: Fault, t: &mut Tally) -> Wire {
    t.transport_error(fault.detail);
    Wire::Transport(fault.failure)
}

/// `work`, given at most `left` (none: as long as it takes); past it, a [`Fault`] of an
/// attempt sent and unanswered, saying the call's deadline passed.
async fn within<T>(left: Option<Duration>, work: impl Future<Output = T>) -> Result<T, Fault> {
    let Some(left) = left else {
        return Ok(work.await);
    };
    tokio::time::timeout(left, work).await.map_err(|_| Fault {
        failure: crate::contract::TransportFailure::TimeoutAfterSend,
        detail: format!(
            "the call's deadline passed with the attempt in flight: it was dropped unanswered \
             ({} ms were left)",
            left.as_millis()
        ),
    })
}

/// The end of a call a breaker refused.
fn breaker_open(t: &mut Tally, open: crate::retry::Open) -> Outcome {
    let after = open.retry_in;
    std::mem::take(t).end(
        Reason::BreakerOpen(open),
        NextAction::RetryLater(Some(after)),
    )
}

#[cfg(test)]
mod tests {
    use super::trace_headers;
    use crate::contract::{Request, RequestClass};

    fn request(headers: &str) -> Request {
        Request::new(
            "POST",
            "http://p/v1",
            RequestClass::Read,
            headers.to_owned(),
            "",
            0,
        )
    }

    #[test]
    fn an_attempts_trace_headers_replace_the_callers_and_nothing_else() {
        let mut req =
            request("content-type:application/json\nTraceparent:00-aa-bb-01\nTracestate:k=v\n");
        trace_headers(
            &mut req,
            vec![("traceparent".to_owned(), "00-aa-cc-01".to_owned())],
        );
        assert_eq!(
            req.headers,
            "content-type:application/json\ntraceparent:00-aa-cc-01\n"
        );
        // No trace context installed: the caller's go on as they came.
        let mut req = request("traceparent:00-aa-bb-01\n");
        trace_headers(&mut req, Vec::new());
        assert_eq!(req.headers, "traceparent:00-aa-bb-01\n");
    }
}
