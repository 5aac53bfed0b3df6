//! How the journal's statements run: on a connection, one at a time ([`Journal::read`]), or
//! in one transaction that commits before it returns ([`Journal::write`],
//! [`Journal::write_locking`]); and what a failure of the database means for the journal.

use std::sync::PoisonError;

use rusqlite::TransactionBehavior;

use super::db::Conn;
use super::value::DbError;
use super::{Backend, Fail, Journal, JournalError};

impl Journal {
    /// Runs `f` on a connection, each statement on its own.
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(Conn<'_>) -> Result<T, Fail>,
    ) -> Result<T, JournalError> {
        match &self.backend {
            Backend::Sqlite(conn) => {
                let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                f(Conn::Sqlite(&conn)).map_err(|e| self.fail(e))
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => {
                let conn = pg.conn().map_err(|e| self.db_error(e.into()))?;
                f(Conn::Postgres(&conn)).map_err(|e| self.fail(e))
            }
        }
    }

    /// Runs `f` in one transaction that holds the write lock from its first statement
    /// (SQLite's `IMMEDIATE`; PostgreSQL's `SERIALIZABLE`, run again when it conflicted with
    /// another host's), committed before this returns. Nothing of it stays when it fails.
    pub(crate) fn write<T>(
        &self,
        mut f: impl FnMut(Conn<'_>) -> Result<T, Fail>,
    ) -> Result<T, JournalError> {
        match &self.backend {
            Backend::Sqlite(conn) => {
                let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                let done = (|| {
                    let tx = conn
                        .transaction_with_behavior(TransactionBehavior::Immediate)
                        .map_err(|e| Fail::Db(e.into()))?;
                    let t = f(Conn::Sqlite(&tx))?;
                    tx.commit().map_err(|e| Fail::Db(e.into()))?;
                    Ok(t)
                })();
                done.map_err(|e| self.fail(e))
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => pg
                .write(
                    |c| f(Conn::Postgres(c)),
                    |e| matches!(e, Fail::Db(DbError::Postgres(p)) if p.is_conflict()),
                )
                .map_err(|e| self.fail(e)),
        }
    }

    /// Runs `f` in one transaction, as [`Journal::write`] does, for a change whose reads
    /// lock the rows they read ([`Conn::for_update`]): on PostgreSQL at `READ COMMITTED`, so
    /// hosts changing one row wait for each other's commit and then read what it left,
    /// instead of failing at `SERIALIZABLE` and running again after a pause. For rows every
    /// host changes at once (one tenant's budget use, charged by every call); on SQLite the
    /// same as [`Journal::write`], whose lock is the whole file's.
    pub(crate) fn write_locking<T>(
        &self,
        f: impl FnMut(Conn<'_>) -> Result<T, Fail>,
    ) -> Result<T, JournalError> {
        match &self.backend {
            Backend::Sqlite(_) => self.write(f),
            #[cfg(feature = "postgres")]
            Backend::Postgres(pg) => {
                let mut f = f;
                pg.transaction(
                    "BEGIN ISOLATION LEVEL READ COMMITTED",
                    |c| f(Conn::Postgres(c)),
                    // Two hosts locking the same rows in another order: one is told, and
                    // runs again.
                    |e| matches!(e, Fail::Db(DbError::Postgres(p)) if p.is_conflict()),
                )
                .map_err(|e| self.fail(e))
            }
        }
    }

    pub(super) fn fail(&self, fail: Fail) -> JournalError {
        match fail {
            Fail::Db(e) => self.db_error(e),
            Fail::Journal(e) => e,
        }
    }

    /// The error for `error`, raised by the database: corruption when it says the file is
    /// damaged or a value is not one the journal writes; a failure that says the journal
    /// cannot be written marks it failing ([`Journal::failing`]).
    pub(crate) fn db_error(&self, error: DbError) -> JournalError {
        match error {
            DbError::Sqlite(e) => {
                self.note_sqlite(&e);
                JournalError::from_sqlite(&self.path, e)
            }
            #[cfg(feature = "postgres")]
            DbError::Postgres(e) => {
                let text = crate::printable::printable(&e.to_string()).into_owned();
                if e.is_unwritable() {
                    self.note_failing(text.clone());
                }
                JournalError::Postgres {
                    path: self.path.clone(),
                    error: text,
                }
            }
            DbError::Column(e) => JournalError::Corrupt {
                path: self.path.clone(),
                detail: crate::printable::printable(&e.to_string()).into_owned(),
            },
        }
    }
}
