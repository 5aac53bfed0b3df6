//! `sluice escalations` pointed at a file that is not a healthy journal: an empty file,
//! another program's database, a damaged journal. Each is refused with its name and what is
//! wrong, and left exactly as it was: only a host creates a journal.

mod support;

use std::path::{Path, PathBuf};

use sluice::journal::escalations::Kind;
use sluice::journal::{Intent, Journal};

use support::{sluice, stderr};

/// Issue: messages said their cause twice ("file is not a database: file is not a
/// database"). No part of `err` may repeat.
fn said_once(err: &str) {
    let parts: Vec<&str> = err.trim().split(": ").collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(!parts[i + 1..].contains(part), "`{part}` twice in: {err}");
    }
}

/// Every command that reads or writes a journal, pointed at `path`.
fn every_command(path: &Path) -> Vec<Vec<String>> {
    let journal = path.to_str().unwrap();
    [
        vec!["escalations", "list", "--all", "--journal", journal],
        vec!["escalations", "list", "--journal", journal],
        vec!["escalations", "show", "1", "--journal", journal],
        vec![
            "escalations",
            "show",
            "1",
            "--journal",
            journal,
            "--body",
            "--by",
            "ops",
        ],
        vec![
            "escalations",
            "resolve",
            "1",
            "--journal",
            journal,
            "--option",
            "cancel",
            "--by",
            "ops",
        ],
        vec!["budgets", "--journal", journal],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(String::from).collect())
    .collect()
}

/// The files SQLite keeps beside a database in WAL mode.
fn sidecars(path: &Path) -> [PathBuf; 2] {
    let name = path.to_str().unwrap();
    [format!("{name}-wal").into(), format!("{name}-shm").into()]
}

/// Runs every command on `path`: each exits 2 with an error that names the file and says
/// `says`, and the file stays byte for byte what it was, with no WAL beside it.
fn refused_and_untouched(path: &Path, says: &str) {
    let before = std::fs::read(path).unwrap();
    for args in every_command(path) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = sluice(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(path.to_str().unwrap()), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        said_once(&err);
        assert_eq!(
            std::fs::read(path).unwrap(),
            before,
            "{args:?} changed the file"
        );
        for sidecar in sidecars(path) {
            assert!(!sidecar.exists(), "{args:?} made {}", sidecar.display());
        }
    }
}

/// Issue: `: > j.sqlite; sluice escalations list --all --journal j.sqlite` printed "no
/// escalations", exited 0 and left a fresh schema in the file.
#[test]
fn an_empty_file_is_refused_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.sqlite");
    std::fs::File::create(&path).unwrap();
    refused_and_untouched(&path, "is empty, not a sluice journal");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

/// Issue: pointed at an unrelated SQLite file, `escalations list` switched it to WAL before
/// failing.
#[test]
fn another_programs_database_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');")
            .unwrap();
    }
    refused_and_untouched(&path, "is not a sluice journal");
    // A file that is not a database at all.
    let text = dir.path().join("readme.txt");
    std::fs::write(
        &text,
        "just some text, long enough to look like a header..........\n",
    )
    .unwrap();
    refused_and_untouched(&text, "is not a sluice journal");
}

/// Three escalations about tasks, in a journal closed cleanly (its WAL folded back in).
fn journal_with_three_cases(path: &Path) {
    let j = Journal::open_or_create(path).unwrap();
    for n in 1..=3 {
        let task = format!("task-{n}");
        j.record(&Intent {
            task: task.clone(),
            action: "charge".into(),
            provider: "stripe".into(),
            method: "POST".into(),
            route: "/v1/charges".into(),
            class: "uncertain_write".into(),
            body: b"amount=100".to_vec(),
            request: "{}".into(),
            goal: "pay".into(),
        })
        .unwrap();
        let case = format!(r#"{{"action":"charge","reason":"case {n}"}}"#);
        j.escalations()
            .open(None, &task, Kind::TimeBudget, &case, n)
            .unwrap();
    }
}

/// The page size and the root page (from 1) of `table` in the database at `path`.
fn root_page(path: &Path, table: &str) -> (usize, usize) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let size: usize = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    let root: usize = conn
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap();
    (size, root)
}

/// Issue: with a corrupted page, `show 3` answered "no escalation 3" instead of reporting
/// corruption.
#[test]
fn a_damaged_page_is_reported_as_corruption_not_as_a_missing_case() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    journal_with_three_cases(&path);
    let (size, root) = root_page(&path, "escalations");
    // The escalations table's leaf: its cells are addressed from the header's pointer array
    // (after 8 bytes of header), and the last cell holds escalation 3. Its first byte is the
    // length of its record; flipping it makes the record run off the page, which an
    // unchecked lookup reads as "no such row".
    let mut bytes = std::fs::read(&path).unwrap();
    let page = (root - 1) * size;
    let cells = usize::from(u16::from_be_bytes([bytes[page + 3], bytes[page + 4]]));
    assert_eq!(cells, 3, "one leaf holds the three cases");
    let at = page + 8 + 2 * (cells - 1);
    let last = usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    bytes[page + last] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();

    for args in [
        vec!["escalations", "show", "3"],
        vec!["escalations", "list", "--all"],
        vec![
            "escalations",
            "resolve",
            "3",
            "--option",
            "cancel",
            "--by",
            "ops",
        ],
    ] {
        let mut args = args;
        args.extend(["--journal", path.to_str().unwrap()]);
        let o = sluice(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("is corrupt"), "{args:?}: {err}");
        assert!(!err.contains("no escalation"), "{args:?}: {err}");
        said_once(&err);
    }
}
