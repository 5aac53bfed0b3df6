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
//! - the journal's sequence is not behind it; or the log names no mark yet and the journal
//!   never moved (then the journal gets a new id, which the log names: `journal_bound`).
//!
//! Otherwise the journal lost records the log proves it had, or nothing can say it did not
//! ([`Disagreement`]), and the host refuses to start, naming both marks. An operator who
//! knows what happened accepts the journal as it is (`hold` with `accept`; `sluice serve
//! --fresh-journal`): only what the log vouches for stays live — the rest is recorded
//! `lost`, never sent, a resubmit goes to a person — the journal gets a new id, and the
//! acceptance is logged. While the host runs, the journal is held to itself
//! ([`crate::journal::JournalError::MovedUnder`]).
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
    /// The log names no mark of any journal, and the journal moved: the log was lost (a
    /// state directory wiped with the log in it, the log's path changed) beside an older
    /// journal, or the journal was put beside a new log.
    #[error(
        "the audit log {log} names no journal, but the journal {journal} (id {id}) is at \
         sequence {at}: the log written beside it was lost or moved, or the journal was \
         restored beside a new log, so nothing can tell whether the journal is behind. Point \
         [audit] at the log written beside this journal; or, knowing that, accept the \
         journal with `sluice serve --fresh-journal` (SluiceBuilder::fresh_journal): every \
         action not over in it is then marked lost, and a resubmit of one goes to a person"
    )]
    Unwitnessed {
        /// The journal's file or database.
        journal: String,
        /// The audit log.
        log: String,
        /// The journal's id.
        id: String,
        /// The journal's sequence.
        at: u64,
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

/// How a journal's mark stands against the mark its audit log last names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// They agree: the same journal, not behind; or a log that names none yet beside a
    /// journal that never moved.
    Agree,
    /// The log names no mark, and the journal moved: the log beside it was lost, or is new.
    Unwitnessed,
    /// The same journal, behind the log: restored from an older copy.
    Behind,
    /// Another journal than the one the log was written beside.
    Replaced,
}

/// How `mark`, a journal's, stands against `logged`, the mark its audit log last names.
pub fn standing(mark: &Mark, logged: Option<&JournalMark>) -> Standing {
    match logged {
        // A new log, or one written before marks, beside a journal that never moved since.
        None if mark.seq == 0 => Standing::Agree,
        None => Standing::Unwitnessed,
        Some(logged) if logged.id != mark.id => Standing::Replaced,
        Some(logged) if mark.seq < logged.seq => Standing::Behind,
        Some(_) => Standing::Agree,
    }
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
    let (journal, log) = (journal.path().to_owned(), log.path().display().to_string());
    match (standing(mark, logged), logged) {
        (Standing::Agree, _) => Ok(()),
        (Standing::Replaced, Some(logged)) => Err(Disagreement::Replaced {
            journal,
            log,
            found: mark.id.clone(),
            logged: logged.id.clone(),
            logged_seq: logged.seq,
        }),
        (Standing::Behind, Some(logged)) => Err(Disagreement::Behind {
            journal,
            log,
            id: mark.id.clone(),
            at: mark.seq,
            logged: logged.seq,
        }),
        // `Unwitnessed` (the only standing a log without a mark gives but `Agree`).
        _ => Err(Disagreement::Unwitnessed {
            journal,
            log,
            id: mark.id.clone(),
            at: mark.seq,
        }),
    }
}

/// What [`accept`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accepted {
    /// Actions the audit log knows that were recorded `lost`.
    pub lost: usize,
}

/// Holds the journal to the audit log at a host's start: `Ok` when they agree; when they do
/// not, a [`Disagreement`] — or, with `accept`, the journal accepted as it is: every action
/// the log knows and the journal does not, every one the log saw move since the journal's
/// copy, and every one not over that the log does not know, recorded `lost` (never sent; a
/// resubmit goes to a person); the journal's sequence raised to the log's; and the
/// acceptance logged.
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
        if logged.is_none() {
            // A new log beside a journal that never moved: the journal's id is drawn anew
            // for this log and the log names it, so that a copy of this journal elsewhere
            // (which would share its id) can never agree with this log.
            let mark = journal.renew_mark(0).map_err(WriteError::from)?;
            log.append(
                &Event::new(EventKind::JournalBound, now_ms)
                    .detail("the journal this log is written beside")
                    .journal(JournalMark {
                        id: mark.id,
                        seq: mark.seq,
                    }),
            )
            .map_err(WriteError::from)?;
        }
        return Ok(Accepted::default());
    };
    if !accept {
        return Err(WitnessError::Disagree(disagreement));
    }
    tracing::warn!(
        "accepting the journal on the operator's word: {disagreement}; marking what the audit \
         log knows and the journal does not as lost"
    );
    let lost = mark_lost(journal, &mark, log)?;
    let logged_seq = logged.as_ref().map_or(0, |m| m.seq);
    let mark = journal.renew_mark(logged_seq).map_err(WriteError::from)?;
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
                    Disagreement::Unwitnessed { id, at, .. } =>
                        format!("unwitnessed: journal {id} at {at}, the log named none"),
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

/// Records `lost` every action the audit log knows and the journal (at `mark`) does not;
/// every one it holds that the log saw move after the journal's copy was made (its last
/// record names a later mark, or another journal's) and that was not over; and every one
/// not over that the log does not know (another host's, in a copy of its journal). What
/// stays live after an acceptance is only what the log knows, as the log last knew it.
fn mark_lost(journal: &Journal, mark: &Mark, log: &AuditLog) -> Result<usize, WriteError> {
    // Nothing of the request is known: its case shows only the names and the key.
    let request = serde_json::to_string(&StoredRequest::default()).unwrap_or_default();
    let mut lost = 0;
    let known = known_actions(log.path())?;
    for known in &known {
        let moved_since = known
            .last_mark
            .as_ref()
            .is_some_and(|m| m.id != mark.id || m.seq > mark.seq);
        if journal.record_lost(
            &known.task,
            &known.action,
            &known.idempotency_key,
            &request,
            moved_since,
        )? {
            lost += 1;
        }
    }
    let names = known
        .into_iter()
        .map(|k| (k.task, k.action))
        .collect::<std::collections::HashSet<_>>();
    lost += journal.lose_unknown(&names)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_stands_with_its_log_only_when_the_log_vouches_for_it() {
        let mark = |id: &str, seq| Mark { id: id.into(), seq };
        let logged = |id: &str, seq| JournalMark { id: id.into(), seq };
        let cases = [
            (mark("j1", 0), None, Standing::Agree),
            (mark("j1", 3), None, Standing::Unwitnessed),
            (mark("j1", 5), Some(logged("j1", 5)), Standing::Agree),
            (mark("j1", 6), Some(logged("j1", 5)), Standing::Agree),
            (mark("j1", 4), Some(logged("j1", 5)), Standing::Behind),
            (mark("j2", 9), Some(logged("j1", 5)), Standing::Replaced),
            (mark("j2", 0), Some(logged("j1", 5)), Standing::Replaced),
        ];
        for (m, l, want) in cases {
            assert_eq!(standing(&m, l.as_ref()), want, "{m} against {l:?}");
        }
    }
}
