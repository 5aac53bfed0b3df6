//! `execute`: one logical call, from the queue to a typed outcome.
//!
//! Each attempt waits in the admission queue, is sent once by the [`Transport`], is read by
//! the provider's plugin (behind its guard), and reports what the response said about the
//! quota before anything else happens. Then [`decide`] weighs the class's budget: a 429
//! holds the whole scope *before* this call schedules its retry, so every worker of the scope
//! waits; the retry goes back through the queue, so it keeps the scope's pace. Every call
//! ends in an [`Outcome`]: success, or a [`Terminal`] that says whether anything was sent,
//! whether an answer came back, what was spent, and the next safe action.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::admission::{Acquire, Admission, Class, Refused, Rejection, TaskId, Usage};
use crate::clock::Clock;
use crate::guard::GuardedPolicy;
use crate::policy::{
    Classification, Outcome as Wire, Request, RequestClass, Response, ResponsePart,
    TransportFailure, Verdict, encode_fields,
};
use crate::retry::{Breakers, Next, Open, RetryConfig, Spent, Stop, decide, route_template};
use crate::transport::Transport;

/// One logical call.
#[derive(Debug, Clone)]
pub struct Call {
    /// The provider, as configured (`openai`); its plugin reads the answers.
    pub provider: String,
    /// The credential's label: the scope every worker of it shares.
    pub credential: String,
    /// Narrower scopes the call also charges (a model, an endpoint family).
    pub scopes: Vec<String>,
    /// The tenant it is billed to.
    pub tenant: String,
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
    /// The longest the whole call may take, waits included.
    pub deadline: Option<Duration>,
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
        let started = self.clock.now();
        let mut t = Tally::default();
        let Some(policy) = self.policies.get(&call.provider) else {
            return t.end(
                Reason::UnknownProvider(call.provider.clone()),
                NextAction::FixRequest,
            );
        };
        let route = route_template(&call.method, &call.url);
        if let Err(open) = self.breakers.check(&route, started) {
            let after = open.retry_in;
            return t.end(
                Reason::BreakerOpen(open),
                NextAction::RetryLater(Some(after)),
            );
        }
        let headers = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let Ok(headers) = encode_fields(headers) else {
            return t.end(Reason::Stopped(Stop::NeverRetry), NextAction::FixRequest);
        };
        let mut req = Request {
            method: call.method.clone(),
            url: call.url.clone(),
            class: call.class,
            headers,
            body: call.body.clone(),
            now_ms: self.clock.wall_ms(),
        };
        let plan = policy.plan_request(&req).value;
        let usage = Usage::from_estimate(&plan.cost);
        let class = call.priority.unwrap_or_else(|| plan.class.into());
        let budget = self.retry.budget(call.class);
        let backoff = self.retry.backoff();
        let secrets: Vec<(&str, &str)> = call
            .secrets
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        loop {
            // Checked before every attempt, so a retry that was asleep when its task was
            // cancelled wakes to nothing.
            if call.task.is_some_and(|task| self.is_cancelled(task)) {
                return t.end(Reason::Cancelled, NextAction::FixRequest);
            }
            // Counted before queueing, so a task out of budget takes no queue place.
            if !self.count_task_attempt(call.task) {
                let max_attempts = self.retry.task_max_attempts;
                return t.end(
                    Reason::TaskBudgetExhausted { max_attempts },
                    NextAction::RetryLater(None),
                );
            }
            let elapsed = self.clock.now().saturating_duration_since(started);
            let left = call.deadline.map(|d| d.saturating_sub(elapsed));
            let mut acquire = Acquire::new(&call.provider, &call.credential)
                .tenant(&call.tenant)
                .class(class)
                .usage(usage);
            for s in &call.scopes {
                acquire = acquire.scope(s);
            }
            if let Some(left) = left {
                acquire = acquire.deadline(left);
            }
            if let Some(task) = call.task {
                acquire = acquire.task(task);
            }
            let permit = match self.admission.acquire(acquire).await {
                Ok(p) => p,
                Err(refused) => {
                    let reason = match &refused {
                        Refused::Cancelled => Reason::Cancelled,
                        Refused::Expired(_)
                        | Refused::Rejected(Rejection::DeadlineUnreachable { .. }) => {
                            Reason::OutOfTime(refused.to_string())
                        }
                        Refused::Rejected(_) => Reason::Refused(refused.to_string()),
                    };
                    let next = match reason {
                        Reason::Cancelled => NextAction::FixRequest,
                        _ => NextAction::RetryLater(None),
                    };
                    return t.end(reason, next);
                }
            };
            req.now_ms = self.clock.wall_ms();
            if let Err(why) = observer.before_send(t.attempts + 1) {
                return t.end(Reason::NotRecorded(why), NextAction::RetryLater(None));
            }
            t.attempts += 1;
            let wire = self.transport.send(&req, &secrets).await;
            let (status, sent) = match &wire {
                Wire::Response(r) => (Some(r.status), true),
                Wire::Transport(f) => (
                    None,
                    matches!(
                        f,
                        TransportFailure::TimeoutAfterSend | TransportFailure::ResetAfterSend
                    ),
                ),
            };
            t.sent |= sent;
            let reading = policy
                .read_response(&req, &wire, ResponsePart::Complete)
                .value;
            let c = reading.classification;
            observer.after_attempt(t.attempts, status, &c);
            if let Wire::Response(r) = &wire {
                t.response_received = true;
                t.last_status = Some(r.status);
                permit.observe(&reading.observations);
            }
            t.error_code.clone_from(&c.error_code);
            let spent = Spent {
                attempts: t.attempts,
                waited: t.waited,
            };
            let left = call
                .deadline
                .map(|d| d.saturating_sub(self.clock.now().saturating_duration_since(started)));
            let plan = {
                let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
                decide(
                    &c, status, sent, call.class, &budget, &backoff, spent, left, &mut rng,
                )
            };
            if let Some(hold) = plan.hold_scope {
                // Before this call schedules anything: every worker of the scope waits.
                permit.hold_scope(None, hold, &format!("{} {}", status.unwrap_or(429), route));
            }
            permit.complete(None);
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
                    self.breakers.success(&route);
                    let Wire::Response(response) = wire else {
                        unreachable!("success is a response")
                    };
                    return Outcome::Succeeded {
                        response,
                        attempts: t.attempts,
                        waited: t.waited,
                    };
                }
                Next::Stop(stop) => {
                    t.keep_answer(wire);
                    if breaks {
                        self.breakers.failure(&route, &failure, self.clock.now());
                    }
                    let next = next_action(&stop, c.retry_after_ms, status);
                    return t.end(Reason::Stopped(stop), next);
                }
                Next::Retry { delay } => {
                    t.keep_answer(wire);
                    if breaks {
                        self.breakers.failure(&route, &failure, self.clock.now());
                    }
                    if let Err(open) = self.breakers.check(&route, self.clock.now()) {
                        let after = open.retry_in;
                        return t.end(
                            Reason::BreakerOpen(open),
                            NextAction::RetryLater(Some(after)),
                        );
                    }
                    let Some(_place) = self.delay_place(call) else {
                        return t.end(
                            Reason::ScopeRetriesFull {
                                max_delayed_requests: self.retry.max_delayed_requests,
                            },
                            NextAction::RetryLater(Some(delay)),
                        );
                    };
                    observer.retry_scheduled(t.attempts, delay);
                    tokio::time::sleep(delay).await;
                    t.waited += delay;
                }
            }
        }
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

