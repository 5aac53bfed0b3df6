//! The journal's mark: which journal this is, and how far this host's record in it goes.
//!
//! A journal can be lost without a trace in its own file: restored from an older snapshot,
//! replaced by another host's, emptied and made again, its database dropped and made anew.
//! Each looks like a healthy journal that simply does not know some actions — and an action
//! the journal does not know is sent as new. So the journal carries a [`Mark`]: an id drawn
//! once, when the journal (or, in a group's database, this host's part of it) is made, and a
//! sequence this host bumps in every transaction that records or moves one of its actions.
//! The audit log, written after each such commit, records the mark it saw. A journal whose
//! mark has another id than the audit log's last, or a lower sequence, lost records the audit
//! log proves it had ([`crate::writes::witnesses`]).

use std::sync::Mutex;
use std::sync::PoisonError;

use super::db::Conn;
use super::value::values;
use super::{Fail, Journal, JournalError};

/// Which journal, and how far into it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Mark {
    /// Drawn when the journal (or this host's part of a group's) was made.
    pub id: String,
    /// Bumped by every transaction that records or moves one of this host's actions.
    pub seq: u64,
}

impl std::fmt::Display for Mark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "journal {} at {}", self.id, self.seq)
    }
}

/// The mark as this process last committed it, and why the journal changed under this
/// process if it did (then it stays so until the host starts again).
#[derive(Debug, Default)]
pub(super) struct Marks(Mutex<Mark>, std::sync::OnceLock<String>);

impl Marks {
    /// Why the journal changed under this process, if it did.
    pub(super) fn moved_under(&self) -> Option<&str> {
        self.1.get().map(String::as_str)
    }

    fn set(&self, mark: Mark) {
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if m.id != mark.id || mark.seq > m.seq {
            *m = mark;
        }
    }
}

/// The table, made with the journal (schema 5) or by the first host that reaches a journal
/// made before it.
pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS marks (
    owner TEXT PRIMARY KEY,
    journal_id TEXT NOT NULL,
    seq BIGINT NOT NULL
)";

