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

use super::{Journal, JournalError, State};

mod choice;
pub use choice::{Choice, Kind};

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

/// A person's decision on an escalation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The choice.
    pub choice: Choice,
    /// Who decided.
    pub decided_by: String,
    /// An operation id the person found, for [`Choice::QueryExisting`].
    pub operation_id: Option<String>,
    /// Why, in the person's words.
    pub note: String,
}

/// A stored approval record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Its id.
    pub id: i64,
    /// The escalation it resolves.
    pub escalation_id: i64,
    /// `action` (one action) or `access` (continued access for the task).
    pub kind: &'static str,
    /// The task.
    pub task: String,
    /// The action, for an action approval.
    pub action_id: Option<i64>,
    /// The decision.
    pub decision: Decision,
    /// When (wall ms).
    pub at_ms: i64,
}

impl Approval {
    /// `action approval `retry-same-key` by ops@example`: what was approved, by whom.
    pub fn summary(&self) -> String {
        format!(
            "{} approval `{}` by {}",
            self.kind,
            self.decision.choice.name(),
            self.decision.decided_by
        )
    }

    /// The decider's note after `sep`, or nothing when there is none.
    pub fn note_after(&self, sep: &str) -> String {
        if self.decision.note.is_empty() {
            String::new()
        } else {
            format!("{sep}{}", self.decision.note)
        }
    }
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
        kind: Kind::parse(&kind).unwrap_or(Kind::UncertainWrite),
        created_ms: r.get(4)?,
        case_json: r.get(5)?,
        resolved_ms: r.get(6)?,
    })
}

const APPROVAL: &str = "id, escalation_id, kind, task, action_id, option, decided_by, at_ms, \
                        operation_id, note FROM approvals";

fn approval(r: &rusqlite::Row<'_>) -> rusqlite::Result<Approval> {
    let kind: String = r.get(2)?;
    let option: String = r.get(5)?;
    Ok(Approval {
        id: r.get(0)?,
        escalation_id: r.get(1)?,
        kind: if kind == "access" { "access" } else { "action" },
        task: r.get(3)?,
        action_id: r.get(4)?,
        decision: Decision {
            choice: Choice::parse(&option).unwrap_or(Choice::Cancel),
            decided_by: r.get(6)?,
            operation_id: r.get(8)?,
            note: r.get(9)?,
        },
        at_ms: r.get(7)?,
    })
}

/// Why a decision was refused.
fn bad_choice(e: &Escalation, choice: Choice) -> JournalError {
    let valid: Vec<&str> = e.kind.options().iter().map(|c| c.name()).collect();
    JournalError::NotAnOption {
        id: e.id,
        choice: choice.name(),
        kind: e.kind.name(),
        options: valid.join(", "),
    }
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
            let from = State::parse(&from).ok_or(JournalError::Missing(id))?;
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

    /// Resolves escalation `id` with `decision`, storing the approval record. A cancel is
    /// applied here at once (it sends nothing; for a spent time budget it cancels the whole
    /// task); the other choices wait for a host to apply them
    /// ([`Journal::undone_decisions`]).
    ///
    /// # Errors
    /// [`JournalError::AlreadyResolved`], a choice that is not an option of the escalation
    /// (the error lists the options), or a SQLite failure.
    pub fn resolve(
        &self,
        id: i64,
        decision: &Decision,
        at_ms: i64,
    ) -> Result<Approval, JournalError> {
        let e = self.escalation(id)?;
        if e.resolved_ms.is_some() {
            return Err(JournalError::AlreadyResolved(id));
        }
        if !e.kind.options().contains(&decision.choice) {
            return Err(bad_choice(&e, decision.choice));
        }
        let (kind, action_id) = if decision.choice.is_access() {
            ("access", None)
        } else {
            ("action", e.action_id)
        };
        let applied_now = matches!(decision.choice, Choice::Cancel | Choice::ChangePlan);
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sqlite(e))?;
        let changed = tx
            .execute(
                "UPDATE escalations SET resolved_ms = ?2, applied = ?3 \
                 WHERE id = ?1 AND resolved_ms IS NULL",
                params![id, at_ms, applied_now],
            )
            .map_err(|e| self.sqlite(e))?;
        if changed == 0 {
            return Err(JournalError::AlreadyResolved(id));
        }
        if decision.choice == Choice::Cancel
            && matches!(e.kind, Kind::TimeBudget | Kind::QuotaExhausted)
        {
            // Out of time and given up: the whole task ends, and none of it wakes later.
            tx.execute(
                "INSERT OR IGNORE INTO cancelled_tasks (task, at_ms) VALUES (?1, ?2)",
                params![e.task, at_ms],
            )
            .map_err(|e| self.sqlite(e))?;
            tx.execute(
                "UPDATE actions SET state = 'cancelled' WHERE task = ?1 \
                 AND state IN ('pending', 'escalated') AND attempts = 0",
                [&e.task],
            )
            .map_err(|e| self.sqlite(e))?;
        }
        if matches!(decision.choice, Choice::Cancel | Choice::ChangePlan)
            && let Some(action) = e.action_id
        {
            tx.execute(
                "UPDATE actions SET state = 'cancelled' WHERE id = ?1 \
                 AND state NOT IN ('succeeded', 'failed', 'cancelled')",
                [action],
            )
            .map_err(|e| self.sqlite(e))?;
        }
        tx.execute(
            "INSERT INTO approvals (escalation_id, kind, task, action_id, option, decided_by, \
             at_ms, operation_id, note) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                id,
                kind,
                e.task,
                action_id,
                decision.choice.name(),
                decision.decided_by,
                at_ms,
                decision.operation_id,
                decision.note
            ],
        )
        .map_err(|e| self.sqlite(e))?;
        let approval_id = tx.last_insert_rowid();
        tx.commit().map_err(|e| self.sqlite(e))?;
        drop(conn);
        self.approval(approval_id)
    }

    fn approval(&self, id: i64) -> Result<Approval, JournalError> {
        self.conn()
            .query_row(&format!("SELECT {APPROVAL} WHERE id = ?1"), [id], approval)
            .map_err(|e| self.sqlite(e))
    }

    /// The approval records of `task`, oldest first.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn approvals(&self, task: &str) -> Result<Vec<Approval>, JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!("SELECT {APPROVAL} WHERE task = ?1 ORDER BY id"))
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([task], approval)
            .map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    /// Decisions a host has yet to carry out (query again, resend, send as new).
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn undone_decisions(&self) -> Result<Vec<Approval>, JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {APPROVAL} WHERE escalation_id IN \
                 (SELECT id FROM escalations WHERE resolved_ms IS NOT NULL AND applied = 0) \
                 ORDER BY id"
            ))
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt.query_map([], approval).map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }

    /// Marks escalation `id`'s decision as carried out.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn decision_done(&self, id: i64) -> Result<(), JournalError> {
        self.conn()
            .execute("UPDATE escalations SET applied = 1 WHERE id = ?1", [id])
            .map(|_| ())
            .map_err(|e| self.sqlite(e))
    }

    /// Shows the body of escalation `id`'s action, recording who asked, when, first.
    ///
    /// # Errors
    /// [`JournalError::NoEscalation`], [`JournalError::NoBody`] or a SQLite failure.
    pub fn disclose_body(
        &self,
        id: i64,
        asked_by: &str,
        at_ms: i64,
    ) -> Result<Vec<u8>, JournalError> {
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
