//! The official SDKs against `sluice serve`, as agents use them: base URL at the sidecar, the
//! agent's token as the API key, the SDK's own retries off. Each case runs a script of
//! `tests/python/` (the Python SDKs, openai and anthropic, pinned in
//! `tests/python/requirements.txt`) or of `tests/node/` (the TypeScript SDKs, openai and
//! @anthropic-ai/sdk, pinned in `tests/node/package-lock.json`: the cases of `node.rs`) and
//! asserts on what the SDK saw (the JSON line the script prints) and on what the fake
//! providers received.
//!
//! The Python is `$SLUICE_SDK_PYTHON`, else `target/sdk-venv` (made by
//! `tests/python/make-venv.sh` when missing or out of date: PyPI must be reachable then). The
//! TypeScript SDKs are `node`'s, from `$SLUICE_SDK_NODE_DIR`, else from `target/sdk-node`
//! (made by `tests/node/make-modules.sh` likewise: the npm registry must be reachable then).

#![cfg(unix)]

mod abandoned;
mod bounds;
mod faults;
mod huge_text;
mod invented_names;
mod mixed;
mod money;
mod neighbours;
mod never_twice;
mod node;
mod otel;
mod pools;
mod python;
mod raw;
mod scripts;
mod sidecar;
mod writes;

use serde_json::Value;
use sluice_fake_provider::{Fault, RetryAfter};

use python::PYTHON;
use scripts::Sdks;
use sidecar::{AGENT_TOKEN, World};

const CHAT: &str = "/v1/chat/completions";
const MESSAGES: &str = "/v1/messages";

/// The calls a chat script made.
fn calls(seen: &Value) -> &Vec<Value> {
    seen["calls"].as_array().expect("a list of calls")
}

/// A sidecar header of one call, as text.
fn header<'a>(call: &'a Value, name: &str) -> Option<&'a str> {
    call["headers"][name].as_str()
}

#[test]
fn the_sdks_get_completions_and_messages_streamed_or_not_through_the_sidecar() {
    if PYTHON.unavailable() {
        return;
    }
    completions_and_messages(&PYTHON);
}

/// `sdks` get an OpenAI chat completion and an Anthropic message, each streamed and not,
/// each in one attempt.
fn completions_and_messages(sdks: &Sdks) {
    let world = World::new();
    let sidecar = world.serve();

    let chat = sdks.run("openai_chat", &[], &sidecar.url, AGENT_TOKEN);
    let call = &calls(&chat)[0];
    assert_eq!(call["status"], 200, "{chat}");
    let answered = world.openai.stored()[0].id.clone();
    assert_eq!(
        call["id"],
        answered.as_str(),
        "the provider's answer, parsed: {chat}"
    );
    assert_eq!(header(call, "x-sluice-attempts"), Some("1"), "{chat}");

    let streamed = sdks.run("openai_chat", &["--stream"], &sidecar.url, AGENT_TOKEN);
    let call = &calls(&streamed)[0];
    assert_eq!(call["status"], 200, "{streamed}");
    assert!(call["chunks"].as_u64().unwrap() > 1, "{streamed}");
    assert!(
        call["text"].as_str().unwrap().starts_with("tok "),
        "{streamed}"
    );

    let message = sdks.run("anthropic_message", &[], &sidecar.url, AGENT_TOKEN);
    assert_eq!(message["status"], 200, "{message}");
    assert_eq!(
        message["id"],
        world.anthropic.stored()[0].id.as_str(),
        "the provider's answer, parsed: {message}"
    );
    assert_eq!(
        message["text"],
        sluice_fake_provider::FAKE_REPLY,
        "{message}"
    );
    assert_eq!(
        header(&message, "x-sluice-attempts"),
        Some("1"),
        "{message}"
    );

    let anthropic = sdks.run(
        "anthropic_message",
        &["--stream"],
        &sidecar.url,
        AGENT_TOKEN,
    );
    assert_eq!(anthropic["status"], 200, "{anthropic}");
    assert!(anthropic["deltas"].as_u64().unwrap() > 1, "{anthropic}");
    assert_eq!(anthropic["last"], "message_stop", "{anthropic}");

    // At the providers: one attempt each, with the sidecar's key (they demand it), the
    // streams delivered whole.
    let openai = world.openai.attempts();
    assert_eq!(openai.len(), 2, "{openai:?}");
    assert_eq!(openai[0].status, Some(200));
    assert_eq!(openai[1].stream, Some(true), "{openai:?}");
    let messages = world.anthropic.attempts();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages
            .iter()
            .all(|m| m.path == MESSAGES && m.status == Some(200))
    );
    assert_eq!(messages[0].stream, None, "not a stream: {messages:?}");
    assert_eq!(messages[1].stream, Some(true), "{messages:?}");
    eprintln!(
        "openai: {} attempts, {} chunks streamed; anthropic: {} attempts, {} events streamed",
        openai.len(),
        call["chunks"],
        messages.len(),
        anthropic["events"]
    );
}

