//! The action journal: one row per logical action, written to SQLite before the first byte
//! of a write goes out.
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
//! `reconciling`, `sent` or `cancelled` ([`escalations`]).
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

use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
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
    path: String,
    conn: Mutex<Connection>,
    health: health::Health,
}

const COLUMNS: &str = "id, task, action, provider, method, route, class, idempotency_key, \
                       client_reference, state, attempts, operation_id, request, goal, \
                       body_sha256";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Action> {
    let state: String = r.get(9)?;
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
        state: State::parse(&state).ok_or_else(|| Unknown::column(9, "state", &state))?,
        attempts: r.get(10)?,
        operation_id: r.get(11)?,
        request: r.get(12)?,
        goal: r.get(13)?,
        body_sha256: to_hex(&r.get::<_, Vec<u8>>(14)?),
    })
}

/// The client reference of action `action` of task `task`: derived from the names, so a
/// caller can put it in the body (provider metadata) before the action is recorded.
pub fn client_reference(task: &str, action: &str) -> String {
    let digest = Sha256::digest(format!("{task}\n{action}"));
    format!("sluice-{}", &to_hex(&digest)[..24])
}

impl Journal {
    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state named `name`, read from the journal: a name sluice never writes means the
    /// row was altered, and is corruption, not a missing action.
    fn state(&self, name: &str) -> Result<State, JournalError> {
        State::parse(name).ok_or_else(|| self.sqlite(Unknown::column(0, "state", name)))
    }

    /// The error for `error`, raised by SQLite on this journal: corruption when it says the
    /// file is damaged.
    pub(crate) fn sqlite(&self, error: rusqlite::Error) -> JournalError {
        self.note(&error);
        JournalError::from_sqlite(&self.path, error)
    }

