//! `execute`: one logical call, from the queue to a typed outcome.
//!
//! Each attempt waits in the admission queue, is sent once by the [`Transport`], is read by
//! the provider's plugin (behind its guard), and reports what the response said about the
//! quota before anything else happens. Then [`decide`] weighs the class's budget: a 429
//! holds the whole scope *before* this call schedules its retry, so every worker of the scope
//! waits; the retry goes back through the queue, so it keeps the scope's pace. Every call
//! ends in an [`Outcome`]: success, or a [`Terminal`] that says whether anything was sent,
//! whether an answer came back, what was spent, and the next safe action.

mod stream;
mod tally;
mod usage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::admission::coalesce::{Coalescer, Joined};
use crate::admission::{
    Acquire, Admission, Class, Hold, Permit, Refused, Rejection, ScopeKey, TaskId, Usage,
};
use crate::clock::Clock;
use crate::guard::GuardedPolicy;
use crate::policy::{
    Classification, Outcome as Wire, Request, RequestClass, Response, ResponsePart,
    TransportFailure, Verdict, encode_fields,
};
use crate::retry::{Breakers, Next, Open, RetryConfig, Spent, Stop, decide, route_template};
use crate::transport::{Fault, Started, Transport};

pub use stream::{PartialStream, Stream, StreamOutcome};
use tally::{Tally, next_action};
use usage::corrected;

/// One logical call.
#[derive(Debug, Clone)]
pub struct Call {
    /// The provider, as configured (`openai`); its plugin reads the answers.
    pub provider: String,
    /// The credential's label: the scope every worker of it shares.
    pub credential: String,
    /// Narrower scopes the call also charges (a model, an endpoint family).
    pub scopes: Vec<String>,
    /// The tenant it is billed to; `None`: the tenant the request names (its plugin's plan),
    /// else `default`.
    pub tenant: Option<String>,
    /// The task it belongs to, for cancellation.
    pub task: Option<TaskId>,
    /// Its queue class; `None`: the plugin's advice.
    pub priority: Option<Class>,
    /// How it may be retried.
    pub class: RequestClass,
    /// The HTTP method.
    pub method: String,
    /// The absolute URL.
    pub url: String,
    /// Headers plugins may see.
    pub headers: Vec<(String, String)>,
    /// Credential headers: sent, never shown to a plugin.
    pub secrets: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The longest the whole call may take, waits included; `None`: the deadline the
    /// request carries (its plugin's plan), if any.
    pub deadline: Option<Duration>,
    /// Share one attempt with identical reads of the same credential in flight (opt in only
    /// for reads whose answer may be shared: never a balance or an approval state). Ignored
    /// for writes.
    pub coalesce: bool,
}

/// What to do after a call that ended without success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextAction {
    /// Fix the request; sending it again as it is will fail the same way.
    FixRequest,
    /// Renew the credential or its permissions.
    Reauthenticate,
    /// Try later, after this long if known.
    RetryLater(Option<Duration>),
    /// Find out whether the write happened before anything else is sent for it.
    Reconcile,
    /// Wait for the quota's reset, or raise the quota.
    WaitForQuota(Option<Duration>),
    /// Resolve the conflict (a lock, a version, a duplicate) first.
    ResolveConflict,
}

/// Why a call ended without success.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// The retry policy stopped it.
    Stopped(Stop),
    /// The admission queue refused it (backpressure, an oversized request).
    Refused(String),
    /// Its deadline passed while it waited, or cannot be met: the time budget is spent.
    OutOfTime(String),
    /// Its task was cancelled.
    Cancelled,
    /// The path's circuit breaker is open.
    BreakerOpen(Open),
    /// Too many calls of the scope are already waiting to retry.
    ScopeRetriesFull {
        /// The scope's bound.
        max_delayed_requests: u32,
    },
    /// The task has sent all the attempts its budget allows.
    TaskBudgetExhausted {
        /// The task's budget.
        max_attempts: u32,
    },
    /// No plugin is configured for the provider.
    UnknownProvider(String),
    /// The observer refused to let an attempt go out (the journal could not record it).
    NotRecorded(String),
}

/// A call that ended without success, and everything known about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    /// Why it ended.
    pub reason: Reason,
    /// Whether any attempt may have reached the provider.
    pub sent: bool,
    /// Whether any answer came back.
    pub response_received: bool,
    /// Attempts sent.
    pub attempts: u32,
    /// Time waited between attempts.
    pub waited: Duration,
    /// The last status, if any answer came back.
    pub last_status: Option<u16>,
    /// The provider's last error code.
    pub error_code: Option<String>,
    /// The last answer, if any came back (a status query's 404 is read, not discarded).
    pub last_response: Option<Response>,
    /// What the HTTP client said about the last attempt that got no answer (a refused
    /// certificate, a refused connection, a timeout...).
    pub transport_error: Option<String>,
    /// The next safe action.
    pub next_action: NextAction,
}

