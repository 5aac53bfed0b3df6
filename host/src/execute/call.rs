//! A call, how it ends, and who watches its attempts.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::admission::{Class, Refused, Rejection, TaskId};
use crate::budget::BudgetSpent;
use crate::contract::{Classification, RequestClass, Response};
use crate::retry::{Open, Stop};

/// One logical call.
#[derive(Debug, Clone)]
pub struct Call {
    /// The provider, as configured (`openai`); its plugin reads the answers.
    pub provider: String,
    /// The credential's label: the scope every worker of it shares, and the name the
    /// executor's [`Credentials`](crate::credentials::Credentials) give the secret headers
    /// for, at each send. A call never carries a secret itself.
    pub credential: String,
    /// The pool of the provider's credentials it goes with, instead of `credential`
    /// (`[providers.X.pools.NAME]`): a read goes with the member that would admit it soonest,
    /// at each attempt, and a retry avoids the members its attempts failed on; a write is
    /// given one member before it is recorded (run straight through the executor: at its
    /// first attempt), and keeps it for its whole life (its idempotency key and its
    /// reconciliation are that member's).
    pub pool: Option<String>,
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
    /// Headers plugins may see (a credential header here is redacted before a plugin sees
    /// it, and sent; put credentials in the executor's `Credentials` instead).
    pub headers: Vec<(String, String)>,
    /// The body: shared, never copied, by the request plugins read and the one sent.
    pub body: Bytes,
    /// The longest the whole call may take, waits and the attempt in flight included (an
    /// attempt still unanswered at the deadline is dropped, as one sent and unanswered);
    /// `None`: the deadline the request carries (its plugin's plan), if any.
    pub deadline: Option<Duration>,
    /// Share one attempt with identical reads of the same credential in flight (opt in only
    /// for reads whose answer may be shared: never a balance or an approval state). Ignored
    /// for writes.
    pub coalesce: bool,
}

/// The credential label of a call that names none.
pub const DEFAULT_CREDENTIAL: &str = "default";

/// Building a call: `Call::get(provider, url)` or `Call::post(provider, url, body)`, then
/// what differs from the defaults.
///
/// ```
/// use sluice::{Call, RequestClass};
///
/// let call = Call::post("openai", "https://api.openai.com/v1/chat/completions", r#"{"model":"gpt-4o"}"#)
///     .credential("team-key")
///     .tenant("acme")
///     .header("content-type", "application/json")
///     .class(RequestClass::IdempotentWrite);
/// assert_eq!(call.method, "POST");
/// assert_eq!(call.credential, "team-key");
/// ```
impl Call {
    /// A call of `method` to the absolute `url` of `provider`, with the credential label
    /// `DEFAULT_CREDENTIAL`, no body, and the class its method implies: a read for `GET`,
    /// `HEAD` and `OPTIONS`; for anything else an uncertain write, sent once and reconciled,
    /// never resent blindly (say [`RequestClass::IdempotentWrite`] when the provider makes
    /// a resend safe).
    pub fn new(provider: impl Into<String>, method: &str, url: impl Into<String>) -> Self {
        let method = method.to_ascii_uppercase();
        let class = match method.as_str() {
            "GET" | "HEAD" | "OPTIONS" => RequestClass::Read,
            _ => RequestClass::UncertainWrite,
        };
        Self {
            provider: provider.into(),
            credential: DEFAULT_CREDENTIAL.to_owned(),
            pool: None,
            scopes: Vec::new(),
            tenant: None,
            task: None,
            priority: None,
            class,
            method,
            url: url.into(),
            headers: Vec::new(),
            body: Bytes::new(),
            deadline: None,
            coalesce: false,
        }
    }

    /// A `GET` of `url` (a read).
    pub fn get(provider: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(provider, "GET", url)
    }

    /// A `POST` of `body` to `url` (an uncertain write unless [`Call::class`] says more).
    pub fn post(
        provider: impl Into<String>,
        url: impl Into<String>,
        body: impl Into<Bytes>,
    ) -> Self {
        Self::new(provider, "POST", url).body(body)
    }

    /// Sent with the credential labelled `label`.
    #[must_use]
    pub fn credential(mut self, label: impl Into<String>) -> Self {
        self.credential = label.into();
        self
    }

