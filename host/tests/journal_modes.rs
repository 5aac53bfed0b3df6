//! A new journal's files are its owner's alone, whatever the umask.
//!
//! The umask belongs to the whole process, so this check has a test binary of its own: no
//! other test runs beside it while the umask is open.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use sluice::journal::{Intent, Journal};

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Issue: the journal, which holds payment bodies, was 0644 under umask 022 and 0666 under
/// umask 000, and so were its `-wal` and `-shm`.
#[test]
fn a_new_journal_its_wal_and_its_directory_are_private_under_an_open_umask() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state/sluice");
    let path = dir.join("journal.sqlite");
    let old = rustix::process::umask(rustix::fs::Mode::empty());
    // A write makes SQLite create the WAL and its index beside the database.
    let written = Journal::open_or_create(&path).and_then(|journal| {
        journal.record(&Intent {
            task: "pay-invoice-42".into(),
            action: "charge".into(),
            provider: "stripe".into(),
            method: "POST".into(),
            route: "/v1/charges".into(),
            class: "uncertain_write".into(),
            body: b"amount=4200&card=tok_visa".to_vec(),
            request: "{}".into(),
            goal: "pay invoice 42".into(),
        })?;
        Ok(journal)
    });
    rustix::process::umask(old);
    let _journal = written.unwrap();
    for made in [tmp.path().join("state"), dir.clone()] {
        assert_eq!(mode_of(&made), 0o700, "{}", made.display());
    }
    for file in ["journal.sqlite", "journal.sqlite-wal", "journal.sqlite-shm"] {
        assert_eq!(mode_of(&dir.join(file)), 0o600, "{file}");
    }
}