/// Sees each attempt of a call: the journal and the audit log hang here.
pub trait Observer: Send {
    /// Just before attempt `attempt` (from 1) is sent. An error stops the call with nothing
    /// sent for this attempt: a write whose `sent` mark cannot be made durable must not go
    /// out.
    ///
    /// # Errors
    /// Why the attempt must not be sent.
    fn before_send(&mut self, attempt: u32) -> Result<(), String>;
    /// After attempt `attempt`: the answer's status (`None`: no answer) and how it was read.
    fn after_attempt(&mut self, attempt: u32, status: Option<u16>, read: &Classification);
    /// A retry of the call is scheduled after `delay`.
    fn retry_scheduled(&mut self, attempt: u32, delay: Duration);
}

/// An observer that sees nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl Observer for Unobserved {
    fn before_send(&mut self, _attempt: u32) -> Result<(), String> {
        Ok(())
    }
    fn after_attempt(&mut self, _attempt: u32, _status: Option<u16>, _read: &Classification) {}
    fn retry_scheduled(&mut self, _attempt: u32, _delay: Duration) {}
}

impl Terminal {
    /// Whether the call's time budget ran out (in the queue or before a retry).
    pub fn out_of_time(&self) -> bool {
        matches!(
            self.reason,
            Reason::OutOfTime(_)
                | Reason::Stopped(Stop::DeadlinePassed { .. } | Stop::WaitBudgetExhausted { .. })
        )
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The provider did what was asked.
    Succeeded {
        /// Its answer.
        response: Response,
        /// Attempts sent.
        attempts: u32,
        /// Time waited between attempts.
        waited: Duration,
    },
    /// The call ended without success.
    Ended(Box<Terminal>),
}

/// Runs calls: admission, transport, plugins and the retry policy together.
#[derive(Debug)]
pub struct Executor {
    admission: Admission,
    policies: HashMap<String, Arc<GuardedPolicy>>,
    transport: Transport,
    retry: RetryConfig,
    breakers: Breakers,
    rng: Mutex<fastrand::Rng>,
    delayed: Mutex<HashMap<(String, String), u32>>,
    /// Attempts sent per task, against `RetryConfig::task_max_attempts`.
    task_attempts: Mutex<HashMap<TaskId, u32>>,
    /// Cancelled tasks: none of their calls sends again.
    cancelled: Mutex<std::collections::HashSet<TaskId>>,
    /// Reads in flight that opted into sharing, by what they ask.
    reads: Coalescer<String, Outcome>,
    clock: Arc<dyn Clock>,
}

/// A call's place among its scope's delayed retries, given back when dropped.
struct Delayed<'a> {
    map: &'a Mutex<HashMap<(String, String), u32>>,
    key: (String, String),
}

impl Drop for Delayed<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = map.get_mut(&self.key) {
            *n = n.saturating_sub(1);
        }
    }
}

/// A call made ready to queue: the request plugins see, and what its plan decided.
struct Prepared {
    req: Request,
    estimate: Usage,
    class: Class,
    tenant: String,
    deadline: Option<Duration>,
    scopes: Vec<String>,
}

/// How a run of the attempt loop ended.
enum Run {
    Done(Outcome),
    Stream(Stream),
}

impl Executor {
    /// An executor. `seed` seeds the jitter (a fixed one in tests).
    pub fn new(
        admission: Admission,
        policies: HashMap<String, Arc<GuardedPolicy>>,
        transport: Transport,
        retry: RetryConfig,
        clock: Arc<dyn Clock>,
        seed: u64,
    ) -> Self {
        let breakers = Breakers::new(
            retry.breaker_threshold,
            Duration::from_millis(retry.breaker_open_ms),
        );
        Self {
            admission,
            policies,
            transport,
            retry,
            breakers,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            delayed: Mutex::default(),
            task_attempts: Mutex::default(),
            cancelled: Mutex::default(),
            reads: Coalescer::new(),
            clock,
        }
    }

    /// The admission handle the executor queues on.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Runs `call` to its outcome.
    pub async fn execute(&self, call: &Call) -> Outcome {
        self.execute_observed(call, &mut Unobserved).await
    }

    /// The policy that reads `provider`'s answers, if one is configured.
    pub fn policy(&self, provider: &str) -> Option<&Arc<GuardedPolicy>> {
        self.policies.get(provider)
    }

    /// Runs `call` to its outcome, telling `observer` about each attempt.
    pub async fn execute_observed(&self, call: &Call, observer: &mut dyn Observer) -> Outcome {
        if call.coalesce && call.class == RequestClass::Read {
            return self.coalesced(call, observer).await;
        }
        match self.run(call, observer, false).await {
            Run::Done(outcome) => outcome,
            Run::Stream(_) => unreachable!("a call run whole never streams"),
        }
    }

    /// Runs `call` and hands its answer back as a stream once the provider begins a
    /// successful answer and its first chunk arrives. Until then it is retried as any call
    /// is; after that, nothing is sent again for it (see [`Stream`]).
    pub async fn execute_stream(&self, call: &Call) -> StreamOutcome {
        match self.run(call, &mut Unobserved, true).await {
            Run::Stream(stream) => StreamOutcome::Streaming(stream),
            Run::Done(Outcome::Ended(terminal)) => StreamOutcome::Ended(terminal),
            Run::Done(Outcome::Succeeded { .. }) => {
                unreachable!("a successful streamed call is a stream")
            }
        }
    }

