//! The action journal: one row per logical action, written before the first byte of a write
//! goes out — to the host's own SQLite file, or to the PostgreSQL a group of hosts shares
//! ([`Journal::connect`]; each action then belongs to the host that recorded it, and passes
//! to another when that host is gone: `group`).
//!
//! A duplicated payment is the failure this exists to prevent. So the intent to act — the
//! action's identity, its body, and the idempotency key generated for it once — is committed
//! (WAL, `synchronous=FULL`) before any attempt is sent; every attempt, and every run of the
//! host after a restart, reuses that key. The same action submitted twice finds its row and
//! is not sent again; the same action with a different body is refused, because reusing the
//! key for it would make the provider answer for the first body.
//!
//! States: `pending` (intent committed, nothing sent) → `sent` → `succeeded` | `failed` |
//! `uncertain` (sent, outcome unknown) → `reconciling` → `succeeded` | `sent` (a resend with
//! the same key) | `escalated`; any unfinished state → `cancelled`. `succeeded`, `failed`
//! and `cancelled` are final; `escalated` waits for a person's decision, which moves it to
//! `reconciling`, `sent` or `cancelled` ([`escalations`]). `pending` → `refused` when the
//! write was refused before its first byte: nothing but the agent's resubmit of the same
//! action moves it back to `pending`. `lost` is an action the audit log knows and an
//! accepted journal had lost: never sent; a resubmit escalates it.
//!
//! The journal carries a [`Mark`]: its id, drawn when it was made, and a sequence this host
//! bumps in every transaction that records or moves an action. The audit log records the
//! mark with every event, after the journal's commit, so a journal whose mark is behind the
//! audit log's last (or has another id) lost records: see [`crate::writes::witnesses`].
//!
//! Cancelling a task ([`Journal::cancel_task`]) cancels its actions that sent nothing and
//! refuses new ones; an action that may already have happened is still settled by
//! reconciliation, which never resends for a cancelled task.
//!
//! Only a host creates a journal ([`Journal::open_or_create`]: `0600`, whatever the umask,
//! stamped with [`APPLICATION_ID`] and [`SCHEMA_VERSION`]); an operator's command opens one
//! that exists ([`Journal::open_existing`]), and neither writes a byte to a file before
//! knowing it is a sluice journal it can read. Damage is reported as
//! [`JournalError::Corrupt`], never as a missing row.
//!
//! **One owner.** [`Journal`] is one value however many concerns it serves (actions and
//! their attempts, escalations, budgets' use, a group's leases, kept answers), because they
//! share one connection and one transaction boundary: a step that spans two concerns commits
//! in one transaction — an action's move and the mark it bumps, an escalation resolved with
//! the approval it records and the action it cancels. Split into owners per concern, each
//! would hold a connection of its own, such a step would commit in two transactions with a
//! crash possible between them, and SQLite lets one writer in at a time anyway. The concerns
//! are files of their own instead, whose floors `docs/architecture.md` writes down, and each
//! is a view of the one journal, in the style of a runtime's metrics handle: the journal
//! itself records and moves actions; [`Journal::escalations`] holds the cases and their
//! decisions, [`Journal::group`] the leases of a group's hosts, [`Journal::answers`] the
//! answers kept for writes, and `Journal::budget_use` (made by `budget`, which sits above
//! the journal) what tenants spent. A view borrows the journal; its steps run on the
//! journal's connection, in the journal's transactions.

use std::sync::Mutex;

use rusqlite::Connection;
use sha2::{Digest, Sha256};

use crate::hex::to_hex;

/// A logical action to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    /// The task it belongs to.
    pub task: String,
    /// The action's name within the task, stable across retries and restarts (for example
    /// `charge-invoice-42`).
    pub action: String,
    /// The provider.
    pub provider: String,
    /// The HTTP method.
    pub method: String,
    /// The route template (no ids, no query).
    pub route: String,
    /// The request class.
    pub class: String,
    /// The request body, stored for replay with the same key.
    pub body: Vec<u8>,
    /// What a restarted host needs to send the request again (URL, headers that are not
    /// credentials, scope, tenant), opaque to the journal. Never holds a credential.
    pub request: String,
    /// The task's goal, in words, shown to whoever resolves an escalation.
    pub goal: String,
}

