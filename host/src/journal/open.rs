//! Opening the journal: a host creates it, everything else only opens one that exists.
//!
//! SQLite makes a database of any path it is given: an empty file, a typo, another program's
//! database. Opened carelessly, an operator's command pointed at the wrong file would turn it
//! into a journal (or switch it to WAL) and report "no escalations"; a damaged journal would
//! answer "no escalation 3". So:
//!
//! - only a host creates a journal ([`Journal::open_or_create`]), and every journal carries
//!   its identity in the database header: SQLite's `application_id` ([`APPLICATION_ID`]) and
//!   `user_version` (the schema version, [`SCHEMA_VERSION`]), set in the transaction that
//!   creates its tables;
//! - both are read **before anything is written** — before the switch to WAL, before any
//!   `CREATE` — and a file that is not a sluice journal, or one of a newer schema, is refused
//!   and left byte for byte as it was;
//! - an operator's command ([`Journal::open_existing`]) opens only a file that exists and is
//!   not empty, and runs SQLite's `quick_check` first, so that damage is reported as damage;
//! - a journal of an earlier schema version is migrated when opened, after those checks:
//!   each version's additions ([`MIGRATIONS`]) run in one transaction with the new
//!   `user_version`, so a journal is of one version or the next, never between.
//!
//! The journal holds payment bodies: a new one is created `0600` in a directory created
//! `0700`, whatever the umask ([`crate::private_fs`]). SQLite gives its `-wal` and `-shm`
//! files the mode of the database file, so the file is made before SQLite opens it.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::{Journal, JournalError};
use crate::private_fs;

/// The SQLite `application_id` of a sluice journal: `sluc` in ASCII.
pub const APPLICATION_ID: i32 = 0x736c_7563;

/// The schema version this build writes and reads (SQLite's `user_version`). A journal of
/// an earlier version is brought up to it when opened (each version's additions, in order).
pub const SCHEMA_VERSION: i32 = 5;

