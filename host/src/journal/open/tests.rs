//! Who may create a journal, and what is refused before anything is written.

use std::path::{Path, PathBuf};

use super::*;
use crate::journal::{Intent, Recorded, State};

fn intent() -> Intent {
    Intent {
        task: "task-1".into(),
        action: "charge-42".into(),
        provider: "stripe".into(),
        method: "POST".into(),
        route: "/v1/charges".into(),
        class: "uncertain_write".into(),
        body: b"amount=100".to_vec(),
        request: "{}".into(),
        goal: "pay invoice 42".into(),
    }
}

fn sidecars(path: &Path) -> [PathBuf; 2] {
    let name = path.display().to_string();
    [format!("{name}-wal").into(), format!("{name}-shm").into()]
}

/// Another program's database, in rollback-journal mode, closed.
fn foreign_database(path: &Path) -> Vec<u8> {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    std::fs::read(path).unwrap()
}

#[test]
fn a_new_journal_carries_sluices_identity_and_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    drop(Journal::open_or_create(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    let read = |p: &str| -> i32 {
        conn.query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(read("application_id"), APPLICATION_ID);
    assert_eq!(read("user_version"), SCHEMA_VERSION);
    // And what a host created, an operator's command opens.
    let j = Journal::open_existing(&path).unwrap();
    assert!(j.all().unwrap().is_empty());
}

#[test]
fn an_operators_command_never_creates_a_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    let e = Journal::open_existing(&path).unwrap_err();
    assert!(matches!(e, JournalError::NotFound { .. }), "{e}");
    assert!(!path.exists());
    std::fs::File::create(&path).unwrap();
    let e = Journal::open_existing(&path).unwrap_err();
    assert!(matches!(e, JournalError::Empty { .. }), "{e}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    let e = Journal::open_existing(dir.path()).unwrap_err();
    assert!(matches!(e, JournalError::NotAFile { .. }), "{e}");
}

#[test]
fn a_host_finishes_a_journal_whose_creation_was_cut_short() {
    // The file is made before SQLite opens it; a host killed between the two leaves it empty.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    std::fs::File::create(&path).unwrap();
    let j = Journal::open_or_create(&path).unwrap();
    assert!(matches!(j.record(&intent()).unwrap(), Recorded::New(_)));
}

#[test]
fn another_programs_database_is_refused_by_the_host_too_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    let before = foreign_database(&path);
    for open in [Journal::open_or_create, Journal::open_existing] {
        let e = open(&path).unwrap_err();
        assert!(matches!(e, JournalError::NotAJournal { .. }), "{e}");
        assert!(e.to_string().contains("notes.db"), "{e}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "not one byte changed"
        );
        for sidecar in sidecars(&path) {
            assert!(!sidecar.exists(), "{}", sidecar.display());
        }
    }
    // Another program that stamped its own application id is named by it.
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "application_id", 0x0f0f_0f0f)
        .unwrap();
    let e = Journal::open_or_create(&path).unwrap_err();
    assert!(e.to_string().contains("application_id 0xf0f0f0f"), "{e}");
}

#[test]
fn a_journal_of_a_newer_schema_is_refused_before_any_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    drop(Journal::open_or_create(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    for open in [Journal::open_or_create, Journal::open_existing] {
        let e = open(&path).unwrap_err();
        assert!(
            matches!(e, JournalError::NewerSchema { version, .. } if version == SCHEMA_VERSION + 1),
            "{e}"
        );
        let newer = format!("schema version {}", SCHEMA_VERSION + 1);
        assert!(e.to_string().contains(&newer), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}

#[test]
fn a_value_sluice_never_writes_reads_as_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    let j = Journal::open_or_create(&path).unwrap();
    let id = j.record(&intent()).unwrap().action().id;
    j.conn()
        .execute(
            "UPDATE actions SET state = 'approved\u{1b}[2K' WHERE id = ?1",
            [id],
        )
        .unwrap();
    let e = j.get(id).unwrap_err();
    assert!(matches!(e, JournalError::Corrupt { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("unknown state `approved\\u{1b}[2K`"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text}");
    // A move from a state sluice never writes is corruption too, not "no action".
    let e = j.advance(id, State::Sent, None).unwrap_err();
    assert!(matches!(e, JournalError::Corrupt { .. }), "{e}");
    j.conn()
        .execute(
            "UPDATE actions SET state = 'pending', attempts = 'many' WHERE id = ?1",
            [id],
        )
        .unwrap();
    assert!(matches!(j.get(id), Err(JournalError::Corrupt { .. })));
}

#[test]
fn errors_say_their_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.db");
    std::fs::write(
        &path,
        "not a database, only text long enough for a header\n",
    )
    .unwrap();
    let e = Journal::open_existing(&path).unwrap_err();
    assert!(matches!(e, JournalError::NotAJournal { .. }), "{e}");
    // Each error's message holds what it has to say; none is repeated as a cause.
    assert!(std::error::Error::source(&e).is_none(), "{e}");
}

#[test]
fn a_journal_of_the_first_schema_is_migrated_and_keeps_its_actions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    // A version 1 journal, as an earlier build made it, with one action in it.
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(SCHEMA).unwrap();
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    drop(conn);
    let j = Journal::open_or_create(&path).unwrap();
    assert!(matches!(j.record(&intent()).unwrap(), Recorded::New(_)));
    drop(j);
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    conn.execute_batch(
        "DROP TABLE budget_use; DROP TABLE answers; ALTER TABLE actions DROP COLUMN owner",
    )
    .unwrap();
    drop(conn);

    for open in [Journal::open_or_create, Journal::open_existing] {
        let j = open(&path).unwrap();
        assert_eq!(j.all().unwrap().len(), 1, "the action is kept");
        drop(j);
        let conn = Connection::open(&path).unwrap();
        let version: i32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'budget_use'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 1, "the migration made the budget table");
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute_batch(
            "DROP TABLE budget_use; DROP TABLE answers; ALTER TABLE actions DROP COLUMN owner",
        )
        .unwrap();
    }
}