/// A recorded action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// The row id.
    pub id: i64,
    /// The task.
    pub task: String,
    /// The action's name within the task.
    pub action: String,
    /// The provider.
    pub provider: String,
    /// The method.
    pub method: String,
    /// The route template.
    pub route: String,
    /// The request class.
    pub class: String,
    /// The idempotency key generated once for this action.
    pub idempotency_key: String,
    /// The client's reference for the action, for providers that store one.
    pub client_reference: String,
    /// Where it is.
    pub state: State,
    /// Attempts sent.
    pub attempts: u32,
    /// The provider's operation id, once one came back.
    pub operation_id: Option<String>,
    /// The request as stored for a resend (see [`Intent::request`]).
    pub request: String,
    /// The task's goal.
    pub goal: String,
    /// The body's SHA-256, hex: the action's fingerprint, shown instead of the body.
    pub body_sha256: String,
}

/// What recording an intent found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// A new action: send it with its key.
    New(Action),
    /// The action was recorded before (a retry, a restart, or a second submit): do not start
    /// it again; carry on from its state.
    Existing(Action),
}

impl Recorded {
    /// The action, new or found.
    pub fn action(&self) -> &Action {
        match self {
            Self::New(a) | Self::Existing(a) => a,
        }
    }
}

/// A new idempotency key: 128 bits from the operating system's randomness, as the providers'
/// own clients make theirs, so no other client (or host) can guess or repeat it.
///
/// # Errors
/// [`JournalError::Random`] when the operating system gives none.
pub fn new_idempotency_key() -> Result<String, JournalError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| JournalError::Random(e.to_string()))?;
    Ok(format!("sluice-{}", to_hex(&bytes)))
}

/// The journal.
#[derive(Debug)]
pub struct Journal {
    /// The file, or the database's URL without its password.
    path: String,
    /// The host whose actions these are, in a group's database; empty in a host's own file.
    owner: String,
    /// How long this host's lease lasts, in a group's journal; this process's token in it;
    /// and the renewals in a row since one failed.
    lease_ttl: std::time::Duration,
    process: String,
    renewed: std::sync::Arc<std::sync::atomic::AtomicU32>,
    backend: Backend,
    health: health::Health,
    /// This host's mark, as last committed ([`Journal::mark`]).
    marks: marks::Marks,
    /// The secret new actions' idempotency keys are derived under; `None`: drawn at random.
    key_secret: Option<KeySecret>,
}

/// Where the journal is kept.
#[derive(Debug)]
enum Backend {
    /// A file of the host's own.
    Sqlite(Mutex<Connection>),
    /// A database a group of hosts shares.
    #[cfg(feature = "postgres")]
    Postgres(postgres::Postgres),
}

const COLUMNS: &str = "id, task, action, provider, method, route, class, idempotency_key, \
                       client_reference, state, attempts, operation_id, request, goal, \
                       body_sha256";

fn action_row(r: &Row) -> Result<Action, BadColumn> {
    Ok(Action {
        id: r.get(0)?,
        task: r.get(1)?,
        action: r.get(2)?,
        provider: r.get(3)?,
        method: r.get(4)?,
        route: r.get(5)?,
        class: r.get(6)?,
        idempotency_key: r.get(7)?,
        client_reference: r.get(8)?,
        state: r.parsed(9, "state", State::parse)?,
        attempts: r.get(10)?,
        operation_id: r.get(11)?,
        request: r.get(12)?,
        goal: r.get(13)?,
        body_sha256: to_hex(&r.get::<Vec<u8>>(14)?),
    })
}

/// Every action `sql` (which selects [`COLUMNS`]) finds.
fn actions(c: Conn<'_>, sql: &str, params: &[Value]) -> Result<Vec<Action>, Fail> {
    let rows = c.rows(sql, params)?;
    Ok(rows.iter().map(action_row).collect::<Result<_, _>>()?)
}

/// Action `id`, read inside a transaction.
fn action_in(c: Conn<'_>, id: i64) -> Result<Action, Fail> {
    let sql = format!("SELECT {COLUMNS} FROM actions WHERE id = ?1");
    actions(c, &sql, values![id])?
        .pop()
        .ok_or(Fail::Journal(JournalError::Missing(id)))
}