    /// Records the intent to perform an action, committed before this returns; or finds the
    /// action recorded before.
    ///
    /// # Errors
    /// [`JournalError::BodyMismatch`] when the action was recorded with another body, or a
    /// SQLite failure.
    pub fn record(&self, intent: &Intent) -> Result<Recorded, JournalError> {
        let digest = Sha256::digest(&intent.body).to_vec();
        let mut conn = self.conn();
        // Immediate: the write lock is taken before the lookup, so two hosts recording the
        // same action queue here and the second finds the first's row.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        let found: Option<(Vec<u8>, i64)> = tx
            .query_row(
                "SELECT body_sha256, id FROM actions WHERE task = ?1 AND action = ?2",
                params![intent.task, intent.action],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sqlite(e))?;
        let cancelled: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM cancelled_tasks WHERE task = ?1)",
                [&intent.task],
                |r| r.get(0),
            )
            .map_err(|e| self.sqlite(e))?;
        if let Some((existing, id)) = found {
            if existing != digest {
                return Err(JournalError::BodyMismatch {
                    task: intent.task.clone(),
                    action: intent.action.clone(),
                });
            }
            let action = tx
                .query_row(
                    &format!("SELECT {COLUMNS} FROM actions WHERE id = ?1"),
                    [id],
                    row,
                )
                .map_err(|e| self.sqlite(e))?;
            return Ok(Recorded::Existing(action));
        }
        if cancelled {
            return Err(JournalError::TaskCancelled(intent.task.clone()));
        }
        let key = new_idempotency_key()?;
        let reference = client_reference(&intent.task, &intent.action);
        tx.execute(
            "INSERT INTO actions (task, action, provider, method, route, class, body, \
             body_sha256, idempotency_key, client_reference, state, request, goal) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11, ?12)",
            params![
                intent.task,
                intent.action,
                intent.provider,
                intent.method,
                intent.route,
                intent.class,
                intent.body,
                digest,
                key,
                reference,
                intent.request,
                intent.goal
            ],
        )
        .map_err(|e| self.sqlite(e))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| self.sqlite(e))?;
        drop(conn);
        self.get(id).map(Recorded::New)
    }

    /// The action with row id `id`.
    ///
    /// # Errors
    /// [`JournalError::Missing`] or a SQLite failure.
    pub fn get(&self, id: i64) -> Result<Action, JournalError> {
        self.conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM actions WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(|e| self.sqlite(e))?
            .ok_or(JournalError::Missing(id))
    }

    /// The stored body of action `id`, for a resend with the same key.
    ///
    /// # Errors
    /// [`JournalError::Missing`] or a SQLite failure.
    pub fn body(&self, id: i64) -> Result<Vec<u8>, JournalError> {
        self.conn()
            .query_row("SELECT body FROM actions WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.sqlite(e))?
            .ok_or(JournalError::Missing(id))
    }

    /// Moves action `id` to `to`, counting an attempt when `to` is [`State::Sent`] and
    /// keeping `operation_id` when one is given. Committed before this returns.
    ///
    /// # Errors
    /// [`JournalError::Transition`] for a move the states do not allow, or a SQLite failure.
    pub fn advance(
        &self,
        id: i64,
        to: State,
        operation_id: Option<&str>,
    ) -> Result<Action, JournalError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        let from: Option<String> = tx
            .query_row("SELECT state FROM actions WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sqlite(e))?;
        let from = from.ok_or(JournalError::Missing(id))?;
        let from = self.state(&from)?;
        if !from.may_become(to) {
            return Err(JournalError::Transition {
                id,
                from: from.name(),
                to: to.name(),
            });
        }
        tx.execute(
            "UPDATE actions SET state = ?2, \
             attempts = attempts + (?2 = 'sent'), \
             operation_id = COALESCE(?3, operation_id) WHERE id = ?1",
            params![id, to.name(), operation_id],
        )
        .map_err(|e| self.sqlite(e))?;
        tx.commit().map_err(|e| self.sqlite(e))?;
        drop(conn);
        self.get(id)
    }

    /// Every action not yet final, oldest first: what a restarted host resumes.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn unfinished(&self) -> Result<Vec<Action>, JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {COLUMNS} FROM actions \
                 WHERE state IN ('pending', 'sent', 'uncertain', 'reconciling') ORDER BY id"
            ))
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt.query_map([], row).map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    /// Cancels `task`: its actions that sent nothing are cancelled, and it can record no
    /// new ones. Returns how many actions were cancelled. Actions that may already have
    /// happened stay to be settled (reconciliation reads; it never resends for a cancelled
    /// task).
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn cancel_task(&self, task: &str, at_ms: i64) -> Result<usize, JournalError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        tx.execute(
            "INSERT OR IGNORE INTO cancelled_tasks (task, at_ms) VALUES (?1, ?2)",
            params![task, at_ms],
        )
        .map_err(|e| self.sqlite(e))?;
        let n = tx
            .execute(
                "UPDATE actions SET state = 'cancelled' WHERE task = ?1 \
                 AND state IN ('pending', 'escalated') AND attempts = 0",
                [task],
            )
            .map_err(|e| self.sqlite(e))?;
        tx.commit().map_err(|e| self.sqlite(e))?;
        Ok(n)
    }

    /// Whether `task` waits for a person's decision on its spent time budget: a
    /// `time_budget` escalation of it not yet carried out. Such a task sends nothing — in this
    /// host or, after a restart, in the next — until the decision (continue, or cancel) is
    /// applied.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn awaits_decision(&self, task: &str) -> Result<bool, JournalError> {
        self.conn()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM escalations \
                 WHERE task = ?1 AND kind = ?2 AND applied = 0)",
                rusqlite::params![task, escalations::Kind::TimeBudget.name()],
                |r| r.get(0),
            )
            .map_err(|e| self.sqlite(e))
    }

    /// Whether `task` was cancelled.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn is_cancelled(&self, task: &str) -> Result<bool, JournalError> {
        self.conn()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM cancelled_tasks WHERE task = ?1)",
                [task],
                |r| r.get(0),
            )
            .map_err(|e| self.sqlite(e))
    }

    /// Every action, oldest first (for operators' listings).
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn all(&self) -> Result<Vec<Action>, JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!("SELECT {COLUMNS} FROM actions ORDER BY id"))
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt.query_map([], row).map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    /// Every action's task and name, oldest first: what this host owns.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn names(&self) -> Result<Vec<(String, String)>, JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT task, action FROM actions ORDER BY id")
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    /// Whether action `action` of `task` is recorded here.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn knows(&self, task: &str, action: &str) -> Result<bool, JournalError> {
        self.conn()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM actions WHERE task = ?1 AND action = ?2)",
                params![task, action],
                |r| r.get(0),
            )
            .map_err(|e| self.sqlite(e))
    }

    /// The action `action` of `task`, if recorded.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn find(&self, task: &str, action: &str) -> Result<Option<Action>, JournalError> {
        self.conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM actions WHERE task = ?1 AND action = ?2"),
                params![task, action],
                row,
            )
            .optional()
            .map_err(|e| self.sqlite(e))
    }
}

mod answers;
mod attempts;
mod error;
pub mod escalations;
mod health;
mod open;
mod state;
pub mod text;

pub use answers::{KeptAnswer, MAX_KEPT_ANSWER};
pub use attempts::AttemptRecord;
pub use error::JournalError;
use error::Unknown;
pub use open::{APPLICATION_ID, Probe, SCHEMA_VERSION};
pub use state::State;

#[cfg(test)]
mod tests;