impl Journal {
    /// This journal's mark as of the last commit of this process.
    pub fn mark(&self) -> Mark {
        self.marks
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads this host's mark, making it when there is none (a new journal, or one made
    /// before marks), and keeps it. Called when a host opens its journal.
    pub(super) fn load_mark(&self) -> Result<Mark, JournalError> {
        let id = new_id()?;
        let mark = self.write(|c| {
            c.exec(
                "INSERT INTO marks (owner, journal_id, seq) VALUES (?1, ?2, 0) \
                 ON CONFLICT (owner) DO NOTHING",
                values![&self.owner, &id],
            )?;
            read(c, &self.owner, &self.path)
        })?;
        self.marks.set(mark.clone());
        Ok(mark)
    }

    /// Bumps this host's sequence inside the transaction on `c`, returning the new mark, to
    /// be kept once the transaction commits ([`Journal::write_marked`]) — unless the journal
    /// changed under this process since its last commit: a mark of another id, or one not
    /// past the last committed ([`JournalError::MovedUnder`]; the transaction rolls back).
    /// The start holds a journal to the audit log; this holds it to itself while it runs.
    fn bump(&self, c: Conn<'_>) -> Result<Mark, Fail> {
        let known = self.mark();
        let mark = self.bump_as_found(c)?;
        if !known.id.is_empty() && (mark.id != known.id || mark.seq <= known.seq) {
            let error = JournalError::MovedUnder {
                path: self.path.clone(),
                known,
                found: mark,
            };
            if self.marks.1.set(error.to_string()).is_ok() {
                tracing::error!("{error}");
            }
            return Err(error.into());
        }
        Ok(mark)
    }

    /// Bumps this host's sequence inside the transaction on `c` as the journal holds it.
    fn bump_as_found(&self, c: Conn<'_>) -> Result<Mark, Fail> {
        let bumped = c.exec(
            "UPDATE marks SET seq = seq + 1 WHERE owner = ?1",
            values![&self.owner],
        )?;
        if bumped == 0 {
            // A journal reached without a host's start (an operator's command that settles
            // actions): this host's mark is made here.
            c.exec(
                "INSERT INTO marks (owner, journal_id, seq) VALUES (?1, ?2, 1)",
                values![&self.owner, &new_id()?],
            )?;
        }
        read(c, &self.owner, &self.path)
    }

    /// A write transaction that records or moves an action — records it, moves its state,
    /// escalates it, cancels its task, resolves its case, takes it over: `f`, then this host's
    /// sequence bumped in the same transaction, kept as [`Journal::mark`] once it commits.
    /// Every such transaction goes through here, so a journal restored to just before any of
    /// them is behind the audit log's record of it.
    pub(super) fn write_marked<T>(
        &self,
        mut f: impl FnMut(Conn<'_>) -> Result<T, Fail>,
    ) -> Result<T, JournalError> {
        let mut bumped = None;
        let out = self.write(|c| {
            let out = f(c)?;
            bumped = Some(self.bump(c)?);
            Ok(out)
        })?;
        if let Some(mark) = bumped {
            self.marks.set(mark);
        }
        Ok(out)
    }

    /// Gives this host's mark a new id and a sequence of at least `seq` (an operator
    /// accepted a journal the audit log disagreed with: from now on the two agree),
    /// returning the mark. The new id makes the accepted journal one of its own: a copy of
    /// it put back where it came from (or of the journal it was copied from) is then
    /// another journal to that host's log, not one that agrees with it.
    ///
    /// # Errors
    /// A database failure.
    pub fn renew_mark(&self, seq: u64) -> Result<Mark, JournalError> {
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        let id = new_id()?;
        let mark = self.write(|c| {
            c.exec(
                "UPDATE marks SET journal_id = ?3, \
                 seq = CASE WHEN seq < ?2 THEN ?2 ELSE seq END WHERE owner = ?1",
                values![&self.owner, seq, &id],
            )?;
            self.bump_as_found(c)
        })?;
        self.marks.set(mark.clone());
        Ok(mark)
    }
}

/// A new journal id: 128 random bits.
fn new_id() -> Result<String, JournalError> {
    Ok(format!(
        "j-{}",
        &super::new_idempotency_key()?["sluice-".len()..]
    ))
}

/// This host's mark, read inside a transaction.
fn read(c: Conn<'_>, owner: &str, path: &str) -> Result<Mark, Fail> {
    let row = c
        .row(
            "SELECT journal_id, seq FROM marks WHERE owner = ?1",
            values![owner],
        )?
        .ok_or_else(|| JournalError::Corrupt {
            path: path.into(),
            detail: format!(
                "the journal's table `marks` has no row for host {owner:?}: it was edited"
            ),
        })?;
    let seq: i64 = row.get(1)?;
    Ok(Mark {
        id: row.get(0)?,
        seq: u64::try_from(seq).unwrap_or(0),
    })
}

impl Journal {
    /// Records `lost` every action of this host's that is not over and that `known` (the
    /// actions the audit log knows) lacks: a journal accepted on an operator's word may hold
    /// another host's actions (a copy of its journal), or this host's as an older copy had
    /// them; neither is this host's to send. Returns how many moved.
    ///
    /// # Errors
    /// A database failure.
    pub fn lose_unknown(
        &self,
        known: &std::collections::HashSet<(String, String)>,
    ) -> Result<usize, JournalError> {
        let live = format!(
            "SELECT id, task, action FROM actions WHERE owner = ?1 AND state IN ({})",
            super::State::sql_may_become(super::State::Lost)
        );
        self.write_marked(|c| {
            let live = c.rows(&live, values![&self.owner])?;
            let mut moved = 0;
            for row in live {
                let (id, task, action): (i64, String, String) =
                    (row.get(0)?, row.get(1)?, row.get(2)?);
                if !known.contains(&(task, action)) {
                    moved += c.exec(
                        "UPDATE actions SET state = 'lost' WHERE id = ?1",
                        values![id],
                    )?;
                }
            }
            Ok(usize::try_from(moved).unwrap_or(usize::MAX))
        })
    }

    /// Records action `action` of `task`, which the audit log knows and this journal does
    /// not, as `lost`: it may have happened, so it is never sent, and a resubmit of it goes to
    /// a person. `key` is the idempotency key the log names; `request` the stored request to
    /// show in its case. An action the journal holds is left as it is, unless `moved_since`
    /// (the log saw it move after the journal's copy was made) and it is not over: then it
    /// is lost too. Returns whether the action was recorded or moved lost.
    ///
    /// # Errors
    /// A database failure.
    pub fn record_lost(
        &self,
        task: &str,
        action: &str,
        key: &str,
        request: &str,
        moved_since: bool,
    ) -> Result<bool, JournalError> {
        let reference = super::client_reference(task, action);
        let lose = format!(
            "UPDATE actions SET state = 'lost' WHERE task = ?1 AND action = ?2 AND state IN ({})",
            super::State::sql_may_become(super::State::Lost)
        );
        self.write_marked(|c| {
            let known: bool = c.one(
                "SELECT EXISTS (SELECT 1 FROM actions WHERE (task = ?1 AND action = ?2) \
                 OR idempotency_key = ?3)",
                values![task, action, key],
            )?;
            if known {
                if !moved_since {
                    return Ok(false);
                }
                // The log saw it move after the journal's copy was made: what the journal
                // says of it is old (a `pending` one may have been refused, a `refused` one
                // resubmitted and sent). Unless it was already over, it is lost too.
                let moved = c.exec(&lose, values![task, action])?;
                return Ok(moved > 0);
            }
            c.exec(
                "INSERT INTO actions (task, action, provider, method, route, class, body, \
                 body_sha256, idempotency_key, client_reference, state, request, goal, owner) \
                 VALUES (?1, ?2, '', '', '', 'uncertain_write', ?3, ?3, ?4, ?5, 'lost', ?6, \
                 'unknown: the journal lost this action''s record', ?7)",
                values![
                    task,
                    action,
                    &Vec::<u8>::new(),
                    key,
                    &reference,
                    request,
                    &self.owner
                ],
            )?;
            Ok(true)
        })
    }
}