/// The client reference of action `action` of task `task`: derived from the names, so a
/// caller can put it in the body (provider metadata) before the action is recorded.
pub fn client_reference(task: &str, action: &str) -> String {
    let digest = Sha256::digest(format!("{task}\n{action}"));
    format!("sluice-{}", &to_hex(&digest)[..24])
}

impl Journal {
    /// The file's connection, for tests that alter it behind the journal's back.
    #[cfg(test)]
    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        match &self.backend {
            Backend::Sqlite(c) => c.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
            #[cfg(feature = "postgres")]
            Backend::Postgres(_) => panic!("a test asked a PostgreSQL journal for its file"),
        }
    }

    /// The state of action `id`, read inside a transaction that changes it: refused when
    /// another host of the group owns the action.
    pub(crate) fn own(&self, c: Conn<'_>, id: i64) -> Result<State, Fail> {
        let found = c.row(
            "SELECT state, owner, task, action FROM actions WHERE id = ?1",
            values![id],
        )?;
        let found = found.ok_or(JournalError::Missing(id))?;
        let owner: String = found.get(1)?;
        if owner != self.owner {
            return Err(JournalError::OwnedElsewhere {
                task: found.get(2)?,
                action: found.get(3)?,
                owner,
            }
            .into());
        }
        Ok(found.parsed(0, "state", State::parse)?)
    }

    /// Its escalations and the decisions that resolve them.
    pub fn escalations(&self) -> escalations::Cases<'_> {
        escalations::Cases { journal: self }
    }

    /// The group's leases, in a journal a group of hosts shares.
    pub fn group(&self) -> Leases<'_> {
        Leases { journal: self }
    }

    /// The answers kept for writes.
    pub fn answers(&self) -> Answers<'_> {
        Answers { journal: self }
    }

    /// Whether a group of hosts shares this journal (PostgreSQL): decisions an operator
    /// makes through another host are carried out by this one only when it looks.
    pub fn is_shared(&self) -> bool {
        !matches!(self.backend, Backend::Sqlite(_))
    }

    /// Derives the idempotency key of every action recorded from now on from its identity
    /// under `secret` ([`keys`]), instead of drawing it at random: a resend after any loss
    /// of the journal carries the same key. Actions recorded before keep theirs.
    #[must_use]
    pub fn with_key_secret(mut self, secret: KeySecret) -> Self {
        self.key_secret = Some(secret);
        self
    }

    /// The journal's file, or its database's URL without the password.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The host whose actions this journal settles (empty in a host's own file).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Records the intent to perform an action, committed before this returns; or finds the
    /// action recorded before.
    ///
    /// # Errors
    /// [`JournalError::BodyMismatch`] when the action was recorded with another body,
    /// [`JournalError::OwnedElsewhere`] when another host of the group recorded it and may
    /// still send it (one that is settled, or escalated, is found here too),
    /// [`JournalError::TaskCancelled`], or a database failure.
    pub fn record(&self, intent: &Intent) -> Result<Recorded, JournalError> {
        let digest = Sha256::digest(&intent.body).to_vec();
        let key = match &self.key_secret {
            Some(secret) => secret.key(&intent.task, &intent.action),
            None => new_idempotency_key()?,
        };
        let reference = client_reference(&intent.task, &intent.action);
        // One transaction that holds the write lock from the lookup on: two hosts recording
        // the same action queue here and the second finds the first's row.
        self.write_marked(|c| {
            let found = c.row(
                "SELECT body_sha256, owner, id FROM actions WHERE task = ?1 AND action = ?2",
                values![&intent.task, &intent.action],
            )?;
            if let Some(found) = found {
                let id: i64 = found.get(2)?;
                let state = action_in(c, id)?.state;
                // A lost record's body is not known: whatever is sent now, it goes to a
                // person, never to the provider.
                if state != State::Lost && found.get::<Vec<u8>>(0)? != digest {
                    return Err(JournalError::BodyMismatch {
                        task: intent.task.clone(),
                        action: intent.action.clone(),
                    }
                    .into());
                }
                let owner: String = found.get(1)?;
                if state == State::Refused && owner == self.owner {
                    // The agent submits again an action refused before it was sent: only
                    // this reopens it.
                    c.exec(
                        "UPDATE actions SET state = 'pending' WHERE id = ?1",
                        values![id],
                    )?;
                }
                let action = action_in(c, id)?;
                // Another host's action that is settled (or waits for a person) is only
                // answered from here; one that may still be sent is its owner's to carry on.
                if owner != self.owner
                    && !(action.state.is_final() || action.state == State::Escalated)
                {
                    return Err(JournalError::OwnedElsewhere {
                        task: intent.task.clone(),
                        action: intent.action.clone(),
                        owner,
                    }
                    .into());
                }
                return Ok(Recorded::Existing(action));
            }
            let cancelled: bool = c.one(
                "SELECT EXISTS (SELECT 1 FROM cancelled_tasks WHERE task = ?1)",
                values![&intent.task],
            )?;
            if cancelled {
                return Err(JournalError::TaskCancelled(intent.task.clone()).into());
            }
            let id: i64 = c.one(
                "INSERT INTO actions (task, action, provider, method, route, class, body, \
                 body_sha256, idempotency_key, client_reference, state, request, goal, owner) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11, ?12, ?13) \
                 RETURNING id",
                values![
                    &intent.task,
                    &intent.action,
                    &intent.provider,
                    &intent.method,
                    &intent.route,
                    &intent.class,
                    &intent.body,
                    &digest,
                    &key,
                    &reference,
                    &intent.request,
                    &intent.goal,
                    &self.owner
                ],
            )?;
            Ok(Recorded::New(action_in(c, id)?))
        })
    }

    /// The action with row id `id`.
    ///
    /// # Errors
    /// [`JournalError::Missing`] or a database failure.
    pub fn get(&self, id: i64) -> Result<Action, JournalError> {
        self.read(|c| action_in(c, id))
    }

    /// The stored body of action `id`, for a resend with the same key.
    ///
    /// # Errors
    /// [`JournalError::Missing`] or a database failure.
    pub fn body(&self, id: i64) -> Result<Vec<u8>, JournalError> {
        self.read(|c| {
            let row = c.row("SELECT body FROM actions WHERE id = ?1", values![id])?;
            Ok(row.ok_or(JournalError::Missing(id))?.get(0)?)
        })
    }

    /// Moves action `id` to `to`, counting an attempt when `to` is [`State::Sent`] and
    /// keeping `operation_id` when one is given. Committed before this returns.
    ///
    /// # Errors
    /// [`JournalError::Transition`] for a move the states do not allow,
    /// [`JournalError::OwnedElsewhere`] for another host's action, or a database failure.
    pub fn advance(
        &self,
        id: i64,
        to: State,
        operation_id: Option<&str>,
    ) -> Result<Action, JournalError> {
        self.write_marked(|c| {
            let from = self.own(c, id)?;
            if !from.may_become(to) {
                return Err(JournalError::Transition {
                    id,
                    from: from.name(),
                    to: to.name(),
                }
                .into());
            }
            if to == State::Sent {
                // The last step before an attempt's first byte.
                self.group().check(c)?;
            }
            c.exec(
                "UPDATE actions SET state = ?2, \
                 attempts = attempts + CASE WHEN ?2 = 'sent' THEN 1 ELSE 0 END, \
                 operation_id = COALESCE(?3, operation_id) WHERE id = ?1",
                values![id, to.name(), operation_id],
            )?;
            action_in(c, id)
        })
    }

    /// Every action of this host not yet final, oldest first: what a restarted host
    /// resumes.
    ///
    /// # Errors
    /// A database failure.
    pub fn unfinished(&self) -> Result<Vec<Action>, JournalError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM actions WHERE owner = ?1 \
             AND state IN ('pending', 'sent', 'uncertain', 'reconciling') ORDER BY id"
        );
        self.read(|c| actions(c, &sql, values![&self.owner]))
    }

    /// Cancels `task`: its actions that sent nothing are cancelled, and it can record no
    /// new ones. Returns how many actions were cancelled. Actions that may already have
    /// happened stay to be settled (reconciliation reads; it never resends for a cancelled
    /// task).
    ///
    /// # Errors
    /// A database failure.
    pub fn cancel_task(&self, task: &str, at_ms: i64) -> Result<usize, JournalError> {
        self.write_marked(|c| Ok(cancel_task_in(c, task, at_ms)?))
    }

    /// Whether `task` waits for a person's decision on its spent time budget: a
    /// `time_budget` escalation of it not yet carried out. Such a task sends nothing — in this
    /// host or, after a restart, in the next — until the decision (continue, or cancel) is
    /// applied.
    ///
    /// # Errors
    /// A database failure.
    pub fn awaits_decision(&self, task: &str) -> Result<bool, JournalError> {
        self.read(|c| {
            Ok(c.one(
                "SELECT EXISTS (SELECT 1 FROM escalations \
                 WHERE task = ?1 AND kind = ?2 AND applied = 0)",
                values![task, escalations::Kind::TimeBudget.name()],
            )?)
        })
    }

    /// Whether `task` was cancelled.
    ///
    /// # Errors
    /// A database failure.
    pub fn is_cancelled(&self, task: &str) -> Result<bool, JournalError> {
        self.read(|c| {
            Ok(c.one(
                "SELECT EXISTS (SELECT 1 FROM cancelled_tasks WHERE task = ?1)",
                values![task],
            )?)
        })
    }

    /// Every action, oldest first (for operators' listings).
    ///
    /// # Errors
    /// A database failure.
    pub fn all(&self) -> Result<Vec<Action>, JournalError> {
        let sql = format!("SELECT {COLUMNS} FROM actions ORDER BY id");
        self.read(|c| actions(c, &sql, &[]))
    }

    /// Every action's task and name of this host, oldest first: what this host owns.
    ///
    /// # Errors
    /// A database failure.
    pub fn names(&self) -> Result<Vec<(String, String)>, JournalError> {
        self.read(|c| {
            let rows = c.rows(
                "SELECT task, action FROM actions WHERE owner = ?1 ORDER BY id",
                values![&self.owner],
            )?;
            Ok(rows
                .iter()
                .map(|r| Ok((r.get(0)?, r.get(1)?)))
                .collect::<Result<_, BadColumn>>()?)
        })
    }

    /// Whether action `action` of `task` is recorded here, by this host.
    ///
    /// # Errors
    /// A database failure.
    pub fn knows(&self, task: &str, action: &str) -> Result<bool, JournalError> {
        self.read(|c| {
            Ok(c.one(
                "SELECT EXISTS (SELECT 1 FROM actions \
                 WHERE task = ?1 AND action = ?2 AND owner = ?3)",
                values![task, action, &self.owner],
            )?)
        })
    }

    /// The action `action` of `task`, if recorded.
    ///
    /// # Errors
    /// A database failure.
    pub fn find(&self, task: &str, action: &str) -> Result<Option<Action>, JournalError> {
        let sql = format!("SELECT {COLUMNS} FROM actions WHERE task = ?1 AND action = ?2");
        self.read(|c| Ok(actions(c, &sql, values![task, action])?.pop()))
    }
}

