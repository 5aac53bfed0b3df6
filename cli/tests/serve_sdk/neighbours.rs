//! One agent cannot hurt the others, through `sluice serve`: what an agent causes is counted
//! against its own tenant; a protection every tenant of a key shares trips only on evidence
//! about the shared thing.

use std::time::Duration;

use serde_json::json;
use sluice_fake_provider::Fault;

use crate::raw::{post, post_as};
use crate::sidecar::World;

/// The chat route at the provider, and as agents reach it through the sidecar.
const CHAT: &str = "/v1/chat/completions";
const AGENT_CHAT: &str = "/openai/v1/chat/completions";

/// A second agent's token; its tenant is `hurried`.
const HURRIED_TOKEN: &str = "agent-token-of-a-hurried-tenant";

/// Tenant `hurried` sends chats with a 50 ms deadline to a provider that answers in 200 ms:
/// each attempt is cut by the caller's own deadline. Those cuts are its own failures: its
/// own breaker opens, never the path the key's other tenants share, and the steady tenant's
/// next five chats (agent `bot`, tenant `acme`, the same key, route and model) are all
/// answered.
#[test]
fn a_tenants_own_deadlines_never_open_the_breaker_its_neighbours_share() {
    let world = World::new();
    world.configure(|text| text.replace("breaker_threshold = 1000", "breaker_threshold = 3"));
    world.add_agent("hurried", HURRIED_TOKEN, "hurried");
    world
        .openai
        .script(CHAT, [Fault::Slow(Duration::from_millis(200)); 6]);
    let sidecar = world.serve();
    let chat = json!({"model": "gpt-4o", "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    let mut cut = 0;
    for _ in 0..6 {
        let a = post_as(
            &sidecar,
            HURRIED_TOKEN,
            AGENT_CHAT,
            &[("x-sluice-deadline-ms", "50")],
            &chat,
        );
        assert!(
            a.status >= 400,
            "a 50 ms deadline against 200 ms answers: {a:?}"
        );
        cut += usize::from(a.body.contains("deadline"));
    }
    assert!(cut >= 3, "its attempts were cut by its deadline: {cut}");
    for i in 0..5 {
        let b = post(&sidecar, AGENT_CHAT, &[], &chat);
        assert_eq!(
            b.status,
            200,
            "the steady tenant's chat {i}: {b:?}\n{}",
            sidecar.log()
        );
    }
}
