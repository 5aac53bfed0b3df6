//! Whether the journal can be written now. A host whose journal cannot take a write can
//! record no new action, so it is not ready for writes: `/readyz` asks [`Journal::failing`].
//!
//! A SQLite failure that says the file cannot be written — the disk full, an I/O error, the
//! file read-only or gone, the lock held by another process past the busy timeout — marks
//! the journal failing, logged once. While it is marked, [`Journal::failing`] probes it with
//! a write of its own (the schema version written again, unchanged, in a transaction of its
//! own, synced as every write): when that succeeds the mark goes, and the recovery is
//! logged; a journal that fails no write is never probed.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{ErrorCode, TransactionBehavior};

use super::Journal;

/// How long a probe waits for another process's lock.
const PROBE_PATIENCE: Duration = Duration::from_millis(200);

/// What the journal's last failed write said, while it is failing.
#[derive(Debug, Default)]
pub(super) struct Health(Mutex<Option<String>>);

impl Health {
    fn get(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `error` says the journal's file cannot be written (rather than a statement's
/// own fault).
fn unwritable(error: &rusqlite::Error) -> bool {
    let rusqlite::Error::SqliteFailure(e, _) = error else {
        return false;
    };
    matches!(
        e.code,
        ErrorCode::DiskFull
            | ErrorCode::SystemIoFailure
            | ErrorCode::ReadOnly
            | ErrorCode::CannotOpen
            | ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::DatabaseCorrupt
            | ErrorCode::NotADatabase
            | ErrorCode::OutOfMemory
    )
}

impl Journal {
    /// Notes `error`, raised by SQLite on this journal: one that says the file cannot be
    /// written marks the journal failing.
    pub(super) fn note_sqlite(&self, error: &rusqlite::Error) {
        if unwritable(error) {
            self.note_failing(crate::printable::printable(&error.to_string()).into_owned());
        }
    }

    /// Marks the journal failing, for `what`: logged once, until it can be written again.
    pub(super) fn note_failing(&self, what: String) {
        let mut failing = self.health.get();
        if failing.is_none() {
            tracing::error!(
                journal = %self.path,
                "the journal cannot be written ({what}): no new write can be recorded, and \
                 the host is not ready for writes until it can"
            );
        }
        *failing = Some(what);
    }

    /// Why the journal cannot be written now, if it cannot: after a write failed, a probe
    /// write says whether it still fails.
    pub fn failing(&self) -> Option<String> {
        if let Some(why) = self.marks.moved_under() {
            // Not a write that fails, a journal that is not the one this process wrote:
            // nothing is recorded until the host starts again.
            return Some(why.to_owned());
        }
        self.health.get().as_ref()?;
        match self.probe_write() {
            Ok(()) => {
                *self.health.get() = None;
                tracing::info!(journal = %self.path, "the journal can be written again");
                None
            }
            Err(why) => {
                *self.health.get() = Some(why.clone());
                Some(why)
            }
        }
    }

    /// A write that changes nothing: the schema version, as the file holds it, set again and
    /// committed. In SQLite it waits for another process's lock only [`PROBE_PATIENCE`], not
    /// the connection's busy timeout.
    fn probe_write(&self) -> Result<(), String> {
        let text =
            |e: &dyn std::fmt::Display| crate::printable::printable(&e.to_string()).into_owned();
        match &self.backend {
            super::Backend::Sqlite(conn) => {
                let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                // The connection's own busy timeout, as opening it set it, is put back after.
                let patience: i64 = conn
                    .pragma_query_value(None, "busy_timeout", |r| r.get(0))
                    .map_err(|e| text(&e))?;
                let written = (|| {
                    conn.busy_timeout(PROBE_PATIENCE)?;
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
                    tx.pragma_update(None, "user_version", version)?;
                    tx.commit()
                })();
                let restored = conn.pragma_update(None, "busy_timeout", patience);
                written.and(restored).map_err(|e| text(&e))
            }
            #[cfg(feature = "postgres")]
            // A read: hosts probing together after an outage do not conflict.
            super::Backend::Postgres(pg) => pg
                .conn()
                .map_err(super::value::DbError::from)
                .and_then(|c| c.rows("SELECT version FROM sluice_schema", &[]))
                .map(|_| ())
                .map_err(|e| text(&e)),
        }
    }
}
