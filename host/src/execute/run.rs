//! One call's run, as a value: [`CallRun`] owns the call's prepared plan, its tally and its
//! charge, and runs the steps the design names — admit (the queue), send, read (one plugin
//! reading per attempt, in `reading`), decide and act on it (`after`) — until the call is
//! done, stopped, or streaming. The executor makes the call ready ([`Prepared::checked`])
//! and hands it over; what the run does, it does through the executor's parts.
//!
//! A caller may drop a call at any await: an agent that hangs up on `sluice serve` (its
//! connection closes, and the request's future with it), an embedder that drops the
//! `execute` future or cancels its task. Nothing more runs for the call then, so whatever it
//! would have settled at its end is settled when its run is dropped. What an abandoned call
//! leaves is judged by evidence, like any other:
//!
//! - **its paths' breakers learn nothing.** No answer came back (or none was read), so no
//!   failure is counted on the credential's path, nor on its tenant's: a caller's hang-up is
//!   not evidence about the provider. A breaker probe the call took (it was the one call let
//!   through a half-open path) goes back, so the next call probes at once rather than every
//!   tenant of the credential waiting out another open time for an answer that will never
//!   be read.
//! - **its charge against its tenant's budgets follows what was sent.** Nothing sent (it was
//!   dropped in the queue, or before its first send): the charge is given back. An attempt
//!   sent (it may have reached the provider, which may bill it): the usage an answer
//!   reported, when one did, else the estimate stands — as for any call sent whose usage is
//!   unknown ([`crate::budget`]). A stream under way is the caller's [`super::Stream`], which
//!   settles itself when dropped: what its plugin counted of it.
//!
//! The rest is given back by the parts that hold it: a place in the queue or an admission
//! permit (its quota keeps the estimate of an attempt that may have been sent), a place among
//! the scope's delayed retries, a lease of the shared store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{Instrument, Span};

use super::prepare::Prepared;
use super::stream::Stream;
use super::tally::Tally;
use super::{Call, Executor, NextAction, Observer, Outcome, Reason};
use super::{charge, pool, recent, trace};
use crate::admission::{Acquire, Permit, Refused, Rejection, Usage};
use crate::budget::Reservation;
use crate::contract::{Request, WireOutcome as Wire};
use crate::guard::GuardedPolicy;
use crate::headers::encode_fields;
use crate::offload;
use crate::retry::Open;
use crate::transport::Fault;

/// One call between its checks and its end: what it was given, its plan, what it has done,
/// and its charge.
pub(super) struct CallRun<'a> {
    /// The executor whose parts it runs through.
    pub(super) ex: &'a Executor,
    pub(super) call: &'a Call,
    /// Read once: every attempt of the call plans and reads on this version.
    pub(super) policy: Arc<GuardedPolicy>,
    /// The call's span.
    span: &'a Span,
    /// When the call began.
    pub(super) started: Instant,
    /// Whether a successful answer is handed over as a stream.
    pub(super) stream: bool,
    /// It ended and settled its paths and its charge itself: nothing is given back when it
    /// is dropped.
    settled: bool,
    pub(super) p: Prepared,
    pub(super) t: Tally,
    /// The call's charge against its tenant's budgets, once made.
    reservation: Option<Box<Reservation>>,
}

/// How a call's run ended: done, or its answer handed over as a stream.
pub(super) enum Run {
    Done(Outcome),
    Stream(Box<Stream>),
}

impl Run {
    /// What its span and metrics record of it ([`trace::ended`]): its outcome's label, its
    /// attempts, its last status.
    pub(super) fn summary(&self) -> (&'static str, u32, Option<u16>) {
        match self {
            Self::Stream(s) => ("streaming", s.attempts, Some(s.status)),
            Self::Done(
                o @ Outcome::Succeeded {
                    response, attempts, ..
                },
            ) => (trace::outcome_label(o), *attempts, Some(response.status)),
            Self::Done(o @ Outcome::Ended(t)) => {
                (trace::outcome_label(o), t.attempts, t.last_status)
            }
        }
    }
}

// ARGUMENTS_ONCE: `attempts`, `attempt` and `admit` are futures a call waiting in the queue
// holds, one inside the other. Written as `async fn`, each would keep its arguments twice (as
// passed, and moved into its body); a function returning an `async move` block keeps them
// once (`benches/call_memory.rs`).

