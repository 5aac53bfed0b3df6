//! Opening a group's journal in PostgreSQL: the same tables as a host's file, each host's
//! actions marked with their owner.
//!
//! The database (or the schema its URL's `search_path` names) is made a journal by the
//! first host that connects: the tables and the schema version ([`SCHEMA_VERSION`], in the
//! table `sluice_schema`) in one transaction, under an advisory lock, so hosts starting
//! together make it once. A database of a newer schema is refused; one that holds a table
//! of the journal's names without being a journal is refused and left as it is.

use super::super::db::Conn;
use super::super::group::DEFAULT_LEASE_TTL;
use super::super::postgres::Postgres;
use super::super::value::values;
use super::super::{Backend, Fail, Journal, JournalError, health::Health};
use super::SCHEMA_VERSION;
use std::time::Duration;

/// The lock that makes the schema once, whoever connects first (`sluc` in ASCII).
const SCHEMA_LOCK: i64 = 0x736c_7563;

/// The journal's tables in PostgreSQL, at [`SCHEMA_VERSION`]. The columns are SQLite's,
/// with PostgreSQL's types; `attempts.rowid` is the order SQLite keeps by itself.
const SCHEMA: &str = r#"
CREATE TABLE actions (
    id BIGSERIAL PRIMARY KEY,
    task TEXT NOT NULL,
    action TEXT NOT NULL,
    provider TEXT NOT NULL,
    method TEXT NOT NULL,
    route TEXT NOT NULL,
    class TEXT NOT NULL,
    body BYTEA NOT NULL,
    body_sha256 BYTEA NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    client_reference TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    operation_id TEXT,
    request TEXT NOT NULL,
    goal TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    UNIQUE (task, action)
);
CREATE INDEX actions_state ON actions (state);
CREATE INDEX actions_owner ON actions (owner);
CREATE TABLE cancelled_tasks (
    task TEXT PRIMARY KEY,
    at_ms BIGINT NOT NULL
);
CREATE TABLE attempts (
    rowid BIGSERIAL PRIMARY KEY,
    action_id BIGINT NOT NULL REFERENCES actions (id),
    attempt BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    status BIGINT,
    retry_after_ms BIGINT,
    note TEXT NOT NULL
);
CREATE INDEX attempts_action ON attempts (action_id);
CREATE TABLE escalations (
    id BIGSERIAL PRIMARY KEY,
    action_id BIGINT REFERENCES actions (id),
    task TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    case_json TEXT NOT NULL,
    resolved_ms BIGINT,
    applied BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE approvals (
    id BIGSERIAL PRIMARY KEY,
    escalation_id BIGINT NOT NULL REFERENCES escalations (id),
    kind TEXT NOT NULL,
    task TEXT NOT NULL,
    action_id BIGINT,
    option TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    operation_id TEXT,
    note TEXT NOT NULL,
    audited BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE disclosures (
    id BIGSERIAL PRIMARY KEY,
    escalation_id BIGINT NOT NULL,
    action_id BIGINT NOT NULL,
    task TEXT NOT NULL,
    asked_by TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    audited BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE budget_use (
    tenant TEXT NOT NULL,
    "window" TEXT NOT NULL,
    period TEXT NOT NULL,
    starts_ms BIGINT NOT NULL,
    resets_ms BIGINT NOT NULL,
    requests BIGINT NOT NULL DEFAULT 0,
    tokens BIGINT NOT NULL DEFAULT 0,
    spend_micros BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, "window", period)
);
CREATE TABLE answers (
    action_id BIGINT PRIMARY KEY REFERENCES actions (id),
    status BIGINT NOT NULL,
    content_type TEXT,
    body BYTEA NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX answers_at ON answers (at_ms);
CREATE TABLE hosts (
    host TEXT PRIMARY KEY,
    lease_until_ms BIGINT NOT NULL,
    process TEXT NOT NULL
);
"#;

/// The tables a journal has: a database holding one of them without `sluice_schema` is
/// not a journal.
const TABLES: [&str; 10] = [
    "actions",
    "cancelled_tasks",
    "attempts",
    "escalations",
    "approvals",
    "disclosures",
    "budget_use",
    "answers",
    "hosts",
    "marks",
];

/// What the database is, read under the schema lock; a blank one is made a journal.
fn make_or_check(c: Conn<'_>, shown: &str, create: bool) -> Result<(), Fail> {
    c.exec("SELECT pg_advisory_xact_lock(?1)", values![SCHEMA_LOCK])?;
    let known: bool = c.one("SELECT to_regclass('sluice_schema') IS NOT NULL", &[])?;
    if known {
        let version: i64 = c.one("SELECT max(version) FROM sluice_schema", &[])?;
        if version > i64::from(SCHEMA_VERSION) {
            return Err(JournalError::NewerSchema {
                path: shown.into(),
                version: i32::try_from(version).unwrap_or(i32::MAX),
                supported: SCHEMA_VERSION,
            }
            .into());
        }
        // Migrations from one PostgreSQL schema version to the next, in order.
        if version < 5 {
            c.exec(super::super::marks::TABLE, &[])?;
            c.exec("UPDATE sluice_schema SET version = 5", &[])?;
        }
        return Ok(());
    }
    for table in TABLES {
        let taken: bool = c.one("SELECT to_regclass(?1) IS NOT NULL", values![table])?;
        if taken {
            return Err(JournalError::NotAJournal {
                path: shown.into(),
                found: format!(
                    "a database with a table `{table}` of its own and no sluice schema; use a \
                     database (or a schema, by the URL's search_path) of sluice's own"
                ),
            }
            .into());
        }
    }
    if !create {
        return Err(JournalError::NotAJournal {
            path: shown.into(),
            found: "a database with no sluice journal in it (only a host makes one)".into(),
        }
        .into());
    }
    match c {
        Conn::Postgres(pg) => pg.script(SCHEMA)?,
        Conn::Sqlite(_) => {}
    }
    c.exec(super::super::marks::TABLE, &[])?;
    c.exec("CREATE TABLE sluice_schema (version BIGINT NOT NULL)", &[])?;
    c.exec(
        "INSERT INTO sluice_schema (version) VALUES (?1)",
        values![i64::from(SCHEMA_VERSION)],
    )?;
    Ok(())
}

impl Journal {
    /// Connects to the group's journal at `url` (`postgres://user:password@host/db`) as host
    /// `owner`: the actions this host records are its own, and only they are resumed by it
    /// ([`Journal::unfinished`]). A blank database is made a journal; one of a newer schema,
    /// or with tables of its own, is refused. `owner` empty is an operator's view.
    ///
    /// # Errors
    /// [`JournalError::Postgres`] when the URL does not parse or the database does not
    /// answer, [`JournalError::NewerSchema`], [`JournalError::NotAJournal`].
    pub fn connect(url: &str, owner: &str) -> Result<Self, JournalError> {
        Self::connect_with(url, owner, DEFAULT_LEASE_TTL)
    }

    /// As [`Journal::connect`], with a lease of `lease_ttl`: this host holds it from now on
    /// (renewed every quarter of it), and another host of the group takes this host's
    /// unfinished actions once it has run out for as long again ([`Journal::group`]).
    ///
    /// # Errors
    /// As [`Journal::connect`].
    pub fn connect_with(url: &str, owner: &str, lease_ttl: Duration) -> Result<Self, JournalError> {
        let journal = Self::connect_to(url, owner, true, lease_ttl)?;
        journal.group().hold()?;
        journal.load_mark()?;
        Ok(journal)
    }

    /// Connects to the group's journal at `url` for an operator's command: every host's
    /// actions, escalations and budget use. A database that is not a journal yet is
    /// refused, not made one.
    ///
    /// # Errors
    /// As [`Journal::connect`], and [`JournalError::NotAJournal`] for a blank database.
    pub fn connect_existing(url: &str) -> Result<Self, JournalError> {
        Self::connect_to(url, "", false, DEFAULT_LEASE_TTL)
    }

    pub(in super::super) fn connect_to(
        url: &str,
        owner: &str,
        create: bool,
        lease_ttl: Duration,
    ) -> Result<Self, JournalError> {
        let shown = super::super::postgres::shown(url);
        let pg = Postgres::new(url).map_err(|error| JournalError::Postgres {
            path: shown.clone(),
            error,
        })?;
        let journal = Self {
            path: shown.clone(),
            owner: owner.to_owned(),
            lease_ttl,
            process: super::super::new_idempotency_key()?,
            renewed: std::sync::Arc::default(),
            backend: Backend::Postgres(pg),
            health: Health::default(),
            marks: super::super::marks::Marks::default(),
            key_secret: None,
        };
        // At READ COMMITTED: each statement sees what a host that held the lock before
        // committed (at SERIALIZABLE the snapshot would predate the lock).
        if let Backend::Postgres(pg) = &journal.backend {
            pg.transaction(
                "BEGIN",
                |c| make_or_check(Conn::Postgres(c), &shown, create),
                |_| false,
            )
            .map_err(|e| journal.fail(e))?;
        }
        Ok(journal)
    }
}
