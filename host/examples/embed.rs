//! Embedding sluice: one configuration, one host, every outbound call through it.
//!
//! Run: `cargo run -p sluice --features bundled --example embed`. The provider here is a fake OpenAI-style
//! API on loopback that demands its key and answers the first call with a 429, so the
//! example runs anywhere; for a real provider, set `base_url` to it and the key's `env` or
//! `file` to where your key is.

use sluice::{Call, Outcome, RequestClass, Sluice, Write, WriteOutcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = FakeProvider::start(FakeConfig::new(Style::OpenAi)).await?;
    provider.require_credential("authorization", "Bearer sk-example");
    let limited = Fault::RateLimited {
        retry_after: Some(RetryAfter::Millis(300)),
    };
    provider.script("/v1/chat/completions", [limited]);

    // The configuration file's text: the key lives in a file next to the state.
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("openai.key"), "sk-example\n")?;
    let config = format!(
        r#"
        state_dir = "{dir}/state"
        [providers.openai]
        plugin = "openai"
        base_url = "{url}"
        [providers.openai.credentials.team-key]
        file = "{dir}/openai.key"
        [providers.openai.limits]
        requests_per_minute = 500
        "#,
        dir = dir.path().display(),
        url = provider.url(""),
    );
    let sluice = Sluice::builder().config_toml(&config).build()?;

    // A read: queued below the limits, retried after the 429 as its Retry-After says.
    let chat = Call::post(
        "openai",
        "/v1/chat/completions",
        r#"{"model":"gpt-4o","max_tokens":16}"#,
    )
    .credential("team-key")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json");
    match sluice.execute(&chat).await {
        Outcome::Succeeded {
            response, attempts, ..
        } => {
            println!("chat: {} after {attempts} attempts", response.status);
        }
        Outcome::Ended(ended) => println!("chat ended: {}", ended.reason),
    }

    // A write: journaled before it is sent, one idempotency key, never sent twice.
    let upload = Write {
        task: "report-42".into(),
        action: "upload".into(),
        goal: "upload the weekly report".into(),
        call: Call::post("openai", "/v1/files", "purpose=assistants").credential("team-key"),
    };
    match sluice.write(&upload).await? {
        WriteOutcome::Succeeded { .. } => println!("upload: stored once"),
        other => println!("upload: {other:?}"),
    }

    sluice.close()?;
    println!("attempts at the provider: {}", provider.attempts().len());
    Ok(())
}