#[test]
fn a_429_storm_is_absorbed_and_the_sdk_sees_only_200s() {
    if PYTHON.unavailable() {
        return;
    }
    a_429_storm_is_absorbed(&PYTHON);
}

/// Four chats from `sdks` at once meet eight 429s: the sidecar waits them out, and the SDK
/// sees four 200s.
fn a_429_storm_is_absorbed(sdks: &Sdks) {
    let world = World::new();
    let storm = 8;
    let limited = Fault::RateLimited {
        retry_after: Some(RetryAfter::Seconds(1)),
    };
    world
        .openai
        .script(CHAT, std::iter::repeat_n(limited, storm));
    let sidecar = world.serve();

    let seen = sdks.run(
        "openai_chat",
        &["--count", "4", "--threads", "4"],
        &sidecar.url,
        AGENT_TOKEN,
    );
    let calls = calls(&seen);
    assert_eq!(calls.len(), 4);
    for call in calls {
        assert_eq!(call["status"], 200, "the SDK sees only 200s: {seen}");
    }
    let attempts: usize = calls
        .iter()
        .map(|c| {
            header(c, "x-sluice-attempts")
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        world.openai.answered(429),
        storm,
        "the storm hit the provider"
    );
    assert_eq!(world.openai.answered(200), 4);
    assert_eq!(
        attempts,
        4 + storm,
        "the answers account for every attempt: {seen}"
    );
    eprintln!("429 storm: the provider answered {storm} 429s and 4 200s; the SDK saw 4 200s");
}

#[test]
fn refusals_reach_the_sdks_as_their_own_errors() {
    if PYTHON.unavailable() {
        return;
    }
    refusals_are_the_sdks_own_errors(&PYTHON);
}

/// `sdks` raise a bad token as their authentication error and an unknown provider as their
/// not-found error, with sluice's words; nothing reaches a provider.
fn refusals_are_the_sdks_own_errors(sdks: &Sdks) {
    let world = World::new();
    let sidecar = world.serve();

    let seen = sdks.run(
        "refusals",
        &["sk-proj-not-an-agent-token"],
        &sidecar.url,
        AGENT_TOKEN,
    );
    for sdk in ["openai_bad_token", "anthropic_bad_token"] {
        assert_eq!(seen[sdk]["error"], "AuthenticationError", "{sdk}: {seen}");
        assert_eq!(seen[sdk]["status"], 401, "{sdk}: {seen}");
        let message = seen[sdk]["message"].as_str().unwrap();
        assert!(message.contains("agent token"), "{sdk}: {message}");
    }
    let unknown = &seen["unknown_provider"];
    assert_eq!(unknown["error"], "NotFoundError", "{seen}");
    assert_eq!(unknown["status"], 404, "{seen}");
    let message = unknown["message"].as_str().unwrap();
    assert!(
        message.contains("no provider `mistral`") && message.contains("openai"),
        "the message names the provider asked for and those there are: {message}"
    );
    let sent = world.openai.attempts().len() + world.anthropic.attempts().len();
    assert_eq!(sent, 0, "nothing refused reached a provider");
}

#[test]
fn an_sdk_that_retries_anyway_is_told_on_its_retry() {
    if PYTHON.unavailable() {
        return;
    }
    an_sdk_retry_is_told(&PYTHON);
}

/// `sdks`, set to retry, retry a 500 the sidecar leaves to the caller: the retry is told.
fn an_sdk_retry_is_told(sdks: &Sdks) {
    let world = World::new();
    // The sidecar leaves a 500 to the caller (retry_statuses): the SDK, set to retry, does.
    world.openai.script(
        CHAT,
        [Fault::Status {
            status: 500,
            code: "server_error",
        }],
    );
    let sidecar = world.serve();

    let seen = sdks.run(
        "openai_chat",
        &["--max-retries", "2"],
        &sidecar.url,
        AGENT_TOKEN,
    );
    let call = &calls(&seen)[0];
    assert_eq!(call["status"], 200, "the SDK's retry succeeded: {seen}");
    assert_eq!(header(call, "x-sluice-sdk-retry"), Some("1"), "{seen}");
    assert_eq!(world.openai.answered(500), 1);
    assert_eq!(world.openai.attempts_on(CHAT), 2, "the SDK's one retry");
}

/// The README's sidecar example, run as written: its Python block against `sluice serve
/// --config examples/serve.toml --fake-providers`, with the README's agent token. The fake
/// provider answers as OpenAI does, so `reply.choices[0].message.content` is the reply.
#[test]
fn the_readmes_sidecar_example_runs_as_written() {
    if PYTHON.unavailable() {
        return;
    }
    let readme = include_str!("../../../README.md");
    let code = readme
        .split("```python\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README holds a Python block");
    let sidecar = sidecar::Sidecar::readme_example("agent-secret");
    assert!(code.contains("http://127.0.0.1:8700/"), "{code}");
    let code = code.replace("http://127.0.0.1:8700", &sidecar.url);
    let out = python::run_source(&code);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the README's Python failed:\n{printed}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        sidecar.log()
    );
    assert_eq!(printed.trim(), sluice_fake_provider::FAKE_REPLY);
}
