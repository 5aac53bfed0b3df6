//! The scheduler on tokio: [`Admission`], the handle agent platforms await before each call.
//!
//! [`Admission::acquire`] resolves to a [`Permit`] when every scope the call charges can take
//! it; the permit gives its concurrency slots back when it is completed or dropped, so a
//! call that fails, panics, is cancelled or times out never keeps a slot.
//!
//! Why one driver task: the [`Scheduler`] already knows the one instant at which polling can
//! next change anything ([`Scheduler::next_wake`]), however many requests wait. So a waiting
//! `acquire` holds nothing but a oneshot receiver: no timer, no task, no thread of its own.
//! One task sleeps until that instant (or until told it moved earlier), polls, and hands each
//! admitted request its grant. A timer per request would cost a timer-wheel entry per
//! waiting call and would wake requests only to find their scope still busy; worse, they
//! would race for the lock, and the order between tenants would be whoever's timer fired
//! first instead of the scheduler's fair order. Everything else that can let a request go (a
//! new request, a completed or dropped permit, a withdrawn request, a cancelled task) polls
//! at once, under the same lock, in the caller's own thread: the driver only handles time.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, oneshot};

use super::bucket::Nanos;
use super::config::{Config, ConfigError};
use super::fair::{Class, RequestId};
use super::outcome::{GrantId, QueueEvent, Rejection, Why};
use super::scheduler::{Ask, Scheduler, TaskId};
use super::scope::{Block, Hold, ScopeKey};
use super::shared::{Gate, Passed};
use super::snapshot::Snapshot;
use super::usage::Usage;
use crate::clock::Clock;
use crate::contract::Observation;

/// The tenant of an [`Acquire`] that names none.
pub const DEFAULT_TENANT: &str = "default";

/// The async admission handle: the [`Scheduler`] behind a lock, driven by one tokio task.
///
/// Cheap to clone; every clone is the same scheduler. The driver task stops once the last
/// clone, and the last [`Ticket`] still waiting, are gone.
///
/// # Example
///
#[cfg_attr(feature = "internals", doc = "```")]
#[cfg_attr(not(feature = "internals"), doc = "```ignore")]
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use sluice::admission::{Acquire, Admission, Class, Config, Usage};
/// use sluice::clock::TokioClock;
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let config = Config::from_toml(
///         r#"
///         [providers.openai.limits]
///         requests_per_minute = 500
///         tokens_per_minute = 30000
///         concurrent_requests = 8
///
///         [providers.openai.models.gpt-4o]
///         tokens_per_minute = 20000
///         "#,
///     )?;
///     let admission = Admission::new(config, Arc::new(TokioClock))?;
///
///     let call = Acquire::new("openai", "team-key")
///         .scope("model:gpt-4o") // also charges the model's own quotas
///         .tenant("acme")
///         .class(Class::Interactive)
///         .usage(Usage::tokens(1_200, 400))
///         .deadline(Duration::from_secs(30));
///     let permit = admission.acquire(call).await?;
///     // Send the call now; then report what the response said it used.
///     permit.complete(Some(Usage::tokens(1_180, 212)));
///
///     // On a 429, hold the credential's scope: every worker sending with it waits.
///     let permit = admission.acquire(Acquire::new("openai", "team-key")).await?;
///     permit.hold_scope(None, Duration::from_secs(2), "429 Retry-After: 2");
///     drop(permit); // released: its concurrency slot is free again
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Admission {
    shared: Arc<Shared>,
}

/// One call to admit: where it goes, who it is for, and how much it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquire {
    /// The provider, as configured (`openai`).
    pub provider: String,
    /// The credential (account, project or key label) the call is sent with.
    pub credential: String,
    /// Narrower scopes of that credential the call also charges (a model, an endpoint
    /// family).
    pub scopes: Vec<String>,
    /// The tenant it is billed to.
    pub tenant: String,
    /// Its queue class.
    pub class: Class,
    /// Its estimated usage.
    pub usage: Usage,
    /// The longest it may wait, from submission.
    pub deadline: Option<Duration>,
    /// The task it belongs to, for [`Admission::cancel`].
    pub task: Option<TaskId>,
    /// The pool of the provider's credentials it may go with, instead of `credential`: it
    /// is admitted on the member that would admit it soonest ([`Ticket::credential`] says
    /// which).
    pub pool: Option<String>,
    /// Members of the pool it should go with only when no other can take it (a member
    /// whose breaker is open, the one its last attempt failed on).
    pub avoid: Vec<String>,
}