/// How long a statement waits for another process's lock before failing.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE actions (
    id INTEGER PRIMARY KEY,
    task TEXT NOT NULL,
    action TEXT NOT NULL,
    provider TEXT NOT NULL,
    method TEXT NOT NULL,
    route TEXT NOT NULL,
    class TEXT NOT NULL,
    body BLOB NOT NULL,
    body_sha256 BLOB NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    client_reference TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    operation_id TEXT,
    request TEXT NOT NULL,
    goal TEXT NOT NULL,
    UNIQUE (task, action)
);
CREATE INDEX actions_state ON actions (state);
CREATE TABLE cancelled_tasks (
    task TEXT PRIMARY KEY,
    at_ms INTEGER NOT NULL
);
CREATE TABLE attempts (
    action_id INTEGER NOT NULL REFERENCES actions (id),
    attempt INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    status INTEGER,
    retry_after_ms INTEGER,
    note TEXT NOT NULL
);
CREATE INDEX attempts_action ON attempts (action_id);
CREATE TABLE escalations (
    id INTEGER PRIMARY KEY,
    action_id INTEGER REFERENCES actions (id),
    task TEXT NOT NULL,
    kind TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    case_json TEXT NOT NULL,
    resolved_ms INTEGER,
    applied INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE approvals (
    id INTEGER PRIMARY KEY,
    escalation_id INTEGER NOT NULL REFERENCES escalations (id),
    kind TEXT NOT NULL,
    task TEXT NOT NULL,
    action_id INTEGER,
    option TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    operation_id TEXT,
    note TEXT NOT NULL,
    audited INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE disclosures (
    id INTEGER PRIMARY KEY,
    escalation_id INTEGER NOT NULL,
    action_id INTEGER NOT NULL,
    task TEXT NOT NULL,
    asked_by TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    audited INTEGER NOT NULL DEFAULT 0
);
";

/// What each schema version adds to the one before it, from version 2 on: `MIGRATIONS[0]`
/// makes a version 1 journal a version 2 one. A new journal gets [`SCHEMA`] and every
/// migration, in one transaction.
const MIGRATIONS: [&str; 4] = [
    // 2: budget use, per tenant and calendar period (read and written by `crate::budget`).
    "
CREATE TABLE budget_use (
    tenant TEXT NOT NULL,
    window TEXT NOT NULL,
    period TEXT NOT NULL,
    starts_ms INTEGER NOT NULL,
    resets_ms INTEGER NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,
    spend_micros INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, window, period)
);
",
    // 3: the provider's answers to writes, for a resubmission (see `answers`).
    "
CREATE TABLE answers (
    action_id INTEGER PRIMARY KEY REFERENCES actions (id),
    status INTEGER NOT NULL,
    content_type TEXT,
    body BLOB NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX answers_at ON answers (at_ms);
",
    // 4: the host that owns each action, for a journal a group of hosts shares (empty in a
    // host's own file).
    "
ALTER TABLE actions ADD COLUMN owner TEXT NOT NULL DEFAULT '';
",
    // 5: each host's mark (`marks`): the journal's id and how far this host's record goes,
    // which the audit log names.
    super::marks::TABLE,
];

/// What a database's header and catalogue say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// A sluice journal of a schema this build reads, of this version.
    Journal(i32),
    /// A database with nothing in it: no identity, no tables.
    Blank,
}

/// Reads what the database on `conn` is, writing nothing.
fn identify(conn: &Connection, path: &str) -> Result<Found, JournalError> {
    let read = |pragma: &str| {
        conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get::<_, i32>(0))
            .map_err(|e| refused(path, e))
    };
    let application_id = read("application_id")?;
    let version = read("user_version")?;
    if application_id == APPLICATION_ID {
        return match version {
            1..=SCHEMA_VERSION => Ok(Found::Journal(version)),
            v if v > SCHEMA_VERSION => Err(JournalError::NewerSchema {
                path: path.into(),
                version: v,
                supported: SCHEMA_VERSION,
            }),
            v => Err(JournalError::NotAJournal {
                path: path.into(),
                found: format!("sluice's application id with schema version {v}, never written"),
            }),
        };
    }
    let objects: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(|e| refused(path, e))?;
    if application_id == 0 && version == 0 && objects == 0 {
        return Ok(Found::Blank);
    }
    let found = if application_id == 0 {
        "an SQLite database with tables of its own and no sluice identity".to_owned()
    } else {
        format!("the SQLite database of another application, application_id {application_id:#x}")
    };
    Err(JournalError::NotAJournal {
        path: path.into(),
        found,
    })
}

/// The error for a first read that failed: a file that is no database at all is not a
/// journal; damage is corruption.
fn refused(path: &str, error: rusqlite::Error) -> JournalError {
    if let rusqlite::Error::SqliteFailure(e, _) = &error
        && e.code == rusqlite::ErrorCode::NotADatabase
    {
        return JournalError::NotAJournal {
            path: path.into(),
            found: "not an SQLite database, or one whose header is damaged".into(),
        };
    }
    JournalError::from_sqlite(path, error)
}

/// Runs SQLite's `quick_check`: the structure of every page, without comparing indexes to
/// their tables.
fn quick_check(conn: &Connection, path: &str) -> Result<(), JournalError> {
    let mut stmt = conn
        .prepare("PRAGMA quick_check(3)")
        .map_err(|e| JournalError::from_sqlite(path, e))?;
    let found: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(Iterator::collect)
        .map_err(|e| JournalError::from_sqlite(path, e))?;
    if found == ["ok"] {
        return Ok(());
    }
    Err(JournalError::Corrupt {
        path: path.into(),
        detail: crate::printable::printable(&found.join("; ")).into_owned(),
    })
}

/// Opens `path` read-write without ever creating it (the callers made or checked it).
fn connect(path: &Path, name: &str) -> Result<Connection, JournalError> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| JournalError::from_sqlite(name, e))
}

