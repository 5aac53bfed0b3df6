//! The attempt loop, in the steps the design names: prepare (the plugin's plan), admit (the
//! queue), send, read (one plugin reading per attempt), decide — until the call is done,
//! stopped, or streaming.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::stream::{self, Stream};
use super::tally::{Tally, next_action};
use super::usage::corrected;
use super::{Call, Executor, NextAction, Observer, Outcome, QUOTA_EXHAUSTED, Reason};
use crate::admission::{Acquire, Class, Permit, Refused, Rejection, Usage};
use crate::contract::{
    Classification, Request, Response, ResponsePart, TransportFailure, Verdict, WireOutcome as Wire,
};
use crate::guard::GuardedPolicy;
use crate::headers::encode_fields;
use crate::retry::{AfterAttempt, Backoff, ClassBudget, Next, Spent, Stop, decide, route_template};
use crate::transport::{Fault, Started};

/// A call made ready to queue: the request plugins see, and what its plan decided.
pub(super) struct Prepared {
    req: Request,
    estimate: Usage,
    class: Class,
    tenant: String,
    deadline: Option<Duration>,
    scopes: Vec<String>,
    /// The call's class budget and backoff, read from the configuration once per call.
    budget: ClassBudget,
    backoff: Backoff,
}

/// How a run of the attempt loop ended.
pub(super) enum Run {
    Done(Outcome),
    Stream(Box<Stream>),
}

impl Executor {
    /// The request plugins see, and where it belongs: the call's own settings first, then
    /// its plugin's plan (tenant, deadline, class), and every scope the plan names.
    pub(super) fn prepare(&self, call: &Call, policy: &GuardedPolicy) -> Option<Prepared> {
        let headers = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let headers = encode_fields(headers).ok()?;
        let now_ms = self.clock.wall_ms();
        let req = Request {
            method: call.method.clone(),
            url: call.url.clone(),
            class: call.class,
            headers,
            body: call.body.clone(),
            now_ms,
        };
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
        Some(Prepared {
            estimate: Usage::from_estimate(&plan.cost),
            class: call.priority.unwrap_or_else(|| plan.class.into()),
            tenant: call
                .tenant
                .clone()
                .or(plan.tenant)
                .unwrap_or_else(|| "default".to_owned()),
            deadline,
            scopes,
            budget: self.retry.budget(call.class),
            backoff: self.retry.backoff(),
            req,
        })
    }

    /// The attempt loop: queue, send, read, decide — until done, stopped, or streaming.
    pub(super) async fn run(&self, call: &Call, observer: &mut dyn Observer, stream: bool) -> Run {
        let started = self.clock.now();
        let mut t = Tally::default();
        let Some(policy) = self.policies.get(&call.provider) else {
            return Run::Done(t.end(
                Reason::UnknownProvider(call.provider.clone()),
                NextAction::FixRequest,
            ));
        };
        let route = route_template(&call.method, &call.url);
        // The breaker is one credential's: another credential's revoked key or malformed
        // requests never stop this one's calls.
        let path = format!("{} {} {route}", call.provider, call.credential);
        if let Err(open) = self.breakers.check(&path, started) {
            let after = open.retry_in;
            return Run::Done(t.end(
                Reason::BreakerOpen(open),
                NextAction::RetryLater(Some(after)),
            ));
        }
        let Some(mut p) = self.prepare(call, policy) else {
            return Run::Done(t.end(Reason::Stopped(Stop::NeverRetry), NextAction::FixRequest));
        };
        let credentials = self.credentials.headers(&call.provider, &call.credential);
        let secrets: Vec<(&str, &str)> = credentials
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        loop {
            let permit = match self.admit(call, &p, started, &mut t).await {
                Ok(permit) => permit,
                Err(end) => return Run::Done(end),
            };
            p.req.now_ms = self.clock.wall_ms();
            if let Err(why) = observer.before_send(t.attempts + 1) {
                return Run::Done(t.end(Reason::NotRecorded(why), NextAction::RetryLater(None)));
            }
            t.attempts += 1;
            let wire = match self.transport.start(&p.req, &secrets).await {
                Ok(s) if stream && (200..300).contains(&s.status) => {
                    match self
                        .open_stream(s, permit, policy, &p, &mut t, observer)
                        .await
                    {
                        Ok(opened) => {
                            self.breakers.success(&path);
                            return Run::Stream(Box::new(opened));
                        }
                        // The stream broke before its first chunk: an attempt that got no
                        // answer, read as any other.
                        Err(broken) => broken,
                    }
                }
                Ok(s) => (collect(s, &mut t).await, permit),
                Err(fault) => (failed(fault, &mut t), permit),
            };
            let (wire, permit) = wire;
            let plan =
                self.read_attempt(call, &p, policy, &wire, permit, started, &mut t, observer);
            if let Some(end) = self.after(call, &path, plan, wire, &mut t, observer).await {
                return Run::Done(end);
            }
        }
    }

