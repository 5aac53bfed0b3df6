//! Safe writes: a write is journaled before it is sent, sent only with its one idempotency
//! key, and never sent again blindly.
//!
//! [`Writes::write`] records the logical action (its intent, body and key committed to the
//! [`Journal`] before any byte goes out), marks each attempt `sent` durably before sending
//! it, and writes the audit log before each send and after each result. What happens next
//! depends on what is known:
//!
//! - success: the action is `succeeded`, with the provider's operation id;
//! - a certain refusal (every attempt answered, and the answer says the write was not
//!   done): `failed`;
//! - nothing sent (the queue refused it, a breaker was open, the deadline passed): the
//!   action is `refused`, and nothing but the agent's resubmit of it sends it; a cancelled
//!   task's is `cancelled`; a spent time budget raises a [`Kind::TimeBudget`] escalation and
//!   cancels the task's waiting work, which never wakes;
//! - anything else after a send: `uncertain`, and [`settle`](Writes::settle) asks the
//!   provider's plugin how to find out — a status query through the normal admission
//!   path, or a resend with the same key where the provider suppresses duplicates — and
//!   escalates to a person when the plugin cannot tell. A query that finds nothing is
//!   believed only when a second one, a [provider timeout](Writes::provider_timeout)
//!   later, agrees; only then is the write sent again (with its key).
//!
//! [`Writes::recover`] resumes a restarted host's unfinished actions with their original
//! keys: a `pending` action sent nothing and is sent; any other is settled, never resent
//! blindly; a `refused` one stays refused. [`Writes::apply_decisions`] carries out people's decisions on escalations.

mod answers;
mod case;
mod recover;
mod request;
mod send;
mod settle;
pub mod witnesses;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use crate::admission::TaskId;
use crate::admission::shared::ClaimError;
use crate::audit::{AuditError, AuditLog, Event, EventKind};
use crate::clock::Clock;
use crate::contract::Response;
use crate::execute::{Call, Executor, Terminal};
use crate::journal::escalations::Kind;
use crate::journal::{Action, Journal, JournalError, Recorded, State};

pub use case::{Case, CaseOption, CaseSpent};
pub use request::StoredRequest;
pub use send::is_reconciliation;

/// One logical write of a task.
#[derive(Debug, Clone)]
pub struct Write {
    /// The task's stable name: the same across retries and restarts.
    pub task: String,
    /// The action's stable name within the task (for example `charge-invoice-42`).
    pub action: String,
    /// The task's goal, in words, for whoever resolves an escalation.
    pub goal: String,
    /// The request. Its `task` is set from [`Write::task`]; its credential headers are
    /// used for this run only and never stored.
    pub call: Call,
}

/// How a write ended (for now).
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOutcome {
    /// The provider did it, once. `action.operation_id` holds its id when one came back.
    Succeeded {
        /// The action as journaled.
        action: Action,
        /// The provider's answer to the write: received by this run, or kept from an
        /// earlier submission (`replayed`). `None`: settled by a status query, or done
        /// longer ago than answers are kept.
        response: Option<Box<Response>>,
        /// The action was done by an earlier submission: nothing was sent now, and
        /// `response` is the answer kept from then.
        replayed: bool,
    },
    /// The provider refused it, and nothing of it happened.
    Failed {
        /// The action as journaled.
        action: Action,
        /// The call's end, when this run made the call.
        terminal: Option<Box<Terminal>>,
    },
    /// A person must decide.
    Escalated {
        /// The action as journaled.
        action: Action,
        /// The escalation's id (`sluice escalations show ID`).
        escalation: i64,
    },
    /// The action, or its task, was cancelled; nothing more is sent for it.
    Cancelled {
        /// The action as journaled.
        action: Action,
    },
    /// Refused before its first byte went out (backpressure, an open breaker, a deadline, a
    /// lost lease): nothing happened, and nothing sends it later — not a restart, not a
    /// takeover. Only submitting the same action again does.
    Refused {
        /// The action as journaled (`refused`).
        action: Action,
        /// Why, when this run made the call.
        terminal: Option<Box<Terminal>>,
    },
    /// Nothing was sent and the action waits, `pending`, for a person's decision on its
    /// task; it is sent with its key once the decision lets the task go on.
    Deferred {
        /// The action as journaled.
        action: Action,
        /// Why this run sent nothing, when this run made the call.
        terminal: Option<Box<Terminal>>,
    },
}