    /// A read that shares one attempt with identical reads of its credential in flight.
    async fn coalesced(&self, call: &Call, observer: &mut dyn Observer) -> Outcome {
        match self.reads.join(read_key(call)) {
            Joined::Leader(lead) => {
                let outcome = match self.run(call, observer, false).await {
                    Run::Done(outcome) => outcome,
                    Run::Stream(_) => unreachable!("a call run whole never streams"),
                };
                lead.finish(outcome.clone());
                outcome
            }
            Joined::Follower(follow) => match follow.wait().await {
                Ok(outcome) => outcome,
                // The leader gave up (cancelled): this read goes on its own.
                Err(_) => match self.run(call, observer, false).await {
                    Run::Done(outcome) => outcome,
                    Run::Stream(_) => unreachable!("a call run whole never streams"),
                },
            },
        }
    }

    /// The request plugins see, and where it belongs: the call's own settings first, then
    /// its plugin's plan (tenant, deadline, class), and every scope the plan names.
    fn prepare(&self, call: &Call, policy: &GuardedPolicy) -> Option<Prepared> {
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
            req,
        })
    }

    /// The attempt loop: queue, send, read, decide — until done, stopped, or streaming.
    async fn run(&self, call: &Call, observer: &mut dyn Observer, stream: bool) -> Run {
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
        let secrets: Vec<(&str, &str)> = call
            .secrets
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
                            return Run::Stream(opened);
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
                    Reason::OutOfTime(refused.to_string())
                }
                Refused::Rejected(_) => Reason::Refused(refused.to_string()),
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
            decide(
                &c,
                status,
                sent,
                call.class,
                &self.retry.budget(call.class),
                &self.retry.backoff(),
                spent,
                left,
                &mut rng,
            )
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

    /// The hold a spent quota put on `provider`/`credential`'s scope, if one is in force.
    pub fn quota_hold(&self, provider: &str, credential: &str) -> Option<Hold> {
        let key = credential_scope(provider, credential);
        let now = self.admission.now();
        self.admission
            .with_scheduler(|s| s.hold_of(now, &key))
            .filter(|h| h.reason.starts_with(QUOTA_EXHAUSTED))
    }

    /// Lifts the hold on `provider`/`credential`'s scope: a person raised the quota.
    pub fn lift_hold(&self, provider: &str, credential: &str) {
        let key = credential_scope(provider, credential);
        let now = self.admission.now();
        self.admission.with_scheduler(|s| s.lift(now, &key));
    }

    /// Counts one attempt of `task`; `false` when its budget is spent.
    fn count_task_attempt(&self, task: Option<TaskId>) -> bool {
        let (Some(task), max) = (task, self.retry.task_max_attempts) else {
            return true;
        };
        if max == 0 {
            return true;
        }
        let mut map = self
            .task_attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let n = map.entry(task).or_default();
        if *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    /// Cancels `task`: its waiting calls are refused at once, and a retry of it that is
    /// asleep sends nothing when it wakes. Returns how many waiting calls were removed.
    pub fn cancel_task(&self, task: TaskId) -> usize {
        self.cancelled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task);
        self.admission.cancel(task)
    }

    /// Lets a cancelled `task` send again (a person approved its continued access).
    pub fn resume_task(&self, task: TaskId) {
        self.cancelled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&task);
    }

    /// Whether `task` was cancelled.
    pub fn is_cancelled(&self, task: TaskId) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&task)
    }

    /// Forgets what `task` spent: call it when the task ends.
    pub fn forget_task(&self, task: TaskId) {
        self.task_attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&task);
    }

    /// A place among the scope's delayed retries, if one is free.
    fn delay_place<'a>(&'a self, call: &Call) -> Option<Delayed<'a>> {
        let key = (call.provider.clone(), call.credential.clone());
        let mut map = self.delayed.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.entry(key.clone()).or_default();
        if *n >= self.retry.max_delayed_requests {
            return None;
        }
        *n += 1;
        Some(Delayed {
            map: &self.delayed,
            key,
        })
    }

    /// Calls of `provider`/`credential` waiting to retry now.
    pub fn delayed(&self, provider: &str, credential: &str) -> u32 {
        let map = self.delayed.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&(provider.to_owned(), credential.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

/// How the hold of a spent quota's scope begins its reason.
pub const QUOTA_EXHAUSTED: &str = "quota exhausted";

fn credential_scope(provider: &str, credential: &str) -> ScopeKey {
    ScopeKey::Provider {
        provider: provider.into(),
        credential: credential.into(),
        name: None,
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

/// What makes two reads the same read: the credential, and every byte of the request.
fn read_key(call: &Call) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [
        call.provider.as_bytes(),
        call.credential.as_bytes(),
        call.method.as_bytes(),
        call.url.as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    for (n, v) in &call.headers {
        h.update((n.len() as u64).to_le_bytes());
        h.update(n.as_bytes());
        h.update((v.len() as u64).to_le_bytes());
        h.update(v.as_bytes());
    }
    h.update(&call.body);
    crate::hex::to_hex(&h.finalize())
}
