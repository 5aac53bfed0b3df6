//! Escalations and the decisions that resolve them, stored beside the actions.
//!
//! An escalation is a case a person must decide: an uncertain write the provider's plugin
//! could not settle, a task whose time budget ran out, or a write a spent quota blocked. Its case (built by
//! [`crate::writes`]) is stored sanitized, as JSON; the body stays in the action's row and
//! is shown only through [`Journal::disclose_body`], which records who asked.
//!
//! A decision is an *approval record*: of one action (query it again, resend it with the
//! same key, cancel it, send it as a new operation) or of continued access for a task. The
//! two are separate kinds of record, so approving one action never grants a task more
//! access. The host applies pending decisions ([`Journal::undone_decisions`]) and copies
//! decisions and disclosures into the audit log ([`Journal::unaudited`]); the CLI only
//! writes them here, so it can run while a host runs.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::text::check_operator;
use super::{Journal, JournalError, State, Unknown};

mod choice;
mod decisions;

pub use choice::{Choice, Kind};
use decisions::{APPROVAL, approval};
pub use decisions::{Approval, Decision};

/// A stored escalation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// Its id.
    pub id: i64,
    /// The action it is about, if one.
    pub action_id: Option<i64>,
    /// The task.
    pub task: String,
    /// What must be decided.
    pub kind: Kind,
    /// When it was raised (wall ms).
    pub created_ms: i64,
    /// The sanitized case, JSON.
    pub case_json: String,
    /// When it was resolved.
    pub resolved_ms: Option<i64>,
}

/// A recorded request to see an action's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disclosure {
    /// Its id.
    pub id: i64,
    /// The escalation it was asked through.
    pub escalation_id: i64,
    /// The action whose body was shown.
    pub action_id: i64,
    /// The task.
    pub task: String,
    /// Who asked.
    pub asked_by: String,
    /// When (wall ms).
    pub at_ms: i64,
}

const ESCALATION: &str =
    "id, action_id, task, kind, created_ms, case_json, resolved_ms FROM escalations";

fn escalation(r: &rusqlite::Row<'_>) -> rusqlite::Result<Escalation> {
    let kind: String = r.get(3)?;
    Ok(Escalation {
        id: r.get(0)?,
        action_id: r.get(1)?,
        task: r.get(2)?,
        kind: Kind::parse(&kind).ok_or_else(|| Unknown::column(3, "escalation kind", &kind))?,
        created_ms: r.get(4)?,
        case_json: r.get(5)?,
        resolved_ms: r.get(6)?,
    })
}

impl Journal {
    /// Raises an escalation; when it is about an action, moves the action to `escalated` in
    /// the same transaction.
    ///
    /// # Errors
    /// [`JournalError::Transition`] if the action cannot be escalated, or a SQLite failure.
    pub fn escalate(
        &self,
        action_id: Option<i64>,
        task: &str,
        kind: Kind,
        case_json: &str,
        at_ms: i64,
    ) -> Result<i64, JournalError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        if let Some(id) = action_id {
            let from: String = tx
                .query_row("SELECT state FROM actions WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(|e| self.sqlite(e))?
                .ok_or(JournalError::Missing(id))?;
            let from = self.state(&from)?;
            if from != State::Escalated {
                if !from.may_become(State::Escalated) {
                    return Err(JournalError::Transition {
                        id,
                        from: from.name(),
                        to: "escalated",
                    });
                }
                tx.execute("UPDATE actions SET state = 'escalated' WHERE id = ?1", [id])
                    .map_err(|e| self.sqlite(e))?;
            }
        }
        tx.execute(
            "INSERT INTO escalations (action_id, task, kind, created_ms, case_json) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![action_id, task, kind.name(), at_ms, case_json],
        )
        .map_err(|e| self.sqlite(e))?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| self.sqlite(e))?;
        Ok(id)
    }

    /// Escalations, oldest first; only the unresolved ones when `open_only`.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn escalations(&self, open_only: bool) -> Result<Vec<Escalation>, JournalError> {
        let conn = self.conn();
        let filter = if open_only {
            " WHERE resolved_ms IS NULL"
        } else {
            ""
        };
        let mut stmt = conn
            .prepare(&format!("SELECT {ESCALATION}{filter} ORDER BY id"))
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt.query_map([], escalation).map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    /// Escalation `id`.
    ///
    /// # Errors
    /// [`JournalError::NoEscalation`] or a SQLite failure.
    pub fn escalation(&self, id: i64) -> Result<Escalation, JournalError> {
        self.conn()
            .query_row(
                &format!("SELECT {ESCALATION} WHERE id = ?1"),
                [id],
                escalation,
            )
            .optional()
            .map_err(|e| self.sqlite(e))?
            .ok_or(JournalError::NoEscalation(id))
    }

    /// The latest escalation about action `action`, if any.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn escalation_of(&self, action: i64) -> Result<Option<i64>, JournalError> {
        self.conn()
            .query_row(
                "SELECT MAX(id) FROM escalations WHERE action_id = ?1",
                [action],
                |r| r.get(0),
            )
            .map_err(|e| self.sqlite(e))
    }

    /// Shows the body of escalation `id`'s action, recording who asked, when, first. Who
    /// asks must be named as an operator is ([`check_operator`]).
    ///
    /// # Errors
    /// [`JournalError::Text`] for a name that cannot be stored, [`JournalError::NoEscalation`],
    /// [`JournalError::NoBody`] or a SQLite failure.
    pub fn disclose_body(
        &self,
        id: i64,
        asked_by: &str,
        at_ms: i64,
    ) -> Result<Vec<u8>, JournalError> {
        check_operator(asked_by)?;
        let e = self.escalation(id)?;
        let action = e.action_id.ok_or(JournalError::NoBody(id))?;
        self.conn()
            .execute(
                "INSERT INTO disclosures (escalation_id, action_id, task, asked_by, at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, action, e.task, asked_by, at_ms],
            )
            .map_err(|e| self.sqlite(e))?;
        self.body(action)
    }

    /// Decisions and disclosures not yet copied into the audit log.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn unaudited(&self) -> Result<(Vec<Approval>, Vec<Disclosure>), JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!("SELECT {APPROVAL} WHERE audited = 0 ORDER BY id"))
            .map_err(|e| self.sqlite(e))?;
        let approvals = stmt
            .query_map([], approval)
            .map_err(|e| self.sqlite(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sqlite(e))?;
        let mut stmt = conn
            .prepare(
                "SELECT id, escalation_id, action_id, task, asked_by, at_ms FROM disclosures \
                 WHERE audited = 0 ORDER BY id",
            )
            .map_err(|e| self.sqlite(e))?;
        let disclosures = stmt
            .query_map([], |r| {
                Ok(Disclosure {
                    id: r.get(0)?,
                    escalation_id: r.get(1)?,
                    action_id: r.get(2)?,
                    task: r.get(3)?,
                    asked_by: r.get(4)?,
                    at_ms: r.get(5)?,
                })
            })
            .map_err(|e| self.sqlite(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sqlite(e))?;
        Ok((approvals, disclosures))
    }

    /// Marks approval and disclosure records as copied into the audit log.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn audited(&self, approvals: &[i64], disclosures: &[i64]) -> Result<(), JournalError> {
        let conn = self.conn();
        for id in approvals {
            conn.execute("UPDATE approvals SET audited = 1 WHERE id = ?1", [id])
                .map_err(|e| self.sqlite(e))?;
        }
        for id in disclosures {
            conn.execute("UPDATE disclosures SET audited = 1 WHERE id = ?1", [id])
                .map_err(|e| self.sqlite(e))?;
        }
        Ok(())
    }
}
