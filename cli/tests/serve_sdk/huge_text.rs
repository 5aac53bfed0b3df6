//! `sluice serve` moves its own code onto huge pages at start (`[serve] code_on_huge_pages`),
//! says so, and serves from the moved code; told not to, it leaves the code alone.

use serde_json::json;

use crate::raw::post;
use crate::sidecar::{Sidecar, World};

const AGENT_CHAT: &str = "/openai/v1/chat/completions";

/// What the log says of the move, if anything.
fn said(log: &str) -> Option<&str> {
    log.lines()
        .find(|l| l.contains("onto huge pages") || l.contains("left on small pages"))
}

/// Whether this system lets a program have huge pages where it asks for them.
fn huge_pages_allowed() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| !s.contains("[never]"))
}

fn chats_are_answered(sidecar: &Sidecar) {
    let chat = json!({"model": "gpt-4o", "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    for i in 0..20 {
        let a = post(sidecar, AGENT_CHAT, &[], &chat);
        assert_eq!(a.status, 200, "chat {i}: {a:?}\n{}", sidecar.log());
    }
}

#[test]
fn the_sidecar_serves_from_code_moved_onto_huge_pages_and_says_so() {
    let world = World::new();
    let sidecar = Sidecar::start_in(&world.config(), &[("RUST_LOG", "info")]);
    chats_are_answered(&sidecar);
    let log = sidecar.log();
    let line = said(&log).unwrap_or_else(|| panic!("nothing said of the code's pages:\n{log}"));
    if cfg!(target_os = "linux") && huge_pages_allowed() {
        assert!(line.contains("MB of code moved onto huge pages"), "{line}");
    } else {
        assert!(line.contains("left on small pages: "), "{line}");
    }
    let (status, _) = sidecar.terminate();
    assert!(status.success(), "{status:?}");
}

#[test]
fn told_not_to_the_sidecar_leaves_its_code_alone() {
    let world = World::new();
    world.configure(|c| {
        c.replace(
            "shutdown_deadline_ms = 5000\n",
            "shutdown_deadline_ms = 5000\ncode_on_huge_pages = false\n",
        )
    });
    let sidecar = Sidecar::start_in(&world.config(), &[("RUST_LOG", "info")]);
    chats_are_answered(&sidecar);
    let log = sidecar.log();
    assert_eq!(said(&log), None, "{log}");
}
