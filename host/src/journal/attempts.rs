//! Each attempt of an action, as the journal saw it: what an escalation shows a person.

use super::value::{BadColumn, values};
use super::{Journal, JournalError};

/// One attempt of an action.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttemptRecord {
    /// Which attempt (from 1); status queries and resends continue the count.
    pub attempt: u32,
    /// When it was sent, wall-clock milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The status answered; `None`: no answer.
    pub status: Option<u16>,
    /// The `Retry-After` the answer carried, in milliseconds.
    pub retry_after_ms: Option<u64>,
    /// What the attempt was (`send`, `status query`, `resend with the same key`) and how it
    /// was read.
    pub note: String,
}

impl Journal {
    /// Appends an attempt of action `id`.
    ///
    /// # Errors
    /// A database failure.
    pub fn log_attempt(&self, id: i64, a: &AttemptRecord) -> Result<(), JournalError> {
        self.write(|c| {
            c.exec(
                "INSERT INTO attempts (action_id, attempt, at_ms, status, retry_after_ms, note) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                values![
                    id,
                    a.attempt,
                    a.at_ms,
                    a.status,
                    a.retry_after_ms
                        .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX)),
                    &a.note
                ],
            )?;
            Ok(())
        })
    }

    /// The attempts of action `id`, in order.
    ///
    /// # Errors
    /// A database failure.
    pub fn attempts_of(&self, id: i64) -> Result<Vec<AttemptRecord>, JournalError> {
        // `rowid`: SQLite's own row order, and a column of that name in PostgreSQL.
        self.read(|c| {
            let rows = c.rows(
                "SELECT attempt, at_ms, status, retry_after_ms, note FROM attempts \
                 WHERE action_id = ?1 ORDER BY rowid",
                values![id],
            )?;
            Ok(rows
                .iter()
                .map(|r| {
                    Ok(AttemptRecord {
                        attempt: r.get(0)?,
                        at_ms: r.get(1)?,
                        status: r.get(2)?,
                        retry_after_ms: r
                            .get::<Option<i64>>(3)?
                            .map(|ms| u64::try_from(ms).unwrap_or(0)),
                        note: r.get(4)?,
                    })
                })
                .collect::<Result<_, BadColumn>>()?)
        })
    }
}