impl Acquire {
    /// One [`Class::Standard`] request of [`DEFAULT_TENANT`] that uses no tokens, sent to
    /// `provider` with `credential`, with no deadline and no task.
    pub fn new(provider: impl Into<String>, credential: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            credential: credential.into(),
            scopes: Vec::new(),
            tenant: DEFAULT_TENANT.into(),
            class: Class::Standard,
            usage: Usage::ONE_REQUEST,
            deadline: None,
            task: None,
            pool: None,
            avoid: Vec::new(),
        }
    }

    /// Also charges the credential's narrower scope `name`: a model's is `model:<model>`
    /// ([`super::config::model_scope`]), what the bundled plugins name and what
    /// `[providers.X.models.<model>]` configures.
    #[must_use]
    pub fn scope(mut self, name: impl Into<String>) -> Self {
        self.scopes.push(name.into());
        self
    }

    /// Bills it to `tenant`.
    #[must_use]
    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// Queues it in `class`.
    #[must_use]
    pub fn class(mut self, class: Class) -> Self {
        self.class = class;
        self
    }

    /// Its estimated usage.
    #[must_use]
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Gives up if it is not admitted within `wait`.
    #[must_use]
    pub fn deadline(mut self, wait: Duration) -> Self {
        self.deadline = Some(wait);
        self
    }

    /// Ties it to `task`: [`Admission::cancel`] of the task refuses it.
    #[must_use]
    pub fn task(mut self, task: TaskId) -> Self {
        self.task = Some(task);
        self
    }
}

/// Why a call was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Refused at submission, before it queued.
    #[error(transparent)]
    Rejected(#[from] Rejection),
    /// Its deadline passed while it waited.
    #[error("the deadline passed while waiting: {0}")]
    Expired(Box<Why>),
    /// Its task was cancelled while it waited.
    #[error("its task was cancelled while it waited")]
    Cancelled,
}

/// What the scheduler decided for a waiting request, sent to its [`Ticket`].
#[derive(Debug)]
enum WaitEnd {
    Admitted(GrantId),
    Expired(Box<Why>),
    Cancelled,
}

#[derive(Debug)]
struct Waiter {
    tx: oneshot::Sender<WaitEnd>,
    task: Option<TaskId>,
}

struct Shared {
    state: Mutex<State>,
    /// The shared store's gate, when several hosts share the quotas.
    gate: Option<Gate>,
    /// Tells the driver that the earliest wake moved earlier (or that [`Shared`] is gone).
    notify: Arc<Notify>,
    clock: Arc<dyn Clock>,
    /// The scheduler's time zero.
    origin: Instant,
}

struct State {
    scheduler: Scheduler,
    /// Requests still waiting, each with the sender its ticket listens on.
    waiting: HashMap<RequestId, Waiter>,
    /// The waiting requests of each task.
    tasks: HashMap<TaskId, Vec<RequestId>>,
    /// The wake the driver sleeps until, as of its last look.
    armed: Option<Nanos>,
    /// Reused for every poll.
    events: Vec<QueueEvent>,
    /// Driver wake-ups that delivered something.
    #[cfg(test)]
    driver_deliveries: u64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock leaves the scheduler in one piece: every method runs to
        // completion or panics before changing anything shared with other requests.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> Nanos {
        let elapsed = self.clock.now().saturating_duration_since(self.origin);
        u64::try_from(elapsed.as_nanos()).unwrap_or(Nanos::MAX)
    }

    /// Runs `f` under the lock, then admits what may go and wakes the driver if it must.
    /// The clock is read under the lock, so the scheduler sees time in order.
    fn change<R>(&self, f: impl FnOnce(&mut State, Nanos) -> R) -> R {
        let mut state = self.lock();
        let now = self.now();
        let r = f(&mut state, now);
        state.settle(now, &self.notify);
        r
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The driver holds only a weak reference: wake it to find it gone.
        self.notify.notify_one();
    }
}

impl State {
    /// Removes a waiting request's sender, and its entry in its task's list.
    fn take_waiter(&mut self, id: RequestId) -> Option<oneshot::Sender<WaitEnd>> {
        let w = self.waiting.remove(&id)?;
        if let Some(task) = w.task
            && let Some(ids) = self.tasks.get_mut(&task)
        {
            if let Some(i) = ids.iter().position(|&r| r == id) {
                ids.swap_remove(i);
            }
            if ids.is_empty() {
                self.tasks.remove(&task);
            }
        }
        Some(w.tx)
    }

