//! The journal's statements, written once for both of its databases: the embedded SQLite
//! of one host and the PostgreSQL a group of hosts shares ([`super::postgres`]).
//!
//! A statement is SQL both understand (`?1`, `?2` … for its parameters, rewritten to `$1`
//! for PostgreSQL; `ON CONFLICT`, `RETURNING`, `CASE` rather than either's own forms), its
//! parameters are [`Value`]s, and the rows it returns are [`Row`]s of values. Every table
//! holds only integers, text and bytes, so the two databases read the same rows.

use std::borrow::Cow;

use rusqlite::types::ValueRef;

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
        &[$($crate::journal::db::Value::from($v)),*][..]
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
    Postgres(#[from] super::postgres::PgError),
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

/// A connection, or a transaction on one: runs statements.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Conn<'a> {
    /// The host's own file.
    Sqlite(&'a rusqlite::Connection),
    /// The group's database.
    #[cfg(feature = "postgres")]
    Postgres(&'a super::postgres::PgConn),
}

impl Conn<'_> {
    /// Runs `sql` with `params`, returning its rows.
    ///
    /// # Errors
    /// The database's failure.
    pub fn rows(self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        match self {
            Self::Sqlite(c) => sqlite_rows(c, sql, params),
            #[cfg(feature = "postgres")]
            Self::Postgres(c) => c.rows(sql, params),
        }
    }

    /// Runs `sql` with `params`, returning how many rows it changed.
    ///
    /// # Errors
    /// The database's failure.
    pub fn exec(self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        match self {
            Self::Sqlite(c) => {
                let n = c
                    .prepare_cached(sql)?
                    .execute(rusqlite::params_from_iter(params))?;
                Ok(u64::try_from(n).unwrap_or(u64::MAX))
            }
            #[cfg(feature = "postgres")]
            Self::Postgres(c) => c.exec(sql, params),
        }
    }

    /// What ends a `SELECT` that locks the rows it reads until the transaction ends
    /// (`FOR UPDATE`), where the database locks rows; empty in SQLite, whose write
    /// transaction holds the whole file.
    pub fn for_update(self) -> &'static str {
        match self {
            Self::Sqlite(_) => "",
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => " FOR UPDATE",
        }
    }

    /// The first row `sql` returns, if any.
    ///
    /// # Errors
    /// The database's failure.
    pub fn row(self, sql: &str, params: &[Value]) -> Result<Option<Row>, DbError> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }

    /// The first column of the first row `sql` returns, which must be one.
    ///
    /// # Errors
    /// The database's failure, or [`BadColumn`] when there is no row or it holds something
    /// else.
    pub fn one<T: FromValue>(self, sql: &str, params: &[Value]) -> Result<T, DbError> {
        let row = self.row(sql, params)?.unwrap_or(Row(Vec::new()));
        Ok(row.get(0)?)
    }
}

fn sqlite_rows(c: &rusqlite::Connection, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
    let mut stmt = c.prepare_cached(sql)?;
    let columns = stmt.column_count();
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut row = Vec::with_capacity(columns);
        for i in 0..columns {
            row.push(match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::Int(n),
                ValueRef::Text(t) => match std::str::from_utf8(t) {
                    Ok(t) => Value::Text(t.to_owned()),
                    Err(e) => {
                        return Err(BadColumn {
                            column: i,
                            what: Cow::Borrowed("UTF-8 text"),
                            found: format!("text that is not UTF-8 ({e})"),
                        }
                        .into());
                    }
                },
                ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                ValueRef::Real(x) => {
                    return Err(BadColumn {
                        column: i,
                        what: Cow::Borrowed("an integer, text or bytes"),
                        found: format!("the real number {x}"),
                    }
                    .into());
                }
            });
        }
        out.push(Row(row));
    }
    Ok(out)
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::Borrowed(match self {
            Self::Null => ValueRef::Null,
            Self::Int(i) => ValueRef::Integer(*i),
            Self::Text(s) => ValueRef::Text(s.as_bytes()),
            Self::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_converts_what_the_journal_writes_and_names_what_it_does_not() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let row = Conn::Sqlite(&c)
            .row(
                "SELECT ?1, ?2, ?3, ?4, ?5",
                values![7_i64, "sent", &b"ab".to_vec(), None::<i64>, 70_000_i64],
            )
            .unwrap()
            .unwrap();
        assert_eq!(row.get::<i64>(0).unwrap(), 7);
        assert_eq!(row.get::<String>(1).unwrap(), "sent");
        assert_eq!(row.get::<Vec<u8>>(2).unwrap(), b"ab");
        assert_eq!(row.get::<Option<i64>>(3).unwrap(), None);
        let e = row.get::<u16>(4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "column 4: the integer 70000 where a status belongs"
        );
        let e = row
            .parsed(1, "state", |s| (s == "pending").then_some(()))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "column 1: unknown state `sent` where a state belongs"
        );
    }
}
