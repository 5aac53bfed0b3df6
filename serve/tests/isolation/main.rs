//! One tenant cannot hurt another: agents of two tenants on one credential behind the
//! sidecar, in front of a strict fake provider, one misbehaving beside one that does not.

#[path = "../support/mod.rs"]
mod support;

mod breakers;
mod credentials;
mod listener;
mod neighbours;
mod tasks;

use sluice_fake_provider::{FakeConfig, FakeProvider};

/// The token of the well-behaved agent, tenant `steady` (or `acme`).
const STEADY_TOKEN: &str = "steady-agent-token";
/// The token of the misbehaving agent, tenant `noisy` (or `globex`).
const NOISY_TOKEN: &str = "noisy-agent-token";

/// A fake provider as `config` says, that demands the sidecar's key.
async fn fake(config: FakeConfig) -> FakeProvider {
    let fake = FakeProvider::start(config).await.unwrap();
    fake.require_credential(
        "authorization",
        &format!("Bearer {}", support::PROVIDER_KEY),
    );
    fake
}

/// `[providers.NAME]` run by the bundled plugin of that name, at `url`, with the sidecar's
/// key file (credential `team`) and `limits` (lines of its `limits` table).
fn provider(name: &str, url: &str, limits: &str) -> String {
    format!(
        "[providers.{name}]\nplugin = \"{name}\"\nbase_url = \"{url}\"\n\
         [providers.{name}.credentials.team]\nfile = \"KEYFILE\"\n\
         [providers.{name}.limits]\n{limits}\n"
    )
}

/// `[serve.agents.NAME]` with `token`'s digest, billed to `tenant`, and `extra` lines.
fn agent(name: &str, token: &str, tenant: &str, extra: &str) -> String {
    format!(
        "[serve.agents.{name}]\ntoken = {{ sha256 = \"{}\" }}\ntenant = \"{tenant}\"\n{extra}\n",
        support::sha256_hex(token)
    )
}
