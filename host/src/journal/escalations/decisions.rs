//! Decisions: a person's answer to an escalation, stored as an approval record before a host
//! carries it out.
//!
//! What a person typed is checked here, in the library, before anything is stored: the name
//! of who decides, the note and an operation id (see [`crate::journal::text`]); an operation
//! id is taken only by the choice that queries the provider by one.

use super::{Cases, Choice, Escalation, Kind};
use crate::journal::text::{check_note, check_operation_id, check_operator};
use crate::journal::value::{BadColumn, Row, values};
use crate::journal::{Fail, JournalError};
use crate::printable::printable;

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
    /// `action approval `retry-same-key` by ops@example`: what was approved, by whom, on one
    /// line (a name read back from the journal is `printable`).
    pub fn summary(&self) -> String {
        format!(
            "{} approval `{}` by {}",
            self.kind,
            self.decision.choice.name(),
            printable(&self.decision.decided_by)
        )
    }

    /// The decider's note after `sep`, `printable`, or nothing when there is none.
    pub fn note_after(&self, sep: &str) -> String {
        if self.decision.note.is_empty() {
            String::new()
        } else {
            format!("{sep}{}", printable(&self.decision.note))
        }
    }
}

pub(super) const APPROVAL: &str = "id, escalation_id, kind, task, action_id, option, decided_by, at_ms, \
                        operation_id, note FROM approvals";

pub(super) fn approval(r: &Row) -> Result<Approval, BadColumn> {
    Ok(Approval {
        id: r.get(0)?,
        escalation_id: r.get(1)?,
        kind: r.parsed(2, "approval kind", |k| match k {
            "access" => Some("access"),
            "action" => Some("action"),
            _ => None,
        })?,
        task: r.get(3)?,
        action_id: r.get(4)?,
        decision: Decision {
            choice: r.parsed(5, "option", Choice::parse)?,
            decided_by: r.get(6)?,
            operation_id: r.get(8)?,
            note: r.get(9)?,
        },
        at_ms: r.get(7)?,
    })
}

/// Every approval `sql` (which selects [`APPROVAL`]) finds.
fn approvals_in(
    c: crate::journal::db::Conn<'_>,
    sql: &str,
    params: &[crate::journal::value::Value],
) -> Result<Vec<Approval>, Fail> {
    let rows = c.rows(sql, params)?;
    Ok(rows.iter().map(approval).collect::<Result<_, _>>()?)
}

/// Checks what a person typed into a decision, before anything is stored.
fn check_decision(decision: &Decision) -> Result<(), JournalError> {
    check_operator(&decision.decided_by)?;
    check_note(&decision.note)?;
    if let Some(id) = &decision.operation_id {
        if !decision.choice.takes_operation_id() {
            return Err(JournalError::OperationIdNotTaken {
                choice: decision.choice.name(),
            });
        }
        check_operation_id(id)?;
    }
    Ok(())
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

impl Cases<'_> {
    /// Resolves escalation `id` with `decision`, storing the approval record. A cancel is
    /// applied here at once (it sends nothing; for a spent time budget it cancels the whole
    /// task); the other choices wait for a host to apply them
    /// ([`Cases::undone`]).
    ///
    /// The decision is checked before anything is stored: the operator's name must be one line
    /// of visible characters ([`check_operator`]), the note too ([`check_note`]), and an
    /// operation id is taken only by [`Choice::QueryExisting`] ([`check_operation_id`]).
    ///
    /// # Errors
    /// [`JournalError::Text`] or [`JournalError::OperationIdNotTaken`] for a decision that
    /// cannot be stored, [`JournalError::AlreadyResolved`], a choice that is not an option of
    /// the escalation (the error lists the options), or a database failure.
    pub fn resolve(
        &self,
        id: i64,
        decision: &Decision,
        at_ms: i64,
    ) -> Result<Approval, JournalError> {
        check_decision(decision)?;
        let e = self.get(id)?;
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
        let approval_id: i64 = self.journal.write_marked(|c| {
            let changed = c.exec(
                "UPDATE escalations SET resolved_ms = ?2, applied = ?3 \
                 WHERE id = ?1 AND resolved_ms IS NULL",
                values![id, at_ms, applied_now],
            )?;
            if changed == 0 {
                return Err(JournalError::AlreadyResolved(id).into());
            }
            if decision.choice == Choice::Cancel
                && matches!(
                    e.kind,
                    Kind::TimeBudget | Kind::QuotaExhausted | Kind::BudgetSpent
                )
            {
                // Out of time and given up: the whole task ends, and none of it wakes later.
                crate::journal::cancel_task_in(c, &e.task, at_ms)?;
            }
            if matches!(decision.choice, Choice::Cancel | Choice::ChangePlan)
                && let Some(action) = e.action_id
            {
                c.exec(
                    "UPDATE actions SET state = 'cancelled' WHERE id = ?1 \
                     AND state NOT IN ('succeeded', 'failed', 'cancelled')",
                    values![action],
                )?;
            }
            Ok(c.one(
                "INSERT INTO approvals (escalation_id, kind, task, action_id, option, \
                 decided_by, at_ms, operation_id, note) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
                values![
                    id,
                    kind,
                    &e.task,
                    action_id,
                    decision.choice.name(),
                    &decision.decided_by,
                    at_ms,
                    decision.operation_id.as_ref(),
                    &decision.note
                ],
            )?)
        })?;
        self.approval(approval_id)
    }

    fn approval(&self, id: i64) -> Result<Approval, JournalError> {
        let sql = format!("SELECT {APPROVAL} WHERE id = ?1");
        self.journal.read(|c| {
            approvals_in(c, &sql, values![id])?
                .pop()
                .ok_or(Fail::Journal(JournalError::NoEscalation(id)))
        })
    }

    /// The approval records of `task`, oldest first.
    ///
    /// # Errors
    /// A database failure.
    pub fn approvals(&self, task: &str) -> Result<Vec<Approval>, JournalError> {
        let sql = format!("SELECT {APPROVAL} WHERE task = ?1 ORDER BY id");
        self.journal.read(|c| approvals_in(c, &sql, values![task]))
    }

    /// Decisions a host has yet to carry out (query again, resend, send as new).
    ///
    /// # Errors
    /// A database failure.
    pub fn undone(&self) -> Result<Vec<Approval>, JournalError> {
        // A decision on an action is carried out by the host that owns the action.
        // (The escalation's action: an approval of access names none.)
        let sql = format!(
            "SELECT {APPROVAL} WHERE escalation_id IN \
             (SELECT id FROM escalations WHERE resolved_ms IS NOT NULL AND applied = 0 \
              AND (action_id IS NULL \
                   OR action_id IN (SELECT id FROM actions WHERE owner = ?1))) \
             ORDER BY id"
        );
        self.journal
            .read(|c| approvals_in(c, &sql, values![self.journal.owner()]))
    }

    /// Marks escalation `id`'s decision as carried out.
    ///
    /// # Errors
    /// A database failure.
    pub fn done(&self, id: i64) -> Result<(), JournalError> {
        self.journal.write(|c| {
            c.exec(
                "UPDATE escalations SET applied = 1 WHERE id = ?1",
                values![id],
            )?;
            Ok(())
        })
    }
}