impl WriteOutcome {
    /// The action.
    pub fn action(&self) -> &Action {
        match self {
            Self::Succeeded { action, .. }
            | Self::Failed { action, .. }
            | Self::Escalated { action, .. }
            | Self::Cancelled { action }
            | Self::Refused { action, .. }
            | Self::Deferred { action, .. } => action,
        }
    }
}

/// What cancelling a task cancelled (`Writes::cancel_task`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskCancelled {
    /// Its calls that were waiting for admission (reads and writes alike): refused at once.
    pub waiting_calls: usize,
    /// Its journaled actions that had sent nothing: cancelled, never sent.
    pub unsent_actions: usize,
}

/// A write that could not be carried out safely.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The journal refused it or failed (a body that differs from the recorded one, a
    /// cancelled task, a SQLite error).
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The audit log could not be written; nothing is sent without it.
    #[error("the audit log: {0}")]
    Audit(#[from] AuditError),
    /// An attempt went out but its result could not be recorded; the action stays `sent`,
    /// so it is settled by reading, never resent. Holds the first journal or audit failure.
    #[error("an attempt's result could not be recorded (the action stays `sent`): {0}")]
    NotRecorded(#[source] Box<WriteError>),
    /// The journal holds a request this host cannot read back.
    #[error("action {id}: its stored request is unreadable: {why}")]
    StoredRequest {
        /// The action.
        id: i64,
        /// Why.
        why: String,
    },
    /// Another host owns the action, or the shared store could not say: nothing was
    /// recorded or sent.
    #[error(transparent)]
    Claim(#[from] ClaimError),
    /// The write names a pool its provider does not have: nothing was recorded or sent.
    #[error("{0}; nothing was recorded or sent")]
    Pool(crate::admission::Rejection),
}

/// A point in a write's life, reported to a `Writes::on_step` listener (for progress
/// displays, metrics, and tests that stop the process at each point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// About to commit the intent.
    Recording,
    /// The intent and its key are committed; nothing is sent.
    IntentCommitted,
    /// Attempt `n` is marked `sent`; its bytes go out next.
    SentCommitted(u32),
    /// Attempt `n` was answered (or failed in transport) and is about to be recorded.
    Answered(u32),
    /// The action's new state is committed.
    ResultCommitted(State),
    /// The action is `reconciling`; its status query goes out next.
    Reconciling,
    /// The status query was answered; what it revealed is about to be committed.
    QueryAnswered,
}

impl Step {
    /// A short name (`sent-1`, `result-succeeded`).
    pub fn name(self) -> String {
        match self {
            Self::Recording => "recording".into(),
            Self::IntentCommitted => "intent-committed".into(),
            Self::SentCommitted(n) => format!("sent-{n}"),
            Self::Answered(n) => format!("answered-{n}"),
            Self::ResultCommitted(s) => format!("result-{}", s.name()),
            Self::Reconciling => "reconciling".into(),
            Self::QueryAnswered => "query-answered".into(),
        }
    }
}

pub use crate::credentials::Credentials;

type Listener = Arc<dyn Fn(Step) + Send + Sync>;

/// How long a provider is assumed to go on working on a request it received, unless
/// [`Writes::provider_timeout`] says otherwise: longer than the providers' own request
/// timeouts, so a lookup's "not found" is not believed while an attempt may still land.
pub const DEFAULT_PROVIDER_TIMEOUT: Duration = Duration::from_secs(60);

/// The safe-write engine: an executor, a journal and an audit log together.
pub struct Writes {
    executor: Arc<Executor>,
    journal: Arc<Journal>,
    audit: Arc<AuditLog>,
    clock: Arc<dyn Clock>,
    listener: Option<Listener>,
    /// How long a provider may still act on an attempt it received.
    provider_timeout: Duration,
    /// Actions being written by this host: a second submit of one waits for the first.
    inflight: Mutex<HashMap<i64, watch::Receiver<bool>>>,
    /// Held while decisions are carried out, so that each is carried out once.
    deciding: tokio::sync::Mutex<()>,
    /// The shared store in which this host claims each action before it records it, when
    /// several hosts share the quotas (see [`crate::admission::shared::ClaimError`]).
    claims: Option<crate::admission::shared::Gate>,
    /// How long the provider's answer to a write is kept, to answer its resubmission.
    keep_answers: Duration,
    /// The actions this process claimed in the shared store and has not recorded yet: a
    /// second submit racing the first to the journal finds its own process's claim here.
    claimed: Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for Writes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writes").finish_non_exhaustive()
    }
}