    /// Waits for the call's next attempt to be admitted, after the checks that come before
    /// any queueing: cancellation, and the task's attempt budget.
    async fn admit(
        &self,
        call: &Call,
        p: &Prepared,
        started: std::time::Instant,
        t: &mut Tally,
    ) -> Result<Permit, Outcome> {
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
        let elapsed = self.clock.now().saturating_duration_since(started);
        let left = p.deadline.map(|d| d.saturating_sub(elapsed));
        let mut acquire = Acquire::new(&call.provider, &call.credential)
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
        self.admission.acquire(acquire).await.map_err(|refused| {
            let reason = match &refused {
                Refused::Cancelled => Reason::Cancelled,
                Refused::Expired(_) | Refused::Rejected(Rejection::DeadlineUnreachable { .. }) => {
                    Reason::OutOfTime(refused.clone())
                }
                Refused::Rejected(rejection) => Reason::Refused(rejection.clone()),
            };
            let next = match reason {
                Reason::Cancelled => NextAction::FixRequest,
                _ => NextAction::RetryLater(None),
            };
            std::mem::take(t).end(reason, next)
        })
    }

    /// A successful answer has begun: waits for its first chunk (within the idle limit), lets
    /// the plugin read its status and headers, and hands it over as a [`Stream`].
    async fn open_stream(
        &self,
        mut body: Started,
        permit: Permit,
        policy: &Arc<GuardedPolicy>,
        p: &Prepared,
        t: &mut Tally,
        observer: &mut dyn Observer,
    ) -> Result<Stream, (Wire, Permit)> {
        let first = match body.chunk().await {
            Ok(first) => first,
            Err(fault) => return Err((failed(fault, t), permit)),
        };
        let head = Response {
            status: body.status,
            headers: body.headers.clone(),
            body: Vec::new(),
        };
        let reading = policy
            .read_response(&p.req, &Wire::Response(head), ResponsePart::StreamStart)
            .value;
        t.sent = true;
        t.response_received = true;
        t.last_status = Some(body.status);
        observer.after_attempt(t.attempts, Some(body.status), &reading.classification);
        permit.observe(&reading.observations);
        Ok(Stream::new(stream::Opened {
            body,
            first,
            permit,
            policy: policy.clone(),
            req: p.req.clone(),
            estimate: p.estimate,
            attempts: t.attempts,
            waited: t.waited,
        }))
    }

    /// Reads one attempt's outcome in one plugin call, lands what it says in the scopes,
    /// corrects the charge with the actual usage, and decides what comes next. A 429 or a
    /// spent quota holds the scope *before* anything else is scheduled.
    #[allow(clippy::too_many_arguments, reason = "the steps of one attempt")]
    fn read_attempt(
        &self,
        call: &Call,
        p: &Prepared,
        policy: &GuardedPolicy,
        wire: &Wire,
        permit: Permit,
        started: std::time::Instant,
        t: &mut Tally,
        observer: &mut dyn Observer,
    ) -> (Classification, crate::retry::Plan) {
        let (status, sent) = match wire {
            Wire::Response(r) => (Some(r.status), true),
            Wire::Transport(f) => (None, may_have_been_sent(*f)),
        };
        t.sent |= sent;
        let reading = policy
            .read_response(&p.req, wire, ResponsePart::Complete)
            .value;
        let c = reading.classification;
        observer.after_attempt(t.attempts, status, &c);
        let mut actual = None;
        if let Wire::Response(r) = wire {
            t.response_received = true;
            t.last_status = Some(r.status);
            permit.observe(&reading.observations);
            actual = corrected(p.estimate, &reading.usage);
        }
        t.error_code.clone_from(&c.error_code);
        let spent = Spent {
            attempts: t.attempts,
            waited: t.waited,
        };
        let elapsed = self.clock.now().saturating_duration_since(started);
        let left = p.deadline.map(|d| d.saturating_sub(elapsed));
        let plan = {
            let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
            let after = AfterAttempt {
                classification: &c,
                status,
                sent,
                class: call.class,
                spent,
                until_deadline: left,
            };
            decide(&after, &p.budget, &p.backoff, &mut rng)
        };
        let hold = match c.verdict {
            // A spent billing or daily quota: nobody on the scope sends until its reset, or
            // for the configured time when the provider does not say.
            Verdict::QuotaExhausted => Some(c.retry_after_ms.map_or(
                Duration::from_millis(self.retry.quota_exhausted_hold_ms),
                Duration::from_millis,
            )),
            _ => plan.hold_scope,
        };
        if let Some(hold) = hold {
            let why = match c.verdict {
                Verdict::QuotaExhausted => QUOTA_EXHAUSTED,
                _ => "rate limited",
            };
            let code = c.error_code.as_deref().unwrap_or("");
            let reason = format!("{why}: {} {code}", status.unwrap_or(429));
            permit.hold_scope(None, hold, reason.trim_end());
        }
        permit.complete(actual);
        (c, plan)
    }