impl<'a> CallRun<'a> {
    /// Runs `call` on `ex`: the checks before it queues ([`Prepared::checked`]), its budget's
    /// charge, then one attempt after another. Futures one after the other, so a call
    /// waiting in the queue keeps no room for the checks' state (`benches/call_memory.rs`).
    pub(super) async fn run(
        ex: &'a Executor,
        call: &'a Call,
        observer: &mut dyn Observer,
        stream: bool,
        span: &'a Span,
    ) -> Run {
        let started = ex.clock.now();
        let (policy, p) = match Prepared::checked(ex, call, span, started).await {
            Ok(ready) => ready,
            Err(end) => return Run::Done(end),
        };
        // From here the call holds what its caller may leave behind: see the module's text.
        let mut run = CallRun {
            ex,
            call,
            policy,
            span,
            started,
            stream,
            settled: false,
            p,
            t: Tally::default(),
            reservation: None,
        };
        // A spent budget refuses before the call takes a place in the queue.
        // Boxed: a reservation is large, and held inline it would grow every waiting call,
        // with budgets or without (`benches/call_memory.rs`).
        let budgets = ex.budgets.as_ref();
        match run.p.reserve(budgets, &*ex.clock, &call.provider).await {
            Ok(r) => run.reservation = r.map(Box::new),
            Err(end) => {
                // Refused before its send: a probe it took goes back.
                ex.breakers.release(&run.p.paths);
                run.settled = true;
                return Run::Done(end);
            }
        }
        run.attempts(observer).await
    }