/// An action's name in the shared store: its task and its name, each length-prefixed so
/// that no two pairs give one name.
fn claim_name(task: &str, action: &str) -> String {
    format!("{}:{task}/{action}", task.len())
}

/// The task id of a task name: [`TaskId::named`].
pub fn task_id(task: &str) -> TaskId {
    TaskId::named(task)
}

/// Who works on an action in this host.
enum Claim<'a> {
    /// This run: the guard gives the action back when dropped.
    Mine(InFlight<'a>),
    /// Another run: this one waits for it to finish.
    Theirs(watch::Receiver<bool>),
}

/// Marks an action as no longer in flight when the run that owns it ends.
struct InFlight<'a> {
    writes: &'a Writes,
    id: i64,
    done: watch::Sender<bool>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.writes
            .inflight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        let _ = self.done.send(true);
    }
}

impl Writes {
    /// A write engine. Its sends carry the credentials of `executor`
    /// ([`Executor::with_credentials`]).
    pub fn new(
        executor: Arc<Executor>,
        journal: Arc<Journal>,
        audit: Arc<AuditLog>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            executor,
            journal,
            audit,
            clock,
            listener: None,
            provider_timeout: DEFAULT_PROVIDER_TIMEOUT,
            inflight: Mutex::default(),
            deciding: tokio::sync::Mutex::default(),
            claims: None,
            keep_answers: Duration::from_secs(crate::config::DEFAULT_KEEP_ANSWERS_DAYS * 86_400),
            claimed: Mutex::default(),
        }
    }

    /// Claims every new action in the shared store behind `gate` before recording it, so
    /// that a second host given the same action refuses it ([`WriteError::Claim`]); and
    /// tells the gate which actions the journal holds, for it to re-register them when the
    /// store lost its state.
    #[must_use]
    pub fn claims(mut self, gate: crate::admission::shared::Gate) -> Self {
        let journal = self.journal.clone();
        gate.local_actions(Arc::new(move || match journal.names() {
            Ok(names) => names.iter().map(|(t, a)| claim_name(t, a)).collect(),
            Err(e) => {
                tracing::error!("could not list the journal's actions to re-register them: {e}");
                Vec::new()
            }
        }));
        self.claims = Some(gate);
        self
    }

    /// Why new writes are refused now, if they are: the journal cannot be written (see
    /// [`Journal::failing`]), or the shared store they are claimed in does not answer or lost
    /// its state since this host joined it.
    pub fn refused_because(&self) -> Option<String> {
        if let Some(why) = self.journal.failing() {
            return Some(format!(
                "the journal cannot be written ({why}): no new write can be recorded"
            ));
        }
        let gate = self.claims.as_ref()?;
        if gate.store_lost_state() {
            Some(
                "the shared store lost its state: actions this host's journal does not hold \
                 are refused until an operator runs `sluice store recover`"
                    .into(),
            )
        } else if gate.store_uninitialized() {
            Some(
                "the shared store has no ownership epoch: an operator initialises a new \
                 group's store once with `sluice store init`"
                    .into(),
            )
        } else if !gate.is_up() {
            Some("the shared store does not answer: new actions cannot be claimed".into())
        } else {
            None
        }
    }

    /// Claims action `id` in `inflight` (the locked map), unless another run has it.
    fn claim_locked(
        &self,
        inflight: &mut HashMap<i64, watch::Receiver<bool>>,
        id: i64,
    ) -> Claim<'_> {
        if let Some(rx) = inflight.get(&id) {
            return Claim::Theirs(rx.clone());
        }
        let (done, rx) = watch::channel(false);
        inflight.insert(id, rx);
        Claim::Mine(InFlight {
            writes: self,
            id,
            done,
        })
    }

    /// Whether this process claimed the action named `name` in the shared store.
    fn claimed_here(&self, name: &str) -> bool {
        self.claimed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }

    /// Claims action `id` for this run, unless this host is already working on it.
    fn claim(&self, id: i64) -> Option<InFlight<'_>> {
        let mut inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
        match self.claim_locked(&mut inflight, id) {
            Claim::Mine(guard) => Some(guard),
            Claim::Theirs(_) => None,
        }
    }

    /// How long a provider may still act on a request after receiving it — its own request
    /// timeout ([`DEFAULT_PROVIDER_TIMEOUT`] unless set; GitHub documents 10 s). A lookup
    /// that finds no trace of an uncertain write is believed only when a second lookup this
    /// much later agrees, so that an attempt still at the provider cannot take effect after
    /// the write was sent again. Zero believes the first lookup: only for a provider that
    /// never acts on a request after its client has gone.
    #[must_use]
    pub fn provider_timeout(mut self, timeout: Duration) -> Self {
        self.provider_timeout = timeout;
        self
    }

    /// Reports each [`Step`] of every write to `listener`, synchronously.
    #[must_use]
    pub fn on_step(mut self, listener: impl Fn(Step) + Send + Sync + 'static) -> Self {
        self.listener = Some(Arc::new(listener));
        self
    }

    /// The journal.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// The executor.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    fn step(&self, step: Step) {
        if let Some(l) = &self.listener {
            l(step);
        }
    }

    /// Logs `event` with the journal's mark as committed now: every event of the write
    /// engine follows the journal's commit it reports, so the log never names a mark the
    /// journal did not reach ([`witnesses`]).
    fn audit(&self, event: Event) -> Result<(), WriteError> {
        let mark = self.journal.mark();
        let event = if mark.id.is_empty() {
            event
        } else {
            event.journal(crate::audit::JournalMark {
                id: mark.id,
                seq: mark.seq,
            })
        };
        self.audit
            .append(&event)
            .map(|_| ())
            .map_err(WriteError::Audit)
    }

    fn event(&self, kind: EventKind, action: &Action) -> Event {
        Event::new(kind, self.clock.wall_ms())
            .task(&action.task)
            .action(&action.action)
            .idempotency_key(&action.idempotency_key)
    }

    /// Performs `write` once, whatever happens: see the module's documentation.
    ///
    /// # Errors
    /// [`WriteError::Journal`] when the action was recorded before with another body
    /// ([`JournalError::BodyMismatch`]) or its task was cancelled, or when the journal or
    /// the audit log cannot be written — in which case nothing more was sent.
    /// [`WriteError::Claim`] when another host owns the action, or the shared store cannot
    /// say — in which case nothing was recorded or sent.
    pub async fn write(&self, write: &Write) -> Result<WriteOutcome, WriteError> {
        let pinned;
        let write = if write.call.pool.is_some() {
            // A write keeps one member of its pool for its whole life: chosen before it is
            // recorded, and recorded with it.
            let call = self
                .executor
                .pinned(&write.call)
                .map_err(WriteError::Pool)?;
            pinned = Write {
                call,
                ..write.clone()
            };
            &pinned
        } else {
            write
        };
        if let Some(gate) = &self.claims {
            // Before the journal: an action another host owns is not recorded here at all.
            let name = claim_name(&write.task, &write.action);
            match gate.claim(&name).await {
                // The store lost its state, but this host's journal holds the action: it is
                // this host's, and the journal settles it as always.
                Err(ClaimError::StoreLostState { .. } | ClaimError::NotInitialized { .. })
                    if self.journal.knows(&write.task, &write.action)? => {}
                // This host claimed it in an earlier run, and its journal does not hold it:
                // the host lost its record (a wiped state directory), and the action may
                // have been done. Unless this very process claimed it (a second submit
                // racing the first to the journal), it is refused, never sent.
                Ok(true)
                    if !self.claimed_here(&name)
                        && !self.journal.knows(&write.task, &write.action)? =>
                {
                    tracing::error!(
                        task = %crate::printable::printable(&write.task),
                        action = %crate::printable::printable(&write.action),
                        "refused a write the shared store says this host claimed before and \
                         its journal does not hold: this host lost its state"
                    );
                    return Err(WriteError::Claim(ClaimError::LostLocally {
                        action: name,
                        host: gate.host_id().to_owned(),
                    }));
                }
                Ok(_) => {
                    self.claimed
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(name);
                }
                Err(e) => return Err(e.into()),
            }
        }
        let stored = StoredRequest::of(&write.call);
        let intent = stored.intent(write);
        self.step(Step::Recording);
        let (recorded, claim) = {
            // Recording and claiming the action happen under one lock, so a second submit
            // in this host either finds the first in flight or finds it finished.
            let mut inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
            let recorded = self.journal.record(&intent);
            // Recorded or refused, the journal now answers for the action: this process's
            // claim need not be remembered beside it.
            self.claimed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&claim_name(&write.task, &write.action));
            let recorded = recorded?;
            let claim = self.claim_locked(&mut inflight, recorded.action().id);
            (recorded, claim)
        };
        let _guard = match claim {
            Claim::Mine(guard) => guard,
            Claim::Theirs(mut rx) => {
                let _ = rx.wait_for(|d| *d).await;
                return self.outcome_of(&self.journal.get(recorded.action().id)?);
            }
        };
        match recorded {
            Recorded::New(action) => {
                self.audit(
                    self.event(EventKind::ActionRequested, &action)
                        .scope(&write.call.credential)
                        .detail(&format!("{} {}", action.route, action.class)),
                )?;
                self.step(Step::IntentCommitted);
                if let Some(held) = self.held_for_decision(&action)? {
                    return Ok(held);
                }
                self.send(&action, &write.call, "send").await
            }
            Recorded::Existing(action) => self.resume(action).await,
        }
    }

    /// `action`, left `pending`, when its task waits for a decision on its spent time
    /// budget ([`Journal::awaits_decision`]): the suspension is in the journal, so it holds
    /// across restarts, and the executor is told again, so the task's waiting calls stay
    /// cancelled too.
    fn held_for_decision(&self, action: &Action) -> Result<Option<WriteOutcome>, WriteError> {
        if !self.journal.awaits_decision(&action.task)? {
            return Ok(None);
        }
        self.executor.cancel_task(task_id(&action.task));
        Ok(Some(WriteOutcome::Deferred {
            action: action.clone(),
            terminal: None,
        }))
    }

    /// Carries an action found in the journal on from its state, with its original key.
    async fn resume(&self, action: Action) -> Result<WriteOutcome, WriteError> {
        match action.state {
            // Nothing went out: send it, unless its task was cancelled.
            State::Pending => {
                if self.journal.is_cancelled(&action.task)? {
                    return self.cancel_action(&action);
                }
                if let Some(held) = self.held_for_decision(&action)? {
                    return Ok(held);
                }
                let stored = StoredRequest::load(&action)?;
                let call = stored.call(&action, self.journal.body(action.id)?);
                self.send(&action, &call, "send").await
            }
            // Something may have gone out: find out, never resend blindly.
            State::Sent | State::Uncertain | State::Reconciling => self.settle(action).await,
            // The journal lost its record of it and the audit log says it was asked for: it
            // may have happened, and only a person can say.
            State::Lost => self.escalate(
                &action,
                Kind::RecordLost,
                "the journal lost this action's record (it was restored from an older copy, \
                 replaced or emptied, and an operator accepted it); the audit log shows it \
                 was asked for, so it may have happened: nothing is sent",
                None,
                None,
            ),
            _ => self.outcome_of(&action),
        }
    }

    /// Cancels `task`: its waiting calls are refused at once and never wake, its actions
    /// that sent nothing are cancelled, and it can start no new ones. Actions that may
    /// already have happened are still settled (by reading, never by resending). Returns
    /// how many waiting calls and unsent actions were cancelled.
    ///
    /// # Errors
    /// The journal or the audit log failed.
    pub fn cancel_task(&self, task: &str) -> Result<TaskCancelled, WriteError> {
        let waiting_calls = self.executor.cancel_task(task_id(task));
        let n = self.journal.cancel_task(task, self.clock.wall_ms())?;
        self.audit(
            Event::new(EventKind::Cancelled, self.clock.wall_ms())
                .task(task)
                .detail(&format!("task cancelled; {n} unsent action(s) cancelled")),
        )?;
        Ok(TaskCancelled {
            waiting_calls,
            unsent_actions: n,
        })
    }

    fn cancel_action(&self, action: &Action) -> Result<WriteOutcome, WriteError> {
        let action = self.journal.advance(action.id, State::Cancelled, None)?;
        self.audit(self.event(EventKind::Cancelled, &action))?;
        Ok(WriteOutcome::Cancelled { action })
    }

    /// What the journal says of an action nobody in this host is working on.
    fn outcome_of(&self, action: &Action) -> Result<WriteOutcome, WriteError> {
        let action = action.clone();
        Ok(match action.state {
            State::Succeeded => WriteOutcome::Succeeded {
                response: self.kept_answer(action.id),
                action,
                replayed: true,
            },
            State::Failed => WriteOutcome::Failed {
                action,
                terminal: None,
            },
            State::Cancelled => WriteOutcome::Cancelled { action },
            State::Refused => WriteOutcome::Refused {
                action,
                terminal: None,
            },
            State::Escalated | State::Lost => {
                let escalation = self
                    .journal
                    .escalations()
                    .of_action(action.id)?
                    .unwrap_or(0);
                WriteOutcome::Escalated { action, escalation }
            }
            State::Pending | State::Sent | State::Uncertain | State::Reconciling => {
                WriteOutcome::Deferred {
                    action,
                    terminal: None,
                }
            }
        })
    }

    /// Raises an escalation about `action` (moving it to `escalated`), audited.
    fn escalate(
        &self,
        action: &Action,
        kind: Kind,
        reason: &str,
        terminal: Option<&Terminal>,
        query: Option<String>,
    ) -> Result<WriteOutcome, WriteError> {
        let case = case::build(self, action, kind, reason, terminal, query)?;
        let json = serde_json::to_string_pretty(&case).unwrap_or_default();
        let id = self.journal.escalations().open(
            Some(action.id),
            &action.task,
            kind,
            &json,
            self.clock.wall_ms(),
        )?;
        self.audit(
            self.event(EventKind::Escalated, action)
                .attempt(action.attempts)
                .detail(&format!("escalation {id} ({}): {reason}", kind.name())),
        )?;
        let action = self.journal.get(action.id)?;
        Ok(WriteOutcome::Escalated {
            action,
            escalation: id,
        })
    }
}
