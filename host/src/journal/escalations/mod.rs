//! Escalations and the decisions that resolve them, stored beside the actions.
//!
//! An escalation is a case a person must decide: an uncertain write the provider's plugin
//! could not settle, a task whose time budget ran out, or a write a spent quota blocked. Its case (built by
//! [`crate::writes`]) is stored sanitized, as JSON; the body stays in the action's row and
//! is shown only through [`Cases::disclose_body`], which records who asked.
//!
//! A decision is an *approval record*: of one action (query it again, resend it with the
//! same key, cancel it, send it as a new operation) or of continued access for a task. The
//! two are separate kinds of record, so approving one action never grants a task more
//! access. The host applies pending decisions ([`Cases::undone`]) and copies
//! decisions and disclosures into the audit log ([`Cases::unaudited`]); the CLI only
//! writes them here, so it can run while a host runs.

use super::db::Conn;
use super::text::check_operator;
use super::value::{BadColumn, Row, values};
use super::{Fail, Journal, JournalError, State};

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

fn escalation(r: &Row) -> Result<Escalation, BadColumn> {
    Ok(Escalation {
        id: r.get(0)?,
        action_id: r.get(1)?,
        task: r.get(2)?,
        kind: r.parsed(3, "escalation kind", Kind::parse)?,
        created_ms: r.get(4)?,
        case_json: r.get(5)?,
        resolved_ms: r.get(6)?,
    })
}

/// Every escalation `sql` (which selects [`ESCALATION`]) finds.
fn escalations_in(
    c: Conn<'_>,
    sql: &str,
    params: &[super::value::Value],
) -> Result<Vec<Escalation>, Fail> {
    let rows = c.rows(sql, params)?;
    Ok(rows.iter().map(escalation).collect::<Result<_, _>>()?)
}

/// The journal's escalations and the decisions that resolve them ([`Journal::escalations`]):
/// a view of the one journal, on its connection and in its transactions.
#[derive(Debug, Clone, Copy)]
pub struct Cases<'j> {
    pub(crate) journal: &'j Journal,
}

impl Cases<'_> {
    /// Raises an escalation; when it is about an action, moves the action to `escalated` in
    /// the same transaction.
    ///
    /// # Errors
    /// [`JournalError::Transition`] if the action cannot be escalated, or a database failure.
    pub fn open(
        &self,
        action_id: Option<i64>,
        task: &str,
        kind: Kind,
        case_json: &str,
        at_ms: i64,
    ) -> Result<i64, JournalError> {
        self.journal.write_marked(|c| {
            if let Some(id) = action_id {
                let from = self.journal.own(c, id)?;
                if from != State::Escalated {
                    if !from.may_become(State::Escalated) {
                        return Err(JournalError::Transition {
                            id,
                            from: from.name(),
                            to: "escalated",
                        }
                        .into());
                    }
                    c.exec(
                        "UPDATE actions SET state = 'escalated' WHERE id = ?1",
                        values![id],
                    )?;
                }
            }
            Ok(c.one(
                "INSERT INTO escalations (action_id, task, kind, created_ms, case_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
                values![action_id, task, kind.name(), at_ms, case_json],
            )?)
        })
    }

    /// Escalations, oldest first; only the unresolved ones when `open_only`.
    ///
    /// # Errors
    /// A database failure.
    pub fn list(&self, open_only: bool) -> Result<Vec<Escalation>, JournalError> {
        let filter = if open_only {
            " WHERE resolved_ms IS NULL"
        } else {
            ""
        };
        let sql = format!("SELECT {ESCALATION}{filter} ORDER BY id");
        self.journal.read(|c| escalations_in(c, &sql, &[]))
    }

    /// Escalation `id`.
    ///
    /// # Errors
    /// [`JournalError::NoEscalation`] or a database failure.
    pub fn get(&self, id: i64) -> Result<Escalation, JournalError> {
        let sql = format!("SELECT {ESCALATION} WHERE id = ?1");
        self.journal.read(|c| {
            escalations_in(c, &sql, values![id])?
                .pop()
                .ok_or(Fail::Journal(JournalError::NoEscalation(id)))
        })
    }

    /// The latest escalation about action `action`, if any.
    ///
    /// # Errors
    /// A database failure.
    pub fn of_action(&self, action: i64) -> Result<Option<i64>, JournalError> {
        self.journal.read(|c| {
            Ok(c.one(
                "SELECT MAX(id) FROM escalations WHERE action_id = ?1",
                values![action],
            )?)
        })
    }

    /// Shows the body of escalation `id`'s action, recording who asked, when, first. Who
    /// asks must be named as an operator is ([`check_operator`]).
    ///
    /// # Errors
    /// [`JournalError::Text`] for a name that cannot be stored, [`JournalError::NoEscalation`],
    /// [`JournalError::NoBody`] or a database failure.
    pub fn disclose_body(
        &self,
        id: i64,
        asked_by: &str,
        at_ms: i64,
    ) -> Result<Vec<u8>, JournalError> {
        check_operator(asked_by)?;
        let e = self.get(id)?;
        let action = e.action_id.ok_or(JournalError::NoBody(id))?;
        self.journal.write(|c| {
            c.exec(
                "INSERT INTO disclosures (escalation_id, action_id, task, asked_by, at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                values![id, action, &e.task, asked_by, at_ms],
            )?;
            Ok(())
        })?;
        self.journal.body(action)
    }

    /// Decisions and disclosures not yet copied into the audit log.
    ///
    /// # Errors
    /// A database failure.
    pub fn unaudited(&self) -> Result<(Vec<Approval>, Vec<Disclosure>), JournalError> {
        let sql = format!("SELECT {APPROVAL} WHERE audited = 0 ORDER BY id");
        self.journal.read(|c| {
            let approvals = c
                .rows(&sql, &[])?
                .iter()
                .map(approval)
                .collect::<Result<Vec<_>, _>>()?;
            let disclosures = c
                .rows(
                    "SELECT id, escalation_id, action_id, task, asked_by, at_ms FROM disclosures \
                     WHERE audited = 0 ORDER BY id",
                    &[],
                )?
                .iter()
                .map(|r| {
                    Ok(Disclosure {
                        id: r.get(0)?,
                        escalation_id: r.get(1)?,
                        action_id: r.get(2)?,
                        task: r.get(3)?,
                        asked_by: r.get(4)?,
                        at_ms: r.get(5)?,
                    })
                })
                .collect::<Result<Vec<_>, BadColumn>>()?;
            Ok((approvals, disclosures))
        })
    }

    /// Marks approval and disclosure records as copied into the audit log.
    ///
    /// # Errors
    /// A database failure.
    pub fn audited(&self, approvals: &[i64], disclosures: &[i64]) -> Result<(), JournalError> {
        self.journal.write(|c| {
            for id in approvals {
                c.exec(
                    "UPDATE approvals SET audited = 1 WHERE id = ?1",
                    values![*id],
                )?;
            }
            for id in disclosures {
                c.exec(
                    "UPDATE disclosures SET audited = 1 WHERE id = ?1",
                    values![*id],
                )?;
            }
            Ok(())
        })
    }
}
