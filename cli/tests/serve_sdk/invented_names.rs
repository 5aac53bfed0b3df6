//! Names an agent invents stay bounded, through `sluice serve`: every model an agent names
//! in a request body becomes a quota scope, so an agent naming a new model at each call
//! would otherwise grow `/metrics`, `/scopes` and the sidecar's memory without end.

use serde_json::json;
use sluice_fake_provider::{FakeConfig, Style};

use crate::raw::post;
use crate::sidecar::World;

const AGENT_CHAT: &str = "/openai/v1/chat/completions";

/// How many model names the agent invents: well past the default cap of 256 a provider.
const INVENTED: usize = 3_000;

/// The most `/metrics` may weigh after them.
const MAX_METRICS_BYTES: usize = 64 * 1024;

/// The most the sidecar's resident memory may grow by while it serves them.
const MAX_GROWTH_KB: u64 = 50 * 1024;

/// A chat with the model `model`.
fn chat(model: &str) -> String {
    json!({"model": model, "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string()
}

/// 3 000 chats, each naming a model nobody configured: every one is answered, `/metrics`
/// stays under 64 KB, `/scopes` lists at most the cap's worth of the invented models (the
/// rest counted under `model:other`), and the sidecar's memory grows by less than 50 MB.
#[test]
fn three_thousand_invented_models_leave_metrics_scopes_and_memory_bounded() {
    let world = World::with_openai(
        FakeConfig::new(Style::OpenAi).keep_attempts(16),
        "requests_per_minute = 6000000",
    );
    let sidecar = world.serve();
    // The sidecar's own allocations settled first: a few calls on one model.
    for _ in 0..20 {
        assert_eq!(post(&sidecar, AGENT_CHAT, &[], &chat("gpt-4o")).status, 200);
    }
    let before_kb = sidecar.rss() / 1024;
    let before_metrics = sidecar.metrics().len();
    // Every series is described, the host's and the sidecar's alike.
    let text = sidecar.metrics();
    for described in [
        "# HELP sluice_attempts_total ",
        "# HELP sluice_calls_admitted_total ",
        "# HELP sluice_serve_requests_total ",
    ] {
        assert!(text.contains(described), "{described}missing:\n{text}");
    }

    for i in 0..INVENTED {
        let a = post(&sidecar, AGENT_CHAT, &[], &chat(&format!("m-{i}")));
        assert_eq!(a.status, 200, "chat {i}: {a:?}\n{}", sidecar.log());
    }

    let after_kb = sidecar.rss() / 1024;
    let metrics = sidecar.metrics();
    let scopes = sidecar.admin_json("/scopes");
    let rows = scopes["scopes"].as_array().expect("a list of scopes");
    let invented = rows
        .iter()
        .filter(|r| {
            r["scope"]
                .as_str()
                .is_some_and(|s| s.starts_with("model:m-"))
        })
        .count();
    let other = rows.iter().any(|r| r["scope"] == "model:other");
    eprintln!(
        "{INVENTED} invented models: /metrics {before_metrics} -> {} bytes, /scopes {} rows \
         ({invented} invented), VmRSS {before_kb} -> {after_kb} kB",
        metrics.len(),
        rows.len()
    );
    assert!(
        metrics.len() <= MAX_METRICS_BYTES,
        "/metrics weighs {} bytes after {INVENTED} invented models",
        metrics.len()
    );
    assert!(
        invented <= 256,
        "{invented} invented models have a scope of their own"
    );
    assert!(
        other,
        "the models past the cap share `model:other`: {scopes}"
    );
    let grown = after_kb.saturating_sub(before_kb);
    assert!(
        grown <= MAX_GROWTH_KB,
        "the sidecar grew by {grown} kB serving {INVENTED} invented models"
    );
}
