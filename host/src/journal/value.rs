//! What the journal's statements take and give, in either of its databases: parameters and
//! columns as [`Value`]s, rows of them, the failures a statement can end with, and the
//! database's own clock as a statement reads it.

use std::borrow::Cow;
use std::time::Duration;

/// The database's clock, in milliseconds since the Unix epoch, read when the statement runs.
pub(crate) const NOW_MS: &str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";

/// `d` as a statement's parameter: whole milliseconds.
pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A parameter or a column's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// SQL `NULL`.
    Null,
    /// An integer (PostgreSQL `BIGINT`).
    Int(i64),
    /// Text.
    Text(String),
    /// Bytes (PostgreSQL `BYTEA`).
    Blob(Vec<u8>),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Self::Int(i64::from(v))
    }
}

impl From<u16> for Value {
    fn from(v: u16) -> Self {
        Self::Int(i64::from(v))
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Self::Int(i64::from(v))
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Self::Text(v.clone())
    }
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Self::Blob(v.to_vec())
    }
}

impl From<&Vec<u8>> for Value {
    fn from(v: &Vec<u8>) -> Self {
        Self::Blob(v.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

/// The parameters of a statement, each converted to a [`Value`].
macro_rules! values {
    ($($v:expr),* $(,)?) => {
        &[$($crate::journal::value::Value::from($v)),*][..]
    };
}
pub(crate) use values;

/// A column whose value is not what the journal writes there: the row was altered.
#[derive(Debug, thiserror::Error)]
#[error("column {column}: {found} where {what} belongs")]
pub(crate) struct BadColumn {
    /// The column's index in the row.
    pub column: usize,
    /// What belongs there.
    pub what: Cow<'static, str>,
    /// What was found.
    pub found: String,
}

/// What a statement can fail with.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL failed, or could not be reached.
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Postgres(#[from] super::pg_error::PgError),
    /// A value read back is not one the journal writes.
    #[error(transparent)]
    Column(#[from] BadColumn),
}

/// Why a step of a journal transaction stopped: the database failed, or the journal
/// refuses what was asked.
#[derive(Debug)]
pub(crate) enum Fail {
    /// A statement failed.
    Db(DbError),
    /// The journal refuses.
    Journal(super::JournalError),
}

impl From<DbError> for Fail {
    fn from(e: DbError) -> Self {
        Self::Db(e)
    }
}

impl From<BadColumn> for Fail {
    fn from(e: BadColumn) -> Self {
        Self::Db(e.into())
    }
}

impl From<super::JournalError> for Fail {
    fn from(e: super::JournalError) -> Self {
        Self::Journal(e)
    }
}

/// One row a query returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row(pub Vec<Value>);

/// A type a column converts to.
pub(crate) trait FromValue: Sized {
    /// What the column must hold, for the error when it does not.
    const WHAT: &'static str;
    /// The value, or `None` when `v` is not one.
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for i64 {
    const WHAT: &'static str = "an integer";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl FromValue for u32 {
    const WHAT: &'static str = "a count";
    fn from_value(v: &Value) -> Option<Self> {
        i64::from_value(v).and_then(|i| u32::try_from(i).ok())
    }
}

impl FromValue for u16 {
    const WHAT: &'static str = "a status";
    fn from_value(v: &Value) -> Option<Self> {
        i64::from_value(v).and_then(|i| u16::try_from(i).ok())
    }
}

impl FromValue for bool {
    const WHAT: &'static str = "0 or 1";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(0) => Some(false),
            Value::Int(1) => Some(true),
            _ => None,
        }
    }
}

impl FromValue for String {
    const WHAT: &'static str = "text";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl FromValue for Vec<u8> {
    const WHAT: &'static str = "bytes";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Blob(b) => Some(b.clone()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    const WHAT: &'static str = T::WHAT;
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => format!("the integer {i}"),
        Value::Text(s) => format!("the text `{}`", s.chars().take(64).collect::<String>()),
        Value::Blob(b) => format!("{} bytes", b.len()),
    }
}

impl Row {
    /// Column `i`, as a `T`.
    ///
    /// # Errors
    /// [`BadColumn`] when it holds something else (or there is no column `i`).
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T, BadColumn> {
        let v = self.0.get(i).unwrap_or(&Value::Null);
        T::from_value(v).ok_or_else(|| BadColumn {
            column: i,
            what: Cow::Borrowed(T::WHAT),
            found: describe(v),
        })
    }

    /// Column `i`, read as text and parsed by `parse` into something the journal writes
    /// there (a state, a kind, a choice).
    ///
    /// # Errors
    /// [`BadColumn`] when it is not text or `parse` does not know it.
    pub fn parsed<T>(
        &self,
        i: usize,
        what: &'static str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, BadColumn> {
        let s: String = self.get(i)?;
        parse(&s).ok_or_else(|| BadColumn {
            column: i,
            what: Cow::Owned(format!("a {what}")),
            found: format!(
                "unknown {what} `{}`",
                s.chars().take(64).collect::<String>()
            ),
        })
    }
}