    /// One attempt after another, each in its own span, until the call is done, stopped or
    /// streaming; then its budget's charge settled.
    #[allow(
        clippy::manual_async_fn,
        reason = "each argument kept once: see `ARGUMENTS_ONCE`"
    )]
    fn attempts(&mut self, observer: &mut dyn Observer) -> impl Future<Output = Run> {
        async move {
            loop {
                // The model read in a block of its own: a call waiting in the queue keeps no
                // copy of it (`benches/call_memory.rs`).
                let attempt = {
                    let model = self.p.req.digest.string("model");
                    let n = self.t.attempts + 1;
                    trace::attempt_span(self.span, self.call, n, model.as_deref())
                };
                let sent_before = self.t.attempts;
                let step = self.attempt(observer);
                if let Some(run) = step.instrument(attempt).await {
                    // It ends here: its paths and its charge are settled below, not left.
                    self.settled = true;
                    if let Some(billed) = &self.p.billed {
                        trace::usage(self.span, &billed.0);
                    }
                    let reservation = self.reservation.take();
                    return match run {
                        Run::Done(outcome) => {
                            if let Outcome::Ended(end) = &outcome
                                && end.attempts == sent_before
                            {
                                // Passed the breakers, then refused before its send (in the
                                // queue: a bound, a deadline, a cancel; or unrecorded): a probe
                                // it took goes back.
                                self.ex.breakers.release(&self.p.paths);
                            }
                            let billed = self.p.billed.as_deref();
                            Run::Done(match reservation {
                                Some(r) => Box::pin(charge::settle(r, outcome, billed)).await,
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

    /// One attempt: admitted, sent, read, decided. `None`: go on to the next one.
    #[allow(
        clippy::manual_async_fn,
        reason = "each argument kept once: see `ARGUMENTS_ONCE`"
    )]
    fn attempt(&mut self, observer: &mut dyn Observer) -> impl Future<Output = Option<Run>> {
        async move {
            let permit = match self.admit().await {
                Ok(permit) => permit,
                Err(end) => return Some(Run::Done(end)),
            };
            // Boxed: the send and the read are only made once admitted, so a call that waits
            // in the queue does not hold their state inline (`benches/call_memory.rs`).
            Box::pin(self.send(observer, permit)).await
        }
    }

    /// One admitted attempt: sent, read, decided. `None`: go on to the next one.
    async fn send(&mut self, observer: &mut dyn Observer, permit: Permit) -> Option<Run> {
        let (ex, call) = (self.ex, self.call);
        // Asked for at each send, not held while the call waits.
        let credential = self.p.credential(call);
        let credentials = ex.credentials.send_headers(&call.provider, credential);
        let base = ex.base_urls.get(&call.provider).map(String::as_str);
        if let Some(url) = pool::endpoint_url(&ex.endpoints, base, call, credential) {
            self.p.req.url = url;
        } else if call.pool.is_some() {
            self.p.req.url = ex.url_of(call);
        }
        self.p.req.now_ms = ex.clock.wall_ms();
        trace_headers(&mut self.p.req, trace::outbound_headers());
        if let Err(why) = observer.before_send(self.t.attempts + 1) {
            let end = std::mem::take(&mut self.t)
                .end(Reason::NotRecorded(why), NextAction::RetryLater(None));
            return Some(Run::Done(end));
        }
        self.t.attempts += 1;
        // The call's deadline bounds the attempt in flight as well as the wait: past it, the
        // attempt is dropped (its connection closed) and read as one that got no answer
        // after it was sent — a read ends, a write is settled by asking the provider.
        let left = self.time_left();
        let sending = ex.transport.start(
            &self.p.req,
            &credentials,
            self.stream,
            self.p.generation_timeout,
        );
        let started = within(left, sending)
            .await
            .inspect_err(|_| self.t.cut_by_caller = true)
            .and_then(|r| r);
        let status = started.as_ref().ok().map(|s| s.status);
        trace::answered(&ex.metrics, call, status);
        if status == Some(429) {
            ex.recent.answered_429(recent::Answered429 {
                at_ms: ex.clock.wall_ms(),
                path: self.p.paths.shared.clone(),
                tenant: self.p.tenant.clone(),
                attempt: self.t.attempts,
            });
        }
        let (wire, permit) = match started {
            Ok(s) if self.stream && (200..300).contains(&s.status) => {
                match self.open_stream(s, permit, observer).await {
                    Ok(opened) => {
                        ex.breakers.success(&self.p.paths);
                        return Some(Run::Stream(Box::new(opened)));
                    }
                    // The stream broke before its first chunk: an attempt that got no
                    // answer, read as any other.
                    Err(broken) => broken,
                }
            }
            Ok(s) => {
                match within(self.time_left(), s.collect())
                    .await
                    .inspect_err(|_| self.t.cut_by_caller = true)
                    .and_then(|r| r)
                {
                    Ok(r) => (Wire::Response(r), permit),
                    Err(fault) => (failed(fault, &mut self.t), permit),
                }
            }
            Err(fault) => (failed(fault, &mut self.t), permit),
        };
        let (c, mut plan) = self.read(&wire, permit, observer);
        if self.stream && matches!(plan.next, crate::retry::Next::Done) {
            // Only a 2xx answer is handed over as a stream (above): a plugin that reads
            // another as a success is wrong, and the call ends with the answer as it came.
            tracing::warn!(
                provider = %call.provider,
                status = ?self.t.last_status,
                "the plugin read an answer that is not a 2xx as a success of a streamed call; \
                 the call ends with it"
            );
            plan.next = crate::retry::Next::Stop(crate::retry::Stop::NeverRetry);
        }
        let end = self.after((c, plan), wire, observer).await;
        end.map(Run::Done)
    }

    /// What is left of the call's deadline; `None`: it has none.
    pub(super) fn time_left(&self) -> Option<Duration> {
        let elapsed = self.ex.clock.now().saturating_duration_since(self.started);
        self.p.time_left(elapsed)
    }

    /// Waits for the call's next attempt to be admitted, after the checks that come before
    /// any queueing: cancellation, and the task's attempt budget.
    #[allow(
        clippy::manual_async_fn,
        reason = "each argument kept once: see `ARGUMENTS_ONCE`"
    )]
    fn admit(&mut self) -> impl Future<Output = Result<Permit, Outcome>> {
        async move {
            let (ex, call) = (self.ex, self.call);
            // Checked before every attempt, so a retry that was asleep when its task was
            // cancelled wakes to nothing.
            if call.task.is_some_and(|task| ex.is_cancelled(task)) {
                let t = std::mem::take(&mut self.t);
                return Err(t.end(Reason::Cancelled, NextAction::FixRequest));
            }
            // Counted before queueing, so a task out of budget takes no queue place.
            if !ex.tasks.count_attempt(call.task) {
                let max_attempts = ex.retry.task_max_attempts;
                return Err(std::mem::take(&mut self.t).end(
                    Reason::TaskBudgetExhausted { max_attempts },
                    NextAction::RetryLater(None),
                ));
            }
            // Queued again only when the pool's member it was queued on is refused by its
            // breaker by the time its turn comes.
            let permit = loop {
                let left = self.time_left();
                let p = &self.p;
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
                if let Some(pool) = p.choosing(call) {
                    acquire = self.avoiding(pool, acquire);
                }
                let queued_at = ex.clock.now();
                // Submitted here and the ticket awaited, rather than `Admission::acquire`, whose
                // future would hold the request while the call waits; a refusal boxed, so the wait
                // keeps no room for one; the ticket awaited where it lies, not moved into a second
                // place of its size in the future.
                let mut submitted = ex.admission.submit(acquire).map_err(Box::new);
                let admitted = match &mut submitted {
                    Ok(ticket) => ticket.await,
                    Err(refused) => Err(Refused::clone(refused)),
                };
                drop(submitted);
                let admitted = match admitted {
                    // Its task was cancelled while it waited past the queue (at the shared store's
                    // gate): sent it is not, and its charge is given back.
                    Ok(permit) if call.task.is_some_and(|task| ex.is_cancelled(task)) => {
                        permit.complete(Some(Usage::default()));
                        Err(Refused::Cancelled)
                    }
                    admitted => admitted,
                };
                let waited = ex.clock.now().saturating_duration_since(queued_at);
                self.t.queued += waited;
                if admitted.is_ok() {
                    let (tenant, queued) = (&self.p.tenant, self.t.queued);
                    trace::admitted(&ex.metrics, call, self.span, tenant, waited, queued);
                    ex.recent.waited(recent::Waited {
                        at_ms: ex.clock.wall_ms(),
                        tenant: tenant.clone(),
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
                    std::mem::take(&mut self.t).end(reason, next)
                })?;
                let (Some(pool), Some(member)) = (call.pool.as_deref(), permit.member().cloned())
                else {
                    break permit;
                };
                // The member's breaker, now that the attempt goes with it: a read's retry's was
                // not checked before its wait (`after`), the first attempt's tenant path was.
                let Err(open) = self.went_with(pool, &member, self.t.attempts == 0) else {
                    break permit;
                };
                permit.complete(Some(Usage::default()));
                // It opened while the call waited: the call queues again for another member, if
                // one was not already passed over for being refused.
                let again = (self.p.pooled.as_mut()).is_some_and(|x| x.choose_again(&member));
                if !again {
                    return Err(self.t.breaker_open(open));
                }
            };
            Ok(permit)
        }
    }

    /// `acquire` sent to a member of `pool`, told to avoid the members the attempt about to
    /// queue avoids: those whose breaker on the call's path refuses now, and those its
    /// attempts failed on. The call keeps the list, so that a member refused by its breaker
    /// after the call was queued on it is known to have been better than the others
    /// ([`pool::Pooled::choose_again`]).
    fn avoiding(&mut self, pool: &str, mut acquire: Acquire) -> Acquire {
        let (ex, provider) = (self.ex, &self.call.provider);
        let Some(pooled) = self.p.pooled.as_mut() else {
            return acquire.pool(pool);
        };
        let mut avoid: Vec<Arc<str>> = pooled.failed_on.clone();
        if ex.breakers.any_open() {
            let now = ex.clock.now();
            for m in ex
                .admission
                .pool_members(provider, pool)
                .unwrap_or_default()
            {
                let paths = pooled.paths_with(provider, &m);
                if ex.breakers.refuses(&paths, now) && !avoid.contains(&m) {
                    avoid.push(m);
                }
            }
        }
        for m in &avoid {
            acquire = acquire.avoid(&**m);
        }
        pooled.avoided = avoid;
        acquire.pool(pool)
    }

    /// The attempt about to be sent goes with `member`: its breaker paths become the
    /// member's, and the member's breaker is asked (a first attempt's credential path only:
    /// its tenant's is asked after the plan; a retry's, both). Once it lets the attempt go,
    /// the choice is counted, and a move away from the member the last attempt failed on.
    ///
    /// # Errors
    /// The member's breaker refuses now (it may have opened while the call waited).
    fn went_with(&mut self, pool: &str, member: &Arc<str>, first: bool) -> Result<(), Open> {
        let (ex, provider) = (self.ex, &self.call.provider);
        let p = &mut self.p;
        let Some(pooled) = p.pooled.as_mut() else {
            return Ok(());
        };
        if pooled.member.as_ref() != Some(member) {
            p.paths = pooled.paths_with(provider, member).of_tenant(&p.tenant);
            pooled.member = Some(member.clone());
        }
        let now = ex.clock.now();
        if first {
            ex.breakers.allow_path(&p.paths, now)?;
        } else {
            ex.breakers.allow(&p.paths, now)?;
        }
        metrics::counter!(
            crate::observe::POOL_CHOSEN,
            "provider" => provider.clone(),
            "pool" => pool.to_owned(),
            "member" => member.to_string(),
        )
        .increment(1);
        if let Some(from) = pooled.failed_on.last()
            && from != member
        {
            metrics::counter!(
                crate::observe::POOL_FAILOVERS,
                "provider" => provider.clone(),
                "pool" => pool.to_owned(),
                "from" => from.to_string(),
            )
            .increment(1);
        }
        Ok(())
    }
}

impl Drop for CallRun<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        tracing::debug!(
            tenant = %self.p.tenant,
            attempts = self.t.attempts,
            "the caller left before the call ended: its probes and its unsent charge go back"
        );
        self.ex.breakers.release(&self.p.paths);
        let Some(r) = self.reservation.take() else {
            return;
        };
        let remote = r.waits_on_network();
        if self.t.attempts == 0 {
            offload::detached(remote, move || (*r).release());
        } else if let Some(&(billed, cache)) = self.p.billed.as_deref() {
            offload::detached(remote, move || (*r).settle(Some(billed), cache));
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
