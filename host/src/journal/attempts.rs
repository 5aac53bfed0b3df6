//! Each attempt of an action, as the journal saw it: what an escalation shows a person.

use rusqlite::params;

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
    /// A SQLite failure.
    pub fn log_attempt(&self, id: i64, a: &AttemptRecord) -> Result<(), JournalError> {
        self.conn()
            .execute(
                "INSERT INTO attempts (action_id, attempt, at_ms, status, retry_after_ms, note) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    a.attempt,
                    a.at_ms,
                    a.status,
                    a.retry_after_ms
                        .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX)),
                    a.note
                ],
            )
            .map(|_| ())
            .map_err(|e| self.sqlite(e))
    }

    /// The attempts of action `id`, in order.
    ///
    /// # Errors
    /// A SQLite failure.
    pub fn attempts_of(&self, id: i64) -> Result<Vec<AttemptRecord>, JournalError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT attempt, at_ms, status, retry_after_ms, note FROM attempts \
                 WHERE action_id = ?1 ORDER BY rowid",
            )
            .map_err(|e| self.sqlite(e))?;
        let rows = stmt
            .query_map([id], |r| {
                Ok(AttemptRecord {
                    attempt: r.get(0)?,
                    at_ms: r.get(1)?,
                    status: r.get(2)?,
                    retry_after_ms: r
                        .get::<_, Option<i64>>(3)?
                        .map(|ms| u64::try_from(ms).unwrap_or(0)),
                    note: r.get(4)?,
                })
            })
            .map_err(|e| self.sqlite(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sqlite(e))
    }
}
