//! Damaged state between two runs, at the wire: a host never starts on a journal that lost
//! an earlier run's record (missing, emptied, an empty database) while the audit log, its
//! witness and key of that run lie beside it — the agent's resubmission of a write the lost
//! journal had sent would be sent again, a duplicate at a provider that ignores keys. It
//! says what it found and how to start afresh on purpose; and state files others may read
//! are tightened before they are used.

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use sluice::BuildError;
use sluice::contract::RequestClass;
use sluice::retry::RetryConfig;
use sluice::writes::WriteOutcome;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_tests::stack::{Paths, host_builder, write};

const ISSUES: &str = "/repos/acme/app/issues";

/// A host in front of a GitHub-style provider (every accepted POST is a new issue, whatever
/// its key), with its state at `paths`.
fn build(paths: &Paths, fresh: bool) -> Result<sluice::Sluice, BuildError> {
    host_builder(
        "github",
        paths,
        RetryConfig::default(),
        Duration::from_secs(2),
    )
    .fresh_journal(fresh)
    .build()
}

/// One run that opens an issue as action `open-issue` of task `triage`: the provider stores
/// it once.
async fn first_run(fake: &FakeProvider, paths: &Paths) {
    let sluice = build(paths, false).expect("a first start");
    let w = write(
        "github",
        "triage",
        "open-issue",
        &fake.url(ISSUES),
        RequestClass::UncertainWrite,
        r#"{"title":"flaky test","body":"seen twice"}"#,
    );
    let outcome = sluice.write(&w).await.unwrap();
    assert!(
        matches!(outcome, WriteOutcome::Succeeded { .. }),
        "{outcome:?}"
    );
    sluice.close().unwrap();
    assert_eq!(fake.stored().len(), 1);
}

/// A damage done to the state between two runs, by name.
type Damage = (&'static str, fn(&Paths));

async fn github() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::GitHub))
        .await
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_journal_emptied_deleted_or_blanked_beside_an_earlier_run_s_state_is_refused() {
    let damages: [Damage; 3] = [
        ("emptied", |p| std::fs::write(&p.journal, b"").unwrap()),
        ("deleted", |p| std::fs::remove_file(&p.journal).unwrap()),
        ("a blank database", |p| {
            std::fs::remove_file(&p.journal).unwrap();
            let db = rusqlite::Connection::open(&p.journal).unwrap();
            // A database with a page but nothing in it.
            db.execute_batch("CREATE TABLE t(x); DROP TABLE t;")
                .unwrap();
        }),
    ];
    for (damage, apply) in damages {
        let fake = github().await;
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::under(&dir.path().join("state"));
        first_run(&fake, &paths).await;
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(paths.dir.join(format!("journal.sqlite{suffix}")));
        }
        apply(&paths);

        let refused = build(&paths, false).err().unwrap_or_else(|| {
            panic!("{damage}: the host started on a journal that lost the earlier run's record")
        });
        let BuildError::JournalLost { found, .. } = &refused else {
            panic!("{damage}: {refused}");
        };
        let message = refused.to_string();
        assert!(found.iter().any(|f| f.contains("audit.log")), "{message}");
        assert!(message.contains("--fresh-journal"), "{message}");
        assert_eq!(fake.stored().len(), 1, "{damage}: nothing sent again");
        assert_eq!(fake.duplicates(), 0);

        // On purpose, it starts afresh: the operator said the earlier writes are forgotten.
        let fresh = build(&paths, true).expect("a fresh journal on purpose");
        fresh.close().unwrap();
        // And from then on the journal is there: an ordinary start.
        build(&paths, false)
            .expect("the new journal")
            .close()
            .unwrap();
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_first_start_needs_no_flag_and_state_files_others_may_read_are_tightened() {
    let fake = github().await;
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths::under(&dir.path().join("state"));
    first_run(&fake, &paths).await;
    for file in [&paths.audit, &paths.journal, &paths.witness] {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    build(&paths, false).expect("a restart").close().unwrap();
    for file in [&paths.audit, &paths.journal, &paths.witness] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
}