    /// Sent with a member of the provider's pool `pool` instead of one credential (see the
    /// `pool` field).
    #[must_use]
    pub fn pool(mut self, pool: impl Into<String>) -> Self {
        self.pool = Some(pool.into());
        self
    }

    /// The pool it goes with, else its credential's label: what its metrics and spans name.
    pub fn sent_with(&self) -> &str {
        self.pool.as_deref().unwrap_or(&self.credential)
    }

    /// Also charges the narrower scope `scope` (a model, an endpoint family).
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }

    /// Billed to `tenant`.
    #[must_use]
    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// Part of `task`, for cancellation and the task's attempt budget.
    #[must_use]
    pub fn task(mut self, task: TaskId) -> Self {
        self.task = Some(task);
        self
    }

    /// Queued in `priority` instead of the plugin's advice.
    #[must_use]
    pub fn priority(mut self, priority: Class) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Retried as `class` allows.
    #[must_use]
    pub fn class(mut self, class: RequestClass) -> Self {
        self.class = class;
        self
    }

    /// With the header `name: value` (not a credential: see [`Call::credential`]).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// With `body`.
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Ends within `deadline`, waits and the attempt in flight included.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Shares one attempt with identical reads of the same credential in flight (reads only,
    /// and only those whose answer may be shared: see the `coalesce` field).
    #[must_use]
    pub fn coalesced(mut self) -> Self {
        self.coalesce = true;
        self
    }
}

/// What to do after a call that ended without success.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

impl NextAction {
    /// Its name, as the sidecar's `x-sluice-next-action` header says it: `fix-request`,
    /// `reauthenticate`, `retry-later`, `reconcile`, `wait-for-quota`, `resolve-conflict`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::FixRequest => "fix-request",
            Self::Reauthenticate => "reauthenticate",
            Self::RetryLater(_) => "retry-later",
            Self::Reconcile => "reconcile",
            Self::WaitForQuota(_) => "wait-for-quota",
            Self::ResolveConflict => "resolve-conflict",
        }
    }

    /// How long to wait before doing it, when known.
    pub fn after(&self) -> Option<Duration> {
        match self {
            Self::RetryLater(d) | Self::WaitForQuota(d) => *d,
            _ => None,
        }
    }
}

/// Why a call ended without success.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reason {
    /// The retry policy stopped it.
    Stopped(Stop),
    /// The admission queue refused it (backpressure, an oversized request).
    Refused(Rejection),
    /// Its deadline passed while it waited, or cannot be met: the time budget is spent.
    /// Holds the admission's refusal (`Refused::Expired`, or
    /// `Rejection::DeadlineUnreachable`).
    OutOfTime(Refused),
    /// Its task was cancelled.
    Cancelled,
    /// The path's circuit breaker is open.
    BreakerOpen(Open),
    /// Too many calls of the scope are already waiting to retry, and the call's tenant holds
    /// at least its share of the places; or the call's place was taken back, while it
    /// waited, for a tenant holding fewer than its share.
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
    /// The provider's credentials have no such label, or its pools no such name: nothing
    /// was sent without a key.
    UnknownCredential {
        /// The provider.
        provider: String,
        /// The label the call named (its pool's name, for a call of a pool).
        label: String,
    },
    /// The observer refused to let an attempt go out (the journal could not record it).
    NotRecorded(NotRecorded),
    /// A budget of the call's tenant is spent: refused at once, before it queued, until
    /// the budget's period resets (or the budget is raised).
    BudgetSpent(BudgetSpent),
    /// The call's cost cannot be priced while its tenant has a spend budget: it names no
    /// model, or its model has no price and unpriced calls are refused
    /// (`budgets.unpriced = "refuse"`).
    Unpriced(crate::budget::UnpricedModel),
    /// The request cannot be sent as it is, and was not: why, for the agent (a key its
    /// body gives twice).
    Malformed(String),
}