/// Cancels `task` inside a transaction: marks it, and cancels its actions that sent
/// nothing. Returns how many.
pub(crate) fn cancel_task_in(c: Conn<'_>, task: &str, at_ms: i64) -> Result<usize, DbError> {
    c.exec(
        "INSERT INTO cancelled_tasks (task, at_ms) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        values![task, at_ms],
    )?;
    let n = c.exec(
        "UPDATE actions SET state = 'cancelled' WHERE task = ?1 \
         AND state IN ('pending', 'refused', 'escalated') AND attempts = 0",
        values![task],
    )?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

mod answers;
mod attempts;
pub(crate) mod db;
mod error;
pub mod escalations;
mod group;
mod health;
pub mod keys;
mod marks;
mod open;
#[cfg(feature = "postgres")]
mod pg_error;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod state;
pub mod text;
mod transaction;
pub(crate) mod value;

pub use answers::{Answers, KeptAnswer, MAX_KEPT_ANSWER};
pub use attempts::AttemptRecord;
use db::Conn;
pub use error::JournalError;
pub use group::{DEFAULT_LEASE_TTL, Leases, TakenOver};
pub use keys::KeySecret;
pub use marks::Mark;
pub use open::{APPLICATION_ID, Probe, SCHEMA_VERSION};
pub use state::State;
pub(crate) use value::Fail;
use value::{BadColumn, DbError, Row, Value, values};

#[cfg(test)]
pub(crate) mod tests;