    /// Acts on an attempt's plan: done, stopped, or a retry after its delay. `None`: go on
    /// to the next attempt.
    async fn after(
        &self,
        call: &Call,
        path: &str,
        (c, plan): (Classification, crate::retry::Plan),
        wire: Wire,
        t: &mut Tally,
        observer: &mut dyn Observer,
    ) -> Option<Outcome> {
        let status = match &wire {
            Wire::Response(r) => Some(r.status),
            Wire::Transport(_) => None,
        };
        // A 429 or a spent quota is a scheduling signal about the scope, not a broken
        // path: it holds the scope and never trips the path's breaker.
        let breaks = !matches!(c.verdict, Verdict::RateLimited | Verdict::QuotaExhausted);
        let failure = format!(
            "{} {}",
            status.map_or_else(|| "transport".to_owned(), |s| s.to_string()),
            c.error_code.as_deref().unwrap_or("")
        );
        match plan.next {
            Next::Done => {
                self.breakers.success(path);
                let Wire::Response(response) = wire else {
                    unreachable!("success is a response")
                };
                Some(Outcome::Succeeded {
                    response,
                    attempts: t.attempts,
                    waited: t.waited,
                })
            }
            Next::Stop(stop) => {
                t.keep_answer(wire);
                if breaks {
                    self.breakers.failure(path, &failure, self.clock.now());
                }
                let next = next_action(&stop, c.retry_after_ms, status);
                Some(std::mem::take(t).end(Reason::Stopped(stop), next))
            }
            Next::Retry { delay } => {
                t.keep_answer(wire);
                if breaks {
                    self.breakers.failure(path, &failure, self.clock.now());
                }
                if let Err(open) = self.breakers.check(path, self.clock.now()) {
                    let after = open.retry_in;
                    return Some(std::mem::take(t).end(
                        Reason::BreakerOpen(open),
                        NextAction::RetryLater(Some(after)),
                    ));
                }
                let Some(_place) = self.delay_place(call) else {
                    return Some(std::mem::take(t).end(
                        Reason::ScopeRetriesFull {
                            max_delayed_requests: self.retry.max_delayed_requests,
                        },
                        NextAction::RetryLater(Some(delay)),
                    ));
                };
                observer.retry_scheduled(t.attempts, delay);
                tokio::time::sleep(delay).await;
                t.waited += delay;
                None
            }
        }
    }
}

/// Whether a transport failure may have delivered the request.
fn may_have_been_sent(f: TransportFailure) -> bool {
    matches!(
        f,
        TransportFailure::TimeoutAfterSend | TransportFailure::ResetAfterSend
    )
}

/// An attempt that got no answer; what the client said is kept for the call's end.
fn failed(fault: Fault, t: &mut Tally) -> Wire {
    t.transport_error = Some(fault.detail);
    Wire::Transport(fault.failure)
}

/// Reads an answer whole.
async fn collect(started: Started, t: &mut Tally) -> Wire {
    match started.collect().await {
        Ok(r) => Wire::Response(r),
        Err(fault) => failed(fault, t),
    }
}
