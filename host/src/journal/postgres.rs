//! The journal of a group of hosts, in PostgreSQL (`[journal] url = "postgres://…"`).
//!
//! The journal's methods are synchronous, as SQLite's are, and are called from the host's
//! tasks. So the client runs on a runtime of the journal's own (one thread, named
//! `sluice-journal`), which owns the pool's connections and drives their sockets; a method
//! takes a connection from the pool there and then runs its statements from the calling
//! thread, waiting on each answer as it waits on SQLite's `fsync`. No runtime is ever
//! entered from inside another, so the journal works under any runtime an embedder runs.
//!
//! Every write is one transaction at `SERIALIZABLE`, retried from the start when PostgreSQL
//! finds it conflicts with another host's ([`Postgres::write`]): the same guarantee as
//! SQLite's write lock, that a lookup and the insert or update it decides are one step. (A
//! change to rows every host changes at once, budget use, locks them instead, at `READ
//! COMMITTED`: [`super::Journal::write_locking`].) A commit returns once PostgreSQL has
//! made it durable (`synchronous_commit`, on by default; the operator's documentation says
//! to keep it on).
//!
//! The connections are encrypted as the URL's `sslmode` says, libpq's way ([`tls`]).

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::pg_error::{PgError, describe};
use super::value::{BadColumn, DbError, NOW_MS, Row, Value, ms};
use crate::tls::refusal::Peer;

pub(crate) mod tls;

/// How long a method waits for a connection from the pool, or for a new one to be made.
const CONNECT_PATIENCE: Duration = Duration::from_secs(5);

/// How long what a connection sent may go unacknowledged before it is given up.
const UNANSWERED: Duration = Duration::from_secs(10);

/// How many connections a host keeps to the database.
const POOL_SIZE: usize = 8;

/// How many times a transaction that conflicted with another host's is run again.
const CONFLICT_RETRIES: u32 = 20;

/// The statement that takes or renews host `?1`'s lease for `?2` ms as process `?3`: it
/// changes nothing (0 rows) while another live process holds the host's id, since two
/// processes that both think they own its actions could both send one.
pub(crate) fn take_lease_sql() -> String {
    format!(
        "INSERT INTO hosts (host, lease_until_ms, process) VALUES (?1, {NOW_MS} + ?2, ?3) \
         ON CONFLICT (host) DO UPDATE SET lease_until_ms = excluded.lease_until_ms, \
         process = excluded.process \
         WHERE hosts.process = excluded.process OR hosts.lease_until_ms < {NOW_MS}"
    )
}

