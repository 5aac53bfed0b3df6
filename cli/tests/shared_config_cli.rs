//! `sluice config check` on the shared-store example, and the errors a wrong `[store]` gets.

mod support;

use std::path::Path;

use support::{sluice, stderr, stdout};

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/shared.toml")
        .display()
        .to_string()
}

#[test]
fn the_shared_store_example_checks_and_config_check_prints_the_store() {
    let o = sluice(&["config", "check", &example()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "store: redis://127.0.0.1:6379 shared by 4 hosts (each paces at 1/4 of a limit while \
             it is unreachable), host id the host name and the state directory, leases 10000 \
             ms, key prefix sluice"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "journal: postgres://sluice@127.0.0.1:5432/sluice shared by the group, each action \
             owned by the host that recorded it, leases 10000 ms"
        ),
        "{out}"
    );
    assert!(
        out.contains("  claims of writes: rows of the group's journal, not the store"),
        "{out}"
    );
    assert!(!out.contains("PASSWORD"), "{out}");
}

#[test]
fn a_store_without_its_number_of_hosts_is_refused_saying_why() {
    let dir = tempfile::tempdir().expect("dir");
    let bad = [
        (
            "store = \"redis://127.0.0.1:6379\"\n",
            "write [store] url = \"redis://127.0.0.1:6379\" and hosts = N",
        ),
        (
            "[store]\nurl = \"redis://127.0.0.1:6379\"\n",
            "`store.hosts`: missing",
        ),
        (
            "[store]\nurl = \"http://:secret@x\"\nhosts = 2\n",
            "is not a Redis URL",
        ),
        (
            "[store]\nurl = \"redis://x\"\nhosts = 2\nlease = 3\n",
            "`store.lease`: unknown field `lease`",
        ),
    ];
    for (i, (toml, said)) in bad.iter().enumerate() {
        let file = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&file, toml).expect("write");
        let o = sluice(&["config", "check", &file.display().to_string()]);
        assert_eq!(o.status.code(), Some(2), "{toml}");
        let err = stderr(&o);
        assert!(err.contains(said), "{toml}: {err}");
        assert!(!err.contains("secret"), "{err}");
    }
}
