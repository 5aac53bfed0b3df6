//! Witnesses that must agree before a host sends: the journal and the audit log.
//!
//! The journal is the host's record of which writes it asked for and sent; lose it and a
//! resubmitted payment is sent as new. A journal can be lost without a trace in itself — a
//! volume snapshot restored, another host's file copied in, a database dropped and made
//! again — so it is held to a second record kept beside it: the audit log, hash-chained and
//! signed, which names the journal's [`Mark`] with every event it logs after the journal's
//! commit. At start the two must agree:
//!
//! - the log's last mark names this journal (the same id), and
//! - the journal's sequence is not behind it.
//!
//! Otherwise the journal lost records the log proves it had, and the host refuses to start
//! ([`Disagreement`]), naming both marks. An operator who knows what happened accepts the
//! journal as it is ([`accept`]; `sluice serve --fresh-journal`): every action the log knows
//! and the journal does not is recorded `lost` — never sent; a resubmit goes to a person —
//! and the acceptance is logged.
//!
//! [`Mark`]: crate::journal::Mark

use crate::audit::{AuditLog, Event, EventKind, JournalMark, known_actions};
use crate::journal::{Journal, Mark};

use super::WriteError;
use super::request::StoredRequest;

/// The journal and the audit log disagree: the journal lost records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Disagreement {
    /// The journal is this log's, but behind it: restored from an older copy.
    #[error(
        "the journal {journal} is behind the audit log {log}: the journal is at sequence \
         {at}, and the log records that it had reached {logged} (journal {id}). It was \
         restored from an older copy, so writes recorded after that copy are unknown to it \
         and a resubmit would send them again. Restore the newest copy of the journal; or, \
         knowing that, accept it as it is with `sluice serve --fresh-journal` \
         (SluiceBuilder::fresh_journal): every action the audit log knows and the journal \
         does not is then marked lost, and a resubmit of one goes to a person"
    )]
    Behind {
        /// The journal's file or database.
        journal: String,
        /// The audit log.
        log: String,
        /// The journal's id.
        id: String,
        /// The journal's sequence.
        at: u64,
        /// The sequence the log names.
        logged: u64,
    },
    /// The journal is not the one the log was written beside: replaced, emptied and made
    /// again, or another host's.
    #[error(
        "the journal {journal} (id {found}) is not the one the audit log {log} was written \
         beside (journal {logged}, at sequence {logged_seq}): it was replaced, emptied and \
         made again, or copied from another host, so the writes the log records are unknown \
         to it and a resubmit would send them again. Put the right journal back; or, knowing \
         that, accept this one with `sluice serve --fresh-journal` \
         (SluiceBuilder::fresh_journal): every action the audit log knows and the journal \
         does not is then marked lost, and a resubmit of one goes to a person"
    )]
    Replaced {
        /// The journal's file or database.
        journal: String,
        /// The audit log.
        log: String,
        /// The journal's id.
        found: String,
        /// The id the log names.
        logged: String,
        /// The sequence the log names.
        logged_seq: u64,
    },
}

/// Whether the journal at `journal` agrees with the mark `logged` the audit log at `log` last
/// names.
///
/// # Errors
/// The [`Disagreement`].
pub fn agree(
    journal: &Journal,
    mark: &Mark,
    log: &AuditLog,
    logged: Option<&JournalMark>,
) -> Result<(), Disagreement> {
    let Some(logged) = logged else {
        return Ok(()); // a new log, or one written before marks
    };
    if logged.id != mark.id {
        return Err(Disagreement::Replaced {
            journal: journal.path().to_owned(),
            log: log.path().display().to_string(),
            found: mark.id.clone(),
            logged: logged.id.clone(),
            logged_seq: logged.seq,
        });
    }
    if mark.seq < logged.seq {
        return Err(Disagreement::Behind {
            journal: journal.path().to_owned(),
            log: log.path().display().to_string(),
            id: mark.id.clone(),
            at: mark.seq,
            logged: logged.seq,
        });
    }
    Ok(())
}

/// What [`accept`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accepted {
    /// Actions the audit log knows that were recorded `lost`.
    pub lost: usize,
}

/// Holds the journal to the audit log at a host's start: `Ok` when they agree; when they do
/// not, a [`Disagreement`] — or, with `accept`, the journal accepted as it is: every action
/// the log knows and the journal does not recorded `lost`, the journal's sequence raised to
/// the log's, and the acceptance logged.
///
/// # Errors
/// [`WitnessError::Disagree`] without `accept`; [`WitnessError::Write`] when the journal or
/// the log failed while accepting.
pub fn hold(
    journal: &Journal,
    log: &AuditLog,
    accept: bool,
    now_ms: i64,
) -> Result<Accepted, WitnessError> {
    let mark = journal.mark();
    let logged = log.last_journal_mark();
    let Err(disagreement) = agree(journal, &mark, log, logged.as_ref()) else {
        return Ok(Accepted::default());
    };
    if !accept {
        return Err(WitnessError::Disagree(disagreement));
    }
    tracing::warn!(
        "accepting the journal on the operator's word: {disagreement}; marking what the audit \
         log knows and the journal does not as lost"
    );
    let lost = mark_lost(journal, log)?;
    let logged_seq = logged.as_ref().map_or(0, |m| m.seq);
    let mark = journal.raise_mark(logged_seq).map_err(WriteError::from)?;
    log.append(
        &Event::new(EventKind::JournalAccepted, now_ms)
            .detail(&format!(
                "the operator accepted a journal the audit log disagreed with ({}); {lost} \
                 action(s) it lacked marked lost",
                match &disagreement {
                    Disagreement::Behind { at, logged, .. } =>
                        format!("behind: at {at}, the log had {logged}"),
                    Disagreement::Replaced { found, logged, .. } =>
                        format!("replaced: journal {found}, the log had {logged}"),
                }
            ))
            .journal(JournalMark {
                id: mark.id,
                seq: mark.seq,
            }),
    )
    .map_err(WriteError::from)?;
    Ok(Accepted { lost })
}

/// Records `lost` every action the audit log knows and the journal does not.
fn mark_lost(journal: &Journal, log: &AuditLog) -> Result<usize, WriteError> {
    // Nothing of the request is known: its case shows only the names and the key.
    let request = serde_json::to_string(&StoredRequest::default()).unwrap_or_default();
    let mut lost = 0;
    for known in known_actions(log.path())? {
        if journal.record_lost(&known.task, &known.action, &known.idempotency_key, &request)? {
            lost += 1;
        }
    }
    Ok(lost)
}

/// Why the witnesses were not held.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    /// They disagree.
    #[error(transparent)]
    Disagree(#[from] Disagreement),
    /// Accepting the journal failed part way; what was recorded stays recorded, and the next
    /// start with the same flag goes on.
    #[error("accepting the journal: {0}")]
    Write(#[from] WriteError),
}