    /// Polls the scheduler and sends every outcome to its ticket. A grant nobody can take
    /// any more (its ticket is gone) is released at once, and the freed capacity polled
    /// again. Returns how many outcomes were sent.
    fn deliver(&mut self, now: Nanos) -> usize {
        let mut events = std::mem::take(&mut self.events);
        let mut sent = 0;
        loop {
            self.scheduler.poll(now, &mut events);
            let mut released = false;
            for event in events.drain(..) {
                match event {
                    QueueEvent::Admitted { request, grant } => {
                        let taken = self
                            .take_waiter(request)
                            .is_some_and(|tx| tx.send(WaitEnd::Admitted(grant)).is_ok());
                        if taken {
                            sent += 1;
                        } else {
                            self.scheduler.complete(now, grant, None);
                            released = true;
                        }
                    }
                    QueueEvent::Expired { request, why } => {
                        if let Some(tx) = self.take_waiter(request) {
                            // A ticket dropped meanwhile needs no word.
                            let _ = tx.send(WaitEnd::Expired(why));
                            sent += 1;
                        }
                    }
                }
            }
            if !released {
                break;
            }
        }
        self.events = events;
        sent
    }

    /// Delivers what may go at `now`, and tells the driver when the next wake is earlier
    /// than the one it sleeps until.
    fn settle(&mut self, now: Nanos, notify: &Notify) -> usize {
        let sent = self.deliver(now);
        if let Some(next) = self.scheduler.next_wake()
            && self.armed.is_none_or(|armed| next < armed)
        {
            self.armed = Some(next);
            notify.notify_one();
        }
        sent
    }
}

/// The one driver task: sleeps until the scheduler's next wake, or until told it moved
/// earlier, then polls. Stops when the handle is gone.
async fn drive(shared: Weak<Shared>, notify: Arc<Notify>) {
    loop {
        let sleep = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let mut state = shared.lock();
            let now = shared.now();
            let _sent = state.deliver(now);
            #[cfg(test)]
            if _sent > 0 {
                state.driver_deliveries += 1;
            }
            state.armed = state.scheduler.next_wake();
            state
                .armed
                .map(|at| Duration::from_nanos(at.saturating_sub(now)))
        };
        let notified = notify.notified();
        match sleep {
            // Timing out is the point: the wake is due.
            Some(d) => {
                let _ = tokio::time::timeout(d, notified).await;
            }
            None => notified.await,
        }
    }
}

impl Admission {
    /// A handle on a new scheduler for `config`, on `clock`, with its driver task spawned
    /// on the current tokio runtime.
    ///
    /// The driver sleeps on tokio timers until instants it reads from `clock`, so the clock
    /// must move with tokio's: [`crate::clock::TokioClock`] (which follows tokio's paused
    /// clock in tests) or [`crate::clock::SystemClock`] outside paused tests.
    ///
    /// # Errors
    /// [`ConfigError`] when the configuration does not validate.
    ///
    /// # Panics
    /// Outside a tokio runtime, or in one without timers (`enable_time`).
    pub fn new(config: Config, clock: Arc<dyn Clock>) -> Result<Self, ConfigError> {
        Self::build(config, clock, None)
    }

    /// As [`Admission::new`], with quotas shared with other hosts through `gate`: a call
    /// the local queue admits is sent only once the shared store admits it too (see
    /// [`crate::admission::shared`]).
    ///
    /// # Errors
    /// [`ConfigError`] when the configuration does not validate.
    ///
    /// # Panics
    /// As [`Admission::new`].
    pub fn with_gate(
        config: Config,
        clock: Arc<dyn Clock>,
        gate: Gate,
    ) -> Result<Self, ConfigError> {
        Self::build(config, clock, Some(gate))
    }

    /// The shared store's gate, when the quotas are shared.
    pub fn gate(&self) -> Option<&Gate> {
        self.shared.gate.as_ref()
    }