/// A group's journal database: its pool, and the runtime that drives it.
pub(crate) struct Postgres {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    pool: Pool,
    /// One connection of the lease's own, so that a busy pool never delays a renewal.
    lease_pool: Pool,
    /// The server, in the words of a refused certificate.
    peer: Peer,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("pool", &self.pool.status())
            .finish_non_exhaustive()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Allowed anywhere, even inside another runtime's task: the connections' tasks stop.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why the pool gave no connection: a refused certificate in the words of `peer`, what the
/// server said when it refused the connection, else as the pool says it.
fn pool_error(peer: &Peer, e: &deadpool_postgres::PoolError) -> String {
    if let Some(said) = peer.explain(e) {
        return said;
    }
    match e {
        deadpool_postgres::PoolError::Backend(db) => describe(db),
        other => other.to_string(),
    }
}

/// Checks `url` as [`Postgres::new`] reads it, without connecting: its TLS parameters,
/// the certificate files they name, and the rest of it.
///
/// # Errors
/// What cannot work, as text naming the parameter or the file.
pub(crate) fn check_url(url: &str) -> Result<(), String> {
    let (rest, params) = tls::split(url)?;
    tls::Tls::read(&params)?;
    tokio_postgres::Config::from_str(&rest).map_err(|e| format!("it does not parse: {e}"))?;
    Ok(())
}

/// `url` as it may be shown: without its password (nor its TLS parameters).
pub(crate) fn shown(url: &str) -> String {
    let url = tls::split(url).map_or_else(|_| url.to_owned(), |(rest, _)| rest);
    match tokio_postgres::Config::from_str(&url) {
        Ok(c) => {
            let user = c.get_user().map(|u| format!("{u}@")).unwrap_or_default();
            let host = c
                .get_hosts()
                .iter()
                .map(|h| match h {
                    tokio_postgres::config::Host::Tcp(h) => h.clone(),
                    tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                })
                .collect::<Vec<_>>()
                .join(",");
            let port = c
                .get_ports()
                .first()
                .map(|p| format!(":{p}"))
                .unwrap_or_default();
            let db = c.get_dbname().unwrap_or("");
            format!("postgres://{user}{host}{port}/{db}")
        }
        Err(_) => "a PostgreSQL URL that does not parse".into(),
    }
}

impl Postgres {
    /// A pool of connections to `url`, encrypted as its `sslmode` says; none is made yet.
    ///
    /// # Errors
    /// A URL that does not parse, a certificate file it names that cannot be used, or a
    /// runtime that cannot start, as text.
    pub fn new(url: &str) -> Result<Self, String> {
        let (url, params) = tls::split(url).map_err(|e| format!("the URL's {e}"))?;
        let tls = tls::Tls::read(&params).map_err(|e| format!("the URL's {e}"))?;
        let mut config = tokio_postgres::Config::from_str(&url)
            .map_err(|e| format!("the URL does not parse: {e}"))?;
        config.ssl_mode(tls.wire_mode());
        let connector = tls.connector()?;
        // A database that stops answering fails the statement waiting on it, instead of
        // holding it forever: unless the URL says otherwise, a connection is given up when
        // it cannot be made in 5 s, or when what it sent is unacknowledged for 10 s.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_PATIENCE);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(UNANSWERED);
        }
        config.keepalives_idle(CONNECT_PATIENCE);
        // And on the server's side: no statement, lock wait or open transaction of a host
        // holds others for long (a host frozen inside a transaction would hold a takeover).
        // Ours first: a `-c` the URL's own `options` give comes later and wins.
        let options = format!(
            "-c statement_timeout={ms} -c lock_timeout={ms} \
             -c idle_in_transaction_session_timeout={ms} {}",
            config.get_options().unwrap_or(""),
            ms = UNANSWERED.as_millis()
        );
        config.options(options.trim_end());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sluice-journal")
            .enable_all()
            .build()
            .map_err(|e| format!("the journal's client could not start: {e}"))?;
        // Its queries' timeouts arm without a system call, as on every runtime that serves
        // requests (see `near_timer`); the timer ends with the runtime.
        drop(runtime.spawn(crate::near_timer::keep_a_timer_near(
            std::future::pending::<()>(),
        )));
        let pool = |size: usize| {
            let manager = Manager::from_config(
                config.clone(),
                connector.clone(),
                ManagerConfig {
                    recycling_method: RecyclingMethod::Fast,
                },
            );
            Pool::builder(manager)
                .max_size(size)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(CONNECT_PATIENCE))
                .create_timeout(Some(CONNECT_PATIENCE))
                .recycle_timeout(Some(CONNECT_PATIENCE))
                .build()
                .map_err(|e| format!("the pool could not be made: {e}"))
        };
        Ok(Self {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            pool: pool(POOL_SIZE)?,
            lease_pool: pool(1)?,
            peer: tls.peer,
        })
    }

    /// Runs `fut` on the journal's runtime and waits for it.
    fn on_runtime<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, PgError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| PgError::Stopped)
    }

    /// Renews `owner`'s lease (as process `process`) every quarter of `ttl`, on the
    /// journal's runtime and a connection of the lease's own, for as long as the journal
    /// lives: a host's lease waits neither for its own tasks nor for the pool. A renewal
    /// that fails is logged, and the next one tries again; `renewed` counts the renewals in
    /// a row since the last that failed.
    pub fn keep_lease(
        &self,
        owner: String,
        process: String,
        ttl: Duration,
        renewed: std::sync::Arc<std::sync::atomic::AtomicU32>,
    ) {
        let pool = self.lease_pool.clone();
        let peer = self.peer.clone();
        self.handle.spawn(async move {
            let sql = dollars(&take_lease_sql());
            let ttl_ms = ms(ttl);
            loop {
                tokio::time::sleep(ttl / 4).await;
                // Serializable, as every write of the journal: a takeover that read this
                // lease as run out and a renewal are ordered one way or the other.
                let attempt = async {
                    let mut client = pool.get().await.map_err(|e| pool_error(&peer, &e))?;
                    let tx = client
                        .build_transaction()
                        .isolation_level(tokio_postgres::IsolationLevel::Serializable)
                        .start()
                        .await
                        .map_err(|e| describe(&e))?;
                    let n = tx
                        .execute(&sql, &[&owner, &ttl_ms, &process])
                        .await
                        .map_err(|e| describe(&e))?;
                    tx.commit().await.map_err(|e| describe(&e))?;
                    if n == 0 {
                        return Err("another live process holds this host id".to_owned());
                    }
                    Ok(())
                };
                match attempt.await {
                    Ok(()) => {
                        renewed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(e) => {
                        renewed.store(0, std::sync::atomic::Ordering::Relaxed);
                        tracing::warn!(host = %owner, "the host's lease was not renewed: {e}");
                    }
                }
            }
        });
    }

    /// A connection from the pool.
    pub fn conn(&self) -> Result<PgConn, PgError> {
        let pool = self.pool.clone();
        let got = self.on_runtime(async move { pool.get().await })?;
        got.map(PgConn)
            .map_err(|e| PgError::Pool(pool_error(&self.peer, &e)))
    }

    /// Runs `f` in one `SERIALIZABLE` transaction, committed before this returns; run again
    /// from the start when it conflicted with another host's. `f` sees every statement's
    /// failure and returns it (or its own error) as an `E`; `conflict` says which `E` is a
    /// lost conflict.
    pub fn write<T, E: From<DbError>>(
        &self,
        f: impl FnMut(&PgConn) -> Result<T, E>,
        conflict: impl Fn(&E) -> bool,
    ) -> Result<T, E> {
        self.transaction("BEGIN ISOLATION LEVEL SERIALIZABLE", f, conflict)
    }

    /// Runs `f` in one transaction begun by `begin`, as [`Postgres::write`] does.
    pub fn transaction<T, E: From<DbError>>(
        &self,
        begin: &str,
        mut f: impl FnMut(&PgConn) -> Result<T, E>,
        conflict: impl Fn(&E) -> bool,
    ) -> Result<T, E> {
        let conn = self.conn().map_err(|e| E::from(e.into()))?;
        let mut tries = 0;
        loop {
            conn.batch(begin).map_err(E::from)?;
            let done = f(&conn).and_then(|t| conn.batch("COMMIT").map(|()| t).map_err(E::from));
            match done {
                Ok(t) => return Ok(t),
                Err(e) => {
                    // Nothing of a failed transaction stays; a connection whose ROLLBACK
                    // failed is broken and is not given back to the pool.
                    if conn.batch("ROLLBACK").is_err() {
                        let _ = Object::take(conn.0);
                        return Err(e);
                    }
                    tries += 1;
                    if !conflict(&e) || tries > CONFLICT_RETRIES {
                        return Err(e);
                    }
                    std::thread::sleep(Duration::from_millis(u64::from(tries)));
                }
            }
        }
    }
}

