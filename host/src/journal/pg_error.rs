//! A PostgreSQL failure of the group's journal, and what it says: a conflict to run again,
//! or a database that cannot be written now.

use tokio_postgres::error::SqlState;

/// A PostgreSQL failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PgError {
    /// The server refused a statement, or the connection failed.
    #[error("{}", describe(.0))]
    Db(#[from] tokio_postgres::Error),
    /// No connection could be had.
    #[error("no connection to PostgreSQL: {0}")]
    Pool(String),
    /// The journal's runtime is gone (the host is stopping).
    #[error("the journal's PostgreSQL client has stopped")]
    Stopped,
}

/// What a PostgreSQL error says: the server's message and its SQL state, or the client's
/// own words.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

impl PgError {
    /// Whether the transaction lost a conflict with another and may simply run again.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Db(e) if e.code().is_some_and(|c|
            *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED))
    }

    /// Whether it says the database cannot be written now (rather than a statement's own
    /// fault): unreachable, shutting down, out of room, read-only.
    pub fn is_unwritable(&self) -> bool {
        match self {
            Self::Pool(_) | Self::Stopped => true,
            Self::Db(e) => match e.code() {
                // No SQL state: the connection failed (closed, or its socket), unless the
                // client could not convert a value.
                None => {
                    e.is_closed()
                        || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
                }
                Some(c) => {
                    let c = c.code();
                    c.starts_with("08")
                        || c.starts_with("53")
                        || c.starts_with("57P")
                        || c == SqlState::READ_ONLY_SQL_TRANSACTION.code()
                }
            },
        }
    }
}