/// WAL with `synchronous=FULL`: a commit is on disk before it returns.
fn durable(conn: &Connection, name: &str) -> Result<(), JournalError> {
    let err = |e| JournalError::from_sqlite(name, e);
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(err)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)
}

/// Creates the schema and stamps the identity in one transaction, unless another host got
/// there first.
fn create_schema(conn: &mut Connection, name: &str) -> Result<(), JournalError> {
    let err = |e| JournalError::from_sqlite(name, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    // Under the write lock: a host that opened the same new file at the same moment has
    // either created the journal already or not started.
    if identify(&tx, name)? == Found::Blank {
        tx.execute_batch(SCHEMA).map_err(err)?;
        for step in MIGRATIONS {
            tx.execute_batch(step).map_err(err)?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(err)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(err)?;
    }
    tx.commit().map_err(err)
}

/// Brings a journal of an earlier schema version up to [`SCHEMA_VERSION`], one migration
/// after another, in one transaction (unless another host got there first).
fn migrate(conn: &mut Connection, name: &str) -> Result<(), JournalError> {
    let err = |e| JournalError::from_sqlite(name, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(err)?;
    if let Found::Journal(version) = identify(&tx, name)? {
        let done = usize::try_from(version - 1).unwrap_or(0);
        for step in MIGRATIONS.iter().skip(done) {
            tx.execute_batch(step).map_err(err)?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(err)?;
    }
    tx.commit().map_err(err)
}

/// The file at `path`, made `0600` (and its missing directories `0700`) when there is none.
fn make_file(path: &Path, name: &str) -> Result<(), JournalError> {
    let io = |e: std::io::Error| JournalError::Io {
        path: name.into(),
        error: e,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_fs::create_dir_all(dir).map_err(io)?;
    }
    match private_fs::options()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// Checks that `path` is a regular file, returning its length.
fn regular_file(path: &Path, name: &str) -> Result<u64, JournalError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(meta.len()),
        Ok(_) => Err(JournalError::NotAFile { path: name.into() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(JournalError::NotFound { path: name.into() })
        }
        Err(e) => Err(JournalError::Io {
            path: name.into(),
            error: e,
        }),
    }
}

/// What lies at a journal's path, read without writing to it ([`Journal::probe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// No file.
    Missing,
    /// A file of 0 bytes.
    Empty,
    /// An SQLite database with nothing in it.
    Blank,
    /// A sluice journal.
    Journal,
}

impl Journal {
    /// What is at `path`: nothing, an empty file, an empty database, or a journal. Writes
    /// nothing.
    ///
    /// # Errors
    /// [`JournalError::NotAJournal`] (another program's database, or not a database),
    /// [`JournalError::NewerSchema`], [`JournalError::NotAFile`], or an I/O or SQLite
    /// failure, each naming the file.
    pub fn probe(path: &Path) -> Result<Probe, JournalError> {
        let name = path.display().to_string();
        match regular_file(path, &name) {
            Err(JournalError::NotFound { .. }) => return Ok(Probe::Missing),
            Err(e) => return Err(e),
            Ok(0) => return Ok(Probe::Empty),
            Ok(_) => {}
        }
        // Read-write (never create), as the host opens it: a journal in WAL mode is read
        // with its `-wal` and `-shm`; `identify` only reads.
        let conn = connect(path, &name)?;
        Ok(match identify(&conn, &name)? {
            Found::Blank => Probe::Blank,
            Found::Journal(_) => Probe::Journal,
        })
    }

    /// Opens the journal at `path`, creating it when there is none: the host's way in. A new
    /// journal is `0600` (its `-wal` and `-shm` too) and missing directories are made
    /// `0700`, whatever the umask. An existing file must be a sluice journal of a schema this
    /// build reads, or empty (a journal whose creation was cut short); anything else is
    /// refused before anything is written to it.
    ///
    /// # Errors
    /// [`JournalError::NotAJournal`], [`JournalError::NewerSchema`],
    /// [`JournalError::NotAFile`], [`JournalError::Corrupt`], or an I/O or SQLite failure,
    /// each naming the file.
    pub fn open_or_create(path: &Path) -> Result<Self, JournalError> {
        let name = path.display().to_string();
        make_file(path, &name)?;
        regular_file(path, &name)?;
        let mut conn = connect(path, &name)?;
        let found = identify(&conn, &name)?;
        durable(&conn, &name)?;
        match found {
            Found::Blank => create_schema(&mut conn, &name)?,
            Found::Journal(v) if v < SCHEMA_VERSION => migrate(&mut conn, &name)?,
            Found::Journal(_) => {}
        }
        let journal = Self::with(name, conn);
        journal.load_mark()?;
        Ok(journal)
    }

    /// Opens the journal an operator's command names: a group's database when `given` is a
    /// PostgreSQL URL ([`Journal::connect_existing`]), else the file at that path
    /// ([`Journal::open_existing`]).
    ///
    /// # Errors
    /// As those two.
    pub fn open_given(given: &Path) -> Result<Self, JournalError> {
        match given.to_str() {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Self::connect_existing(url)
            }
            _ => Self::open_existing(given),
        }
    }

    /// Opens the existing journal at `path`, for an operator's command: a missing or empty
    /// file, another program's database, a journal of a newer schema and a damaged one
    /// (SQLite's `quick_check`) are each refused, and nothing is written to the file before
    /// all of that is checked.
    ///
    /// # Errors
    /// [`JournalError::NotFound`], [`JournalError::NotAFile`], [`JournalError::Empty`],
    /// [`JournalError::NotAJournal`], [`JournalError::NewerSchema`],
    /// [`JournalError::Corrupt`], or an I/O or SQLite failure, each naming the file.
    pub fn open_existing(path: &Path) -> Result<Self, JournalError> {
        let name = path.display().to_string();
        if regular_file(path, &name)? == 0 {
            return Err(JournalError::Empty { path: name });
        }
        let mut conn = connect(path, &name)?;
        let found = identify(&conn, &name)?;
        if found == Found::Blank {
            return Err(JournalError::NotAJournal {
                path: name,
                found: "an SQLite database with nothing in it".into(),
            });
        }
        quick_check(&conn, &name)?;
        durable(&conn, &name)?;
        if matches!(found, Found::Journal(v) if v < SCHEMA_VERSION) {
            migrate(&mut conn, &name)?;
        }
        Ok(Self::with(name, conn))
    }

    fn with(path: String, conn: Connection) -> Self {
        Self {
            path,
            owner: String::new(),
            lease_ttl: super::group::DEFAULT_LEASE_TTL,
            process: String::new(),
            renewed: std::sync::Arc::default(),
            backend: super::Backend::Sqlite(Mutex::new(conn)),
            health: super::health::Health::default(),
            marks: super::marks::Marks::default(),
            key_secret: None,
        }
    }
}

#[cfg(feature = "postgres")]
pub(crate) mod postgres;

#[cfg(not(feature = "postgres"))]
impl Journal {
    /// A group's journal in PostgreSQL needs the `postgres` feature, which this build lacks.
    ///
    /// # Errors
    /// Always [`JournalError::Postgres`], saying so.
    pub fn connect(url: &str, _owner: &str) -> Result<Self, JournalError> {
        Err(JournalError::Postgres {
            path: url.split('@').next_back().unwrap_or("").to_owned(),
            error: "this sluice was built without PostgreSQL (the `postgres` feature)".into(),
        })
    }

    /// As [`Journal::connect`]: this build cannot.
    ///
    /// # Errors
    /// Always [`JournalError::Postgres`], saying so.
    pub fn connect_existing(url: &str) -> Result<Self, JournalError> {
        Self::connect(url, "")
    }

    /// As [`Journal::connect`]: this build cannot.
    ///
    /// # Errors
    /// Always [`JournalError::Postgres`], saying so.
    pub fn connect_with(
        url: &str,
        owner: &str,
        _lease_ttl: Duration,
    ) -> Result<Self, JournalError> {
        Self::connect(url, owner)
    }
}
#[cfg(test)]
mod tests;
