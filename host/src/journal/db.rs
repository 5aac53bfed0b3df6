//! The journal's statements, written once for both of its databases: the embedded SQLite
//! of one host and the PostgreSQL a group of hosts shares ([`super::postgres`]).
//!
//! A statement is SQL both understand (`?1`, `?2` … for its parameters, rewritten to `$1`
//! for PostgreSQL; `ON CONFLICT`, `RETURNING`, `CASE` rather than either's own forms), its
//! parameters are [`Value`]s, and the rows it returns are [`Row`]s of values. Every table
//! holds only integers, text and bytes, so the two databases read the same rows.

use std::borrow::Cow;

use rusqlite::types::ValueRef;

use super::value::{BadColumn, DbError, FromValue, Row, Value};

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
    use crate::journal::value::values;

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