    fn build(
        config: Config,
        clock: Arc<dyn Clock>,
        gate: Option<Gate>,
    ) -> Result<Self, ConfigError> {
        let scheduler = Scheduler::new(config)?;
        // Panics here, not in the driver, when the runtime has no timers.
        drop(tokio::time::sleep(Duration::ZERO));
        let notify = Arc::new(Notify::new());
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                scheduler,
                waiting: HashMap::new(),
                tasks: HashMap::new(),
                armed: None,
                events: Vec::new(),
                #[cfg(test)]
                driver_deliveries: 0,
            }),
            gate,
            notify: notify.clone(),
            origin: clock.now(),
            clock,
        });
        tokio::spawn(drive(Arc::downgrade(&shared), notify));
        Ok(Self { shared })
    }

    /// Waits until `request` is admitted, and returns its permit: [`Admission::submit`], then
    /// the [`Ticket`] awaited. Dropping the future withdraws the request.
    ///
    /// # Errors
    /// [`Refused`]: rejected at submission, expired, or cancelled.
    pub async fn acquire(&self, request: Acquire) -> Result<Permit, Refused> {
        self.submit(request)?.await
    }

    /// Queues `request` and returns its ticket at once, admitted already if it may go now.
    /// Await the ticket for the permit; its [`Ticket::id`] names the request to
    /// [`Admission::explain`] meanwhile. Dropping the ticket withdraws the request.
    ///
    /// # Errors
    /// [`Refused::Rejected`] when the scheduler refuses it at once.
    pub fn submit(&self, request: Acquire) -> Result<Ticket, Refused> {
        let (tx, rx) = oneshot::channel();
        let submitted = self.shared.change(|state, now| {
            let s = &mut state.scheduler;
            let names: Vec<&str> = request.scopes.iter().map(String::as_str).collect();
            let tenant = s.tenant(&request.tenant);
            let member = pools::member_for(s, now, &request, &names, tenant)?;
            let credential = member.as_deref().unwrap_or(&request.credential);
            let ask = Ask {
                route: s.route(&request.provider, credential, &names),
                tenant,
                class: request.class,
                usage: request.usage,
                deadline: request.deadline.map(|d| now.saturating_add(nanos(d))),
                task: request.task,
            };
            let id = s.submit(now, ask)?;
            state.waiting.insert(
                id,
                Waiter {
                    tx,
                    task: request.task,
                },
            );
            if let Some(task) = request.task {
                state.tasks.entry(task).or_default().push(id);
            }
            Ok::<_, Rejection>((id, now, member))
        });
        let (id, now, member) = submitted.inspect_err(|rejection| refused(&request, rejection))?;
        let gated = self.shared.gate.clone().map(|gate| {
            Box::new(Gated {
                gate,
                class: request.class,
                tenant: request.tenant.as_str().into(),
                submitted: now,
                deadline: request.deadline.map(|d| now.saturating_add(nanos(d))),
            })
        });
        Ok(Ticket {
            id,
            member,
            shared: self.shared.clone(),
            rx,
            settled: false,
            gated,
            passing: None,
        })
    }

    /// Refuses every waiting request of `task`: their tickets resolve to
    /// [`Refused::Cancelled`], and none of them is admitted later. Returns how many there
    /// were. Requests of the task already admitted keep their permits.
    pub fn cancel(&self, task: TaskId) -> usize {
        self.shared.change(|state, _| {
            let removed = state.scheduler.cancel(task);
            for id in state.tasks.remove(&task).unwrap_or_default() {
                if let Some(w) = state.waiting.remove(&id) {
                    let _ = w.tx.send(WaitEnd::Cancelled);
                }
            }
            removed
        })
    }

    /// Why `request` is still waiting, or `None` once it is not.
    pub fn explain(&self, request: RequestId) -> Option<Why> {
        let state = self.shared.lock();
        state.scheduler.explain(self.shared.now(), request)
    }

    /// Admission as it stands now: every scope and the queue (see [`Scheduler::snapshot`]).
    /// Takes the lock for one pass over the scheduler's state and changes nothing: unlike
    /// [`Admission::with_scheduler`], it does not poll, so looking never admits anything.
    pub fn snapshot(&self) -> Snapshot {
        let state = self.shared.lock();
        state.scheduler.snapshot(self.shared.now())
    }

    /// Holds the scope named `scope` for `retry_after` from now: nothing charged to it is
    /// admitted before. Call it on a 429 before retrying, so every worker of the scope waits.
    pub fn hold(&self, scope: &ScopeKey, retry_after: Duration, reason: &str) {
        // A hold only moves wakes later: the driver finds the scope held when it next wakes.
        self.shared.change(|state, now| {
            let until = now.saturating_add(nanos(retry_after));
            state.scheduler.hold(now, scope, until, reason);
        });
        held(scope, retry_after, reason);
        self.shared.share(scope);
    }

    /// Now on the scheduler's clock: what [`Scheduler`] methods take as `now`, and the clock
    /// of [`crate::admission::Learned`] instants.
    pub fn now(&self) -> Nanos {
        self.shared.now()
    }

    /// Runs `f` on the scheduler under the lock (to [`Scheduler::learn`] from a response, or
    /// read its state), then admits whatever the change lets go. Submit, withdraw, cancel
    /// and complete through the handle, not here: a request submitted here has no ticket,
    /// and its grant is released as soon as it is admitted.
    pub fn with_scheduler<R>(&self, f: impl FnOnce(&mut Scheduler) -> R) -> R {
        self.shared.change(|state, _| f(&mut state.scheduler))
    }
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("clock", &self.shared.clock)
            .finish_non_exhaustive()
    }
}

fn nanos(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(Nanos::MAX)
}

mod permit;
mod pools;
mod report;
mod shared;
#[cfg(test)]
mod tests;

pub use permit::{Permit, Ticket};
use report::{held, refused};
use shared::{Gated, Remaining};
