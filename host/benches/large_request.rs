//! What it costs to plan a request before it is queued, by the size of its body: the host
//! reads the body's digest outside the sandbox (`Request::new`), then the OpenAI plugin plans
//! it from the first 64 KiB and the digest, warm, in its sandbox — what `execute` does once
//! per call.
//!
//! - `chat-1k`: an ordinary chat of about 1 KB;
//! - `chat-40-turns`: a conversation of 40 short messages (about 3 KB), as an agent's
//!   context grows;
//! - `text-20mb`: a chat whose one message is 20 MB of text (five million tokens: planned,
//!   then refused by any ordinary quota);
//! - `image-20mb`: a chat with one 4000 × 3000 PNG of 15 MB, 20 MB in base64 (765 tokens).
//!
//! Each has `digest` (reading the body alone) and `digest-and-plan` (the whole planning).
//!
//! Run: `cargo bench -p sluice --features internals,bundled --bench large_request`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use sluice::contract::{ProviderPolicy, Request, RequestClass};
use sluice::plugin::{ComponentCache, PluginRuntime, RuntimeConfig};
use sluice_plugin_sdk::test::{data_url, png};

fn chat(content: serde_json::Value) -> Vec<u8> {
    serde_json::json!({
        "messages": [{"role": "user", "content": content}],
        "model": "gpt-4o",
        "max_tokens": 256,
    })
    .to_string()
    .into_bytes()
}

/// A conversation of `turns` short messages, the user's and the assistant's in turn.
fn conversation(turns: usize) -> Vec<u8> {
    let messages: Vec<serde_json::Value> = (0..turns)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": format!("turn {i} of a conversation that grows")})
        })
        .collect();
    serde_json::json!({"messages": messages, "model": "gpt-4o", "max_tokens": 256})
        .to_string()
        .into_bytes()
}

fn request(body: &[u8]) -> Request {
    Request::new(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        RequestClass::Read,
        "content-type:application/json\n".into(),
        body.to_vec(),
        1_795_953_600_000,
    )
}

fn bench(c: &mut Criterion) {
    let rt = PluginRuntime::new(RuntimeConfig::default(), ComponentCache::user_default())
        .expect("runtime");
    let openai = rt.load_bundled("openai").expect("openai plugin");
    let bodies = [
        ("chat-1k", chat(serde_json::json!("a".repeat(900)))),
        ("chat-40-turns", conversation(40)),
        ("text-20mb", chat(serde_json::json!("a".repeat(20 << 20)))),
        (
            "image-20mb",
            chat(serde_json::json!([{"type": "image_url", "image_url": {
                "url": data_url("image/png", &png(4000, 3000, 15 << 20))}}])),
        ),
    ];
    let mut group = c.benchmark_group("plan-by-size");
    group.sample_size(10);
    for (name, body) in &bodies {
        // The plan comes from the plugin, never the built-in policy.
        let plan = openai
            .plan_request(&request(body))
            .expect("the plugin plans it");
        assert!(plan.cost.len() > 1, "{name}: tokens planned");
        group.bench_function(format!("{name}/digest"), |b| {
            b.iter(|| sluice::contract::BodyDigest::of(black_box(body)));
        });
        // Without the copy of the body the executor makes anyway (the call owns it).
        let owned = body.clone();
        group.bench_function(format!("{name}/digest-and-plan"), |b| {
            b.iter_batched(
                || owned.clone(),
                |body| {
                    let req = Request::new(
                        "POST",
                        "https://api.openai.com/v1/chat/completions",
                        RequestClass::Read,
                        "content-type:application/json\n".into(),
                        body,
                        1_795_953_600_000,
                    );
                    openai.plan_request(black_box(&req)).expect("plan-request")
                },
                criterion::BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