/// One pooled connection.
pub(crate) struct PgConn(Object);

impl std::fmt::Debug for PgConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgConn")
    }
}

/// `sql` with SQLite's `?1` parameters written as PostgreSQL's `$1`.
fn dollars(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

impl PgConn {
    fn batch(&self, sql: &str) -> Result<(), DbError> {
        futures_executor::block_on(self.0.batch_execute(sql)).map_err(|e| PgError::Db(e).into())
    }

    pub fn rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = futures_executor::block_on(async {
            let stmt = self.0.prepare_cached(&dollars(sql)).await?;
            self.0.query(&stmt, &refs).await
        })
        .map_err(PgError::Db)?;
        rows.iter().map(row).collect()
    }

    pub fn exec(&self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        Ok(futures_executor::block_on(async {
            let stmt = self.0.prepare_cached(&dollars(sql)).await?;
            self.0.execute(&stmt, &refs).await
        })
        .map_err(PgError::Db)?)
    }

    /// Runs `sql`, several statements without parameters (a schema).
    pub fn script(&self, sql: &str) -> Result<(), DbError> {
        self.batch(sql)
    }
}

fn row(r: &tokio_postgres::Row) -> Result<Row, DbError> {
    let mut out = Vec::with_capacity(r.len());
    for (i, column) in r.columns().iter().enumerate() {
        let ty = column.type_();
        let v = if *ty == Type::INT8 {
            r.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int))
        } else if *ty == Type::INT4 {
            r.try_get::<_, Option<i32>>(i)
                .map(|v| v.map(|n| Value::Int(n.into())))
        } else if *ty == Type::INT2 {
            r.try_get::<_, Option<i16>>(i)
                .map(|v| v.map(|n| Value::Int(n.into())))
        } else if *ty == Type::BOOL {
            r.try_get::<_, Option<bool>>(i)
                .map(|v| v.map(|b| Value::Int(b.into())))
        } else if *ty == Type::BYTEA {
            r.try_get::<_, Option<Vec<u8>>>(i)
                .map(|v| v.map(Value::Blob))
        } else if [Type::TEXT, Type::VARCHAR, Type::NAME, Type::BPCHAR].contains(ty) {
            r.try_get::<_, Option<String>>(i)
                .map(|v| v.map(Value::Text))
        } else {
            return Err(BadColumn {
                column: i,
                what: "an integer, text or bytes".into(),
                found: format!("a value of type {ty}"),
            }
            .into());
        };
        out.push(v.map_err(PgError::Db)?.unwrap_or(Value::Null));
    }
    Ok(Row(out))
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Self::Null => Ok(IsNull::Yes),
            Self::Int(i) => {
                if *ty == Type::INT8 {
                    i.to_sql(ty, out)
                } else if *ty == Type::INT4 {
                    i32::try_from(*i)?.to_sql(ty, out)
                } else if *ty == Type::INT2 {
                    i16::try_from(*i)?.to_sql(ty, out)
                } else if *ty == Type::BOOL {
                    (*i != 0).to_sql(ty, out)
                } else {
                    Err(format!("an integer given for a parameter of type {ty}").into())
                }
            }
            Self::Text(s) => s.as_str().to_sql(ty, out),
            Self::Blob(b) => b.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_renumbered_and_a_password_is_never_shown() {
        assert_eq!(
            dollars("UPDATE a SET s = ?2 WHERE id = ?1 AND n = '?'"),
            "UPDATE a SET s = $2 WHERE id = $1 AND n = '?'"
        );
        assert_eq!(
            shown("postgres://sluice:secret@db.internal:5433/journal"),
            "postgres://sluice@db.internal:5433/journal"
        );
        assert!(!shown("postgresql://u:hunter2@h/d").contains("hunter2"));
    }
}