/// A short account for a person: `stopped: outcome-unknown`, `refused: ...`.
impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stopped(stop) => write!(f, "stopped: {stop}"),
            Self::Refused(why) => write!(f, "refused: {why}"),
            Self::OutOfTime(why) => write!(f, "out of time: {why}"),
            Self::Cancelled => f.write_str("cancelled"),
            Self::BreakerOpen(open) => write!(
                f,
                "breaker open on {} after {} failures in a row ({}), retried in {} ms",
                open.route,
                open.failures,
                open.error,
                open.retry_in.as_millis()
            ),
            Self::ScopeRetriesFull {
                max_delayed_requests,
            } => write!(
                f,
                "the scope's {max_delayed_requests} places for calls waiting to retry are full, \
                 and this call's tenant holds at least its share of them"
            ),
            Self::TaskBudgetExhausted { max_attempts } => {
                write!(f, "the task's budget of {max_attempts} attempts is spent")
            }
            Self::UnknownCredential { provider, label } => write!(
                f,
                "provider `{}` has no credential labelled `{}` (nor a pool of that name): name \
                 one the configuration gives it (providers.{p}.credentials, providers.{p}.pools)",
                crate::printable::printable(provider),
                crate::printable::printable(label),
                p = crate::printable::printable(provider)
            ),
            Self::UnknownProvider(provider) => {
                write!(f, "no plugin is configured for provider `{provider}`")
            }
            Self::NotRecorded(why) => write!(f, "not recorded: {why}"),
            Self::BudgetSpent(spent) => write!(f, "budget spent: {spent}"),
            Self::Unpriced(unpriced) => write!(f, "unpriced: {unpriced}"),
            Self::Malformed(why) => write!(f, "malformed: {why}"),
        }
    }
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
    /// Time the call waited: in the admission queue and between attempts.
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

/// Why an `Observer` kept an attempt from going out: what it must record before a send
/// (the journal's `sent` mark, the audit line) could not be made durable. It says what its
/// cause says, and [`NotRecorded::cause`] gives the cause itself (a
/// [`JournalError`](crate::journal::JournalError), a
/// [`WriteError`](crate::writes::WriteError)) to downcast.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct NotRecorded(Arc<dyn std::error::Error + Send + Sync>);

impl NotRecorded {
    /// The refusal caused by `cause`.
    pub fn new(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(cause))
    }

    /// What could not be recorded, and why.
    pub fn cause(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

/// Two refusals are equal when they hold the same cause, or causes that say the same.
impl PartialEq for NotRecorded {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

/// Sees each attempt of a call: the journal and the audit log hang here.
pub trait Observer: Send {
    /// Just before attempt `attempt` (from 1) is sent. An error stops the call with nothing
    /// sent for this attempt: a write whose `sent` mark cannot be made durable must not go
    /// out.
    ///
    /// # Errors
    /// [`NotRecorded`], holding why the attempt must not be sent.
    fn before_send(&mut self, attempt: u32) -> Result<(), NotRecorded>;
    /// After attempt `attempt`: the answer's status (`None`: no answer) and how it was read.
    fn after_attempt(&mut self, attempt: u32, status: Option<u16>, read: &Classification);
    /// A retry of the call is scheduled after `delay`.
    fn retry_scheduled(&mut self, attempt: u32, delay: Duration);
}

/// An observer that sees nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl Observer for Unobserved {
    fn before_send(&mut self, _attempt: u32) -> Result<(), NotRecorded> {
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
        /// Time the call waited: in the admission queue and between attempts.
        waited: Duration,
    },
    /// The call ended without success.
    Ended(Box<Terminal>),
}

/// What makes two reads the same read: the credential, and every byte of the request.
pub(super) fn read_key(call: &Call) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [
        call.provider.as_bytes(),
        call.sent_with().as_bytes(),
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

#[cfg(test)]
mod tests {
    use super::{NotRecorded, Reason};
    use crate::journal::JournalError;

    #[test]
    fn a_send_that_could_not_be_recorded_keeps_its_cause_as_a_type() {
        let reason = Reason::NotRecorded(NotRecorded::new(JournalError::Missing(7)));
        assert_eq!(
            reason.to_string(),
            "not recorded: no action 7 in the journal"
        );
        let Reason::NotRecorded(refusal) = &reason else {
            unreachable!()
        };
        assert!(matches!(
            refusal.cause().downcast_ref::<JournalError>(),
            Some(JournalError::Missing(7))
        ));
        assert_eq!(
            reason,
            Reason::NotRecorded(NotRecorded::new(JournalError::Missing(7)))
        );
        assert_ne!(
            reason,
            Reason::NotRecorded(NotRecorded::new(JournalError::Missing(8)))
        );
    }
}