fn next_action(stop: &Stop, retry_after_ms: Option<u64>, status: Option<u16>) -> NextAction {
    let after = retry_after_ms.map(Duration::from_millis);
    match stop {
        // An auth failure is a credential problem, not the request's.
        Stop::NeverRetry | Stop::StatusNotRetried(_) if matches!(status, Some(401 | 403)) => {
            NextAction::Reauthenticate
        }
        Stop::NeverRetry | Stop::StatusNotRetried(_) => NextAction::FixRequest,
        Stop::Conflict => NextAction::ResolveConflict,
        Stop::QuotaExhausted { reset_after } => NextAction::WaitForQuota(*reset_after),
        Stop::OutcomeUnknown => NextAction::Reconcile,
        Stop::ProviderSaidNo
        | Stop::AttemptsExhausted
        | Stop::WaitBudgetExhausted { .. }
        | Stop::DeadlinePassed { .. } => NextAction::RetryLater(after),
    }
}

/// What a call has done so far.
#[derive(Debug, Default)]
struct Tally {
    sent: bool,
    response_received: bool,
    attempts: u32,
    waited: Duration,
    last_status: Option<u16>,
    error_code: Option<String>,
    last_response: Option<Response>,
}

impl Tally {
    /// Keeps a failed attempt's answer for the call's [`Terminal`] (moved, not copied: a
    /// success never pays for it).
    fn keep_answer(&mut self, wire: Wire) {
        if let Wire::Response(r) = wire {
            self.last_response = Some(r);
        }
    }

    fn end(self, reason: Reason, next_action: NextAction) -> Outcome {
        Outcome::Ended(Box::new(Terminal {
            reason,
            sent: self.sent,
            response_received: self.response_received,
            attempts: self.attempts,
            waited: self.waited,
            last_status: self.last_status,
            error_code: self.error_code,
            last_response: self.last_response,
            next_action,
        }))
    }
}
