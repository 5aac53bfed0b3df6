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
//! `uncertain` (sent, outcome unknown) → `reconciling` → `succeeded` | `escalated`; any
//! unfinished state → `cancelled`. `succeeded`, `failed`, `escalated` and `cancelled` are
//! final.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use sha2::{Digest, Sha256};

/// Where an action is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// The intent is committed; nothing was sent.
    Pending,
    /// An attempt went out.
    Sent,
    /// The provider did it.
    Succeeded,
    /// The provider refused it, for sure.
    Failed,
    /// An attempt went out and no trustworthy answer came back.
    Uncertain,
    /// A status query is under way.
    Reconciling,
    /// A person must decide.
    Escalated,
    /// Its task was cancelled before it finished.
    Cancelled,
}

impl State {
    const ALL: [Self; 8] = [
        Self::Pending,
        Self::Sent,
        Self::Succeeded,
        Self::Failed,
        Self::Uncertain,
        Self::Reconciling,
        Self::Escalated,
        Self::Cancelled,
    ];

    /// The state's name in the journal.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Sent => "sent",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Uncertain => "uncertain",
            Self::Reconciling => "reconciling",
            Self::Escalated => "escalated",
            Self::Cancelled => "cancelled",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.name() == s)
    }

    /// Whether nothing more happens to the action.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::Escalated | Self::Cancelled
        )
    }

    /// Whether the journal allows moving from `self` to `to`.
    pub fn may_become(self, to: Self) -> bool {
        use State as S;
        match (self, to) {
            (from, _) if from.is_final() => false,
            (_, S::Cancelled) => true,
            (S::Pending, S::Sent | S::Failed) => true,
            (S::Sent, S::Sent | S::Succeeded | S::Failed | S::Uncertain) => true,
            (S::Uncertain, S::Reconciling | S::Escalated) => true,
            (S::Reconciling, S::Succeeded | S::Sent | S::Escalated | S::Reconciling) => true,
            _ => false,
        }
    }
}

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

/// A journal failure.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// SQLite failed.
    #[error("the journal at {path}: {source}")]
    Sqlite {
        /// The journal file.
        path: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The same action was recorded with another body.
    #[error(
        "action `{action}` of task `{task}` was recorded with a different body; its \
         idempotency key belongs to the first body: name the new action differently"
    )]
    BodyMismatch {
        /// The task.
        task: String,
        /// The action.
        action: String,
    },
    /// A state change the journal does not allow.
    #[error("action {id} cannot go from {from} to {to}")]
    Transition {
        /// The action's row id.
        id: i64,
        /// Its state.
        from: &'static str,
        /// The state asked for.
        to: &'static str,
    },
    /// No such action.
    #[error("no action {0} in the journal")]
    Missing(i64),
}

/// The journal.
#[derive(Debug)]
pub struct Journal {
    path: String,
    conn: Mutex<Connection>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS actions (
    id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    action TEXT NOT NULL,
    provider TEXT NOT NULL,
    method TEXT NOT NULL,
    route TEXT NOT NULL,
    class TEXT NOT NULL,
    body BLOB NOT NULL,
    body_sha256 BLOB NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    client_reference TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    operation_id TEXT,
    UNIQUE (task, action)
);
CREATE INDEX IF NOT EXISTS actions_state ON actions (state);
";

const COLUMNS: &str = "id, task, action, provider, method, route, class, idempotency_key, \
                       client_reference, state, attempts, operation_id";

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
        state: State::parse(&state).unwrap_or(State::Escalated),
        attempts: r.get(10)?,
        operation_id: r.get(11)?,
    })
}

impl Journal {
    /// Opens (or creates) the journal at `path`: WAL, `synchronous=FULL`.
    ///
    /// # Errors
    /// [`JournalError::Sqlite`] naming the file.
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        let name = path.display().to_string();
        let err = |source| JournalError::Sqlite {
            path: name.clone(),
            source,
        };
        let conn = Connection::open(path).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(Self {
            path: name,
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sqlite(&self, source: rusqlite::Error) -> JournalError {
        JournalError::Sqlite {
            path: self.path.clone(),
            source,
        }
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
        let key = format!("sluice-{:032x}", fastrand::u128(..));
        let digest_of_name = Sha256::digest(format!("{}\n{}", intent.task, intent.action));
        let reference = format!("sluice:{}", &format!("{digest_of_name:x}")[..24]);
        tx.execute(
            "INSERT INTO actions (task, action, provider, method, route, class, body, \
             body_sha256, idempotency_key, client_reference, state) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending')",
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
                reference
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
        let from = from
            .as_deref()
            .and_then(State::parse)
            .ok_or(JournalError::Missing(id))?;
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

    /// Cancels every unfinished action of `task`; returns how many.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn cancel_task(&self, task: &str) -> Result<usize, JournalError> {
        self.conn()
            .execute(
                "UPDATE actions SET state = 'cancelled' WHERE task = ?1 \
                 AND state IN ('pending', 'sent', 'uncertain', 'reconciling')",
                [task],
            )
            .map_err(|e| self.sqlite(e))
    }
}

#[cfg(test)]
mod tests;
