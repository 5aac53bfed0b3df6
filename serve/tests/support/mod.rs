//! A sidecar in front of fake providers, for tests at the wire: the host is built from a
//! configuration file's text, as `sluice serve` builds it, and listens on a free port.

#![allow(dead_code, reason = "each test binary uses part of the support")]

use std::sync::Arc;

use sha2::{Digest, Sha256};
use sluice::Sluice;
use sluice_serve::{Running, Sidecar};

/// The agent token of the tests' agent `bot` (tenant `acme`).
pub const AGENT_TOKEN: &str = "agent-token-for-tests";
/// The provider key the sidecar sends (the fakes demand it).
pub const PROVIDER_KEY: &str = "sk-test-provider-key";

/// `token`'s SHA-256, hex: how the configuration names a token without holding it.
pub fn sha256_hex(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A running sidecar and what it keeps.
pub struct Side {
    pub running: Running,
    pub sluice: Arc<Sluice>,
    pub state: tempfile::TempDir,
    pub url: String,
}

/// The configuration of a sidecar whose providers are at `providers` (`(name, plugin,
/// base_url, credential header)`), with the agent `bot`, then `extra` TOML.
pub fn config_text(providers: &[(&str, &str, &str, &str)], extra: &str) -> String {
    let mut text = String::new();
    for (name, plugin, url, header) in providers {
        text.push_str(&format!(
            "[providers.{name}]\nplugin = \"{plugin}\"\nbase_url = \"{url}\"\n\
             [providers.{name}.credentials.team]\nfile = \"KEYFILE\"\nheader = \"{header}\"\n\
             [providers.{name}.limits]\nrequests_per_minute = 6000\n"
        ));
    }
    text.push_str(&format!(
        "[serve.agents.bot]\ntoken = {{ sha256 = \"{}\" }}\ntenant = \"acme\"\n{extra}\n",
        sha256_hex(AGENT_TOKEN)
    ));
    text
}

/// Starts a sidecar on a free loopback port from the configuration `text` (where
/// `KEYFILE` stands for a file holding [`PROVIDER_KEY`]), its state in a new directory.
pub async fn start(text: &str) -> Side {
    let state = tempfile::tempdir().unwrap();
    start_in(text, state).await
}

/// As [`start`], keeping the state in `state` (a restart finds the journal there).
pub async fn start_in(text: &str, state: tempfile::TempDir) -> Side {
    let key = state.path().join("provider.key");
    std::fs::write(&key, PROVIDER_KEY).unwrap();
    let text = text.replace("KEYFILE", &key.display().to_string());
    let config =
        sluice_serve::config::from_toml(&text, state.path()).expect("the test configuration");
    let sluice = Arc::new(
        Sluice::builder()
            .config(config.host.clone())
            .state_dir(state.path().join("state"))
            .seed(7)
            .build()
            .expect("a host"),
    );
    let running = Sidecar::new(sluice.clone(), &config)
        .expect("a sidecar")
        .listen("127.0.0.1:0".parse().unwrap())
        .admin_listen("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .expect("listening");
    let url = format!("http://{}", running.addr());
    Side {
        running,
        sluice,
        state,
        url,
    }
}

/// A client that does not retry and keeps no cookies.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().build().unwrap()
}
