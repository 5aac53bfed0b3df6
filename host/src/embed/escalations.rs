//! The escalations door ([`Sluice::escalations`](super::Sluice::escalations)): what people
//! do with the cases a host could not decide alone — list them, show one, see an action's
//! body, resolve one and have the decision carried out — through the host that runs.
//!
//! The sidecar's admin API, its console and an embedder's own tools all go through here,
//! so none of them reaches into the journal, and each step is the same sequence wherever
//! it is asked: a decision is recorded (journal, then audit log) before anything is carried
//! out; a body is shown only once the request to see it is in the audit log.

use std::fmt;

use crate::clock::Clock;
use crate::journal::escalations::{Approval, Decision, Escalation};
use crate::journal::{Journal, JournalError};
use crate::writes::{WriteError, WriteOutcome, Writes};

/// The escalations of a running host ([`Sluice::escalations`](super::Sluice::escalations)).
///
/// ```no_run
/// # async fn run(sluice: &sluice::Sluice) -> Result<(), sluice::JournalError> {
/// use sluice::{Choice, Decision};
///
/// let door = sluice.escalations();
/// for e in door.list(true)? {
///     let case = door.show(e.id)?;
///     println!("{}: {} on task {}", e.id, e.kind.name(), case.escalation.task);
///     if e.kind.options().contains(&Choice::QueryExisting) {
///         let decision = Decision {
///             choice: Choice::QueryExisting,
///             decided_by: "ops@example.com".into(),
///             operation_id: None,
///             note: "ask the provider first".into(),
///         };
///         let resolved = door.resolve(e.id, &decision).await?;
///         println!("recorded: {}", resolved.recorded.summary());
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct Escalations<'s> {
    pub(super) journal: &'s Journal,
    pub(super) writes: &'s Writes,
    pub(super) clock: &'s dyn Clock,
}

impl fmt::Debug for Escalations<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Escalations")
            .field("journal", &self.journal.path())
            .finish_non_exhaustive()
    }
}

/// One escalation as an operator sees it: the case and the decisions made on it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EscalationCase {
    /// The escalation: its kind, task, case (sanitized JSON) and whether it is resolved.
    pub escalation: Escalation,
    /// The decisions recorded on it, oldest first.
    pub decisions: Vec<Approval>,
}

/// An escalation resolved ([`Escalations::resolve`]): the decision as recorded, and what
/// carrying out the decisions did.
#[derive(Debug)]
pub struct Resolved {
    /// The decision as the journal recorded it.
    pub recorded: Approval,
    /// What carrying out every decision not yet carried out did to each action; an error
    /// when that failed (the decision stays recorded, carried out at the host's next start).
    pub applied: Result<Vec<WriteOutcome>, WriteError>,
}

/// Why an action's body was not shown ([`Escalations::disclose_body`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum BodyError {
    /// The journal refused (see [`Escalations::refusal`]) or failed: nothing was recorded.
    Journal(JournalError),
    /// The request is recorded in the journal, but copying it into the audit log failed,
    /// so the body is not shown. Asking again copies it.
    NotAudited(WriteError),
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Journal(e) => e.fmt(f),
            BodyError::NotAudited(e) => write!(
                f,
                "the request is recorded in the journal, but copying it into the audit log \
                 failed ({e}), so the body is not shown; try again"
            ),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BodyError::Journal(e) => Some(e),
            BodyError::NotAudited(e) => Some(e),
        }
    }
}

/// What an operator's request was refused for, when the request was at fault and not the
/// journal ([`Escalations::refusal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A name, note or operation id that cannot be stored, an option the case does not
    /// offer, or an action with no body to show.
    Invalid,
    /// No escalation has that id.
    NoSuchCase,
    /// The escalation is already resolved.
    AlreadyResolved,
}

impl Escalations<'_> {
    /// The escalations, oldest first: only the unresolved ones when `open_only`.
    ///
    /// # Errors
    /// [`JournalError`]: the journal failed.
    pub fn list(&self, open_only: bool) -> Result<Vec<Escalation>, JournalError> {
        self.journal.escalations().list(open_only)
    }

    /// Escalation `id` and the decisions made on it.
    ///
    /// # Errors
    /// [`JournalError::NoEscalation`], or the journal failed.
    pub fn show(&self, id: i64) -> Result<EscalationCase, JournalError> {
        let cases = self.journal.escalations();
        let escalation = cases.get(id)?;
        let mut decisions = cases.approvals(&escalation.task)?;
        decisions.retain(|a| a.escalation_id == id);
        Ok(EscalationCase {
            escalation,
            decisions,
        })
    }

    /// The body of escalation `id`'s action, shown to `asked_by`: who asked, and when (the
    /// host's clock), is recorded in the journal and copied into the audit log first.
    ///
    /// # Errors
    /// [`BodyError`]: the journal refused or failed, or the audit log could not take the
    /// record; in neither case is the body returned.
    pub fn disclose_body(&self, id: i64, asked_by: &str) -> Result<Vec<u8>, BodyError> {
        let body = self
            .journal
            .escalations()
            .disclose_body(id, asked_by, self.clock.wall_ms())
            .map_err(BodyError::Journal)?;
        self.writes
            .audit_decisions()
            .map_err(BodyError::NotAudited)?;
        Ok(body)
    }

    /// Resolves escalation `id` with `decision` (recorded as of the host's clock, in the
    /// journal and the audit log), then carries out every decision not yet carried out,
    /// this one among them, as [`Escalations::apply`] does.
    ///
    /// # Errors
    /// [`JournalError`]: the decision was not recorded (no such case, a case already
    /// resolved, an option the case does not offer, a missing name; see
    /// [`Escalations::refusal`]); nothing was carried out. Carrying the decisions out may
    /// fail after the decision is recorded: that is [`Resolved::applied`], and the host
    /// carries them out at its next start.
    pub async fn resolve(&self, id: i64, decision: &Decision) -> Result<Resolved, JournalError> {
        let recorded = self
            .journal
            .escalations()
            .resolve(id, decision, self.clock.wall_ms())?;
        let applied = self.apply().await;
        Ok(Resolved { recorded, applied })
    }

    /// Carries out the decisions people made (here, through another host of the group, or
    /// with `sluice escalations resolve`) and not yet carried out, and copies them into the
    /// audit log. A host also does this at every start.
    ///
    /// # Errors
    /// [`WriteError`]: the journal or the audit log failed.
    pub async fn apply(&self) -> Result<Vec<WriteOutcome>, WriteError> {
        self.writes.apply_decisions().await
    }

    /// What `e`, an answer of this door, refused the operator's request for; `None` when
    /// the journal itself failed (a server's fault, not the request's).
    pub fn refusal(e: &JournalError) -> Option<Refusal> {
        match e {
            JournalError::Text { .. }
            | JournalError::OperationIdNotTaken { .. }
            | JournalError::NotAnOption { .. }
            | JournalError::NoBody(_) => Some(Refusal::Invalid),
            JournalError::NoEscalation(_) => Some(Refusal::NoSuchCase),
            JournalError::AlreadyResolved(_) => Some(Refusal::AlreadyResolved),
            _ => None,
        }
    }
}
