//! The admin API's test stack: a fake provider, a host built from a configuration, and a
//! sidecar with its agent and admin listeners on loopback; and how the tests ask them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sluice::Sluice;
use sluice::plugin::{ComponentCache, RuntimeConfig};
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_serve::{Running, Sidecar};

pub const ADMIN_TOKEN: &str = "admin-token-for-tests";
pub const AGENT_TOKEN: &str = "agent-token-for-tests";

/// A sidecar in front of a fake provider, and what the tests ask it with.
pub struct Stack {
    pub fake: FakeProvider,
    pub running: Running,
    pub client: reqwest::Client,
    pub dir: tempfile::TempDir,
    pub sluice: Arc<Sluice>,
}

pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A sidecar for the bundled `plugin`'s provider, faked in `style`, whose credential may
/// send 600 requests a minute; agent `bot` bills tenant `acme`.
pub async fn stack(style: Style, plugin: &str) -> Stack {
    stack_with(style, plugin, "").await
}

/// [`stack`], with `admin` (TOML lines) added to its `[serve.admin]` table.
pub async fn stack_with(style: Style, plugin: &str, admin: &str) -> Stack {
    stack_of(style, plugin, plugin, admin).await
}

/// [`stack`] for `provider`, whose plugin is `plugin` (a bundled name or a `.wasm` path).
pub async fn stack_with_plugin(style: Style, provider: &str, plugin: &str) -> Stack {
    stack_of(style, provider, plugin, "").await
}

async fn stack_of(style: Style, provider: &str, plugin: &str, admin: &str) -> Stack {
    let fake = FakeProvider::start(FakeConfig::new(style)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("provider.key");
    std::fs::write(&key, "sk-test\n").unwrap();
    let text = format!(
        r#"
        [providers.{provider}]
        plugin = "{plugin}"
        base_url = "{url}"
        [providers.{provider}.credentials.team-key]
        file = "{key}"
        [providers.{provider}.limits]
        requests_per_minute = 600

        # Every route is tried with wrong tokens here; the limit has its own tests.
        [serve]
        failed_tokens_per_minute = 1000000

        [serve.admin]
        token = {{ sha256 = "{admin}" }}
        {admin_extra}
        [serve.agents.bot]
        token = {{ sha256 = "{agent}" }}
        tenant = "acme"
        "#,
        url = fake.url(""),
        key = key.display(),
        admin = sha256_hex(ADMIN_TOKEN),
        admin_extra = admin,
        agent = sha256_hex(AGENT_TOKEN),
    );
    let config = sluice_serve::config::from_toml(&text, Path::new(".")).unwrap();
    let cache = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/test-component-cache")
        .to_path_buf();
    let sluice = Sluice::builder()
        .config(config.host.clone())
        .state_dir(dir.path().join("state"))
        .component_cache(ComponentCache::new(Some(cache)))
        // An unoptimized build on a busy machine can be descheduled mid-call.
        .plugin_runtime(RuntimeConfig {
            call_deadline: Duration::from_millis(250),
            ..RuntimeConfig::default()
        })
        .seed(7)
        .build()
        .unwrap();
    let sluice = Arc::new(sluice);
    let loopback = "127.0.0.1:0".parse().unwrap();
    let running = Sidecar::new(sluice.clone(), &config)
        .unwrap()
        .listen(loopback)
        .admin_listen(loopback)
        .start()
        .await
        .unwrap();
    Stack {
        fake,
        running,
        client: reqwest::Client::new(),
        dir,
        sluice,
    }
}

impl Stack {
    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.running.admin_addr().unwrap())
    }

    pub fn agent_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.running.addr())
    }

    /// `method path` on the admin API with `token`, and a JSON `body`: the status and the
    /// answer's JSON.
    pub async fn ask(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.client.request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            self.admin_url(path),
        );
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub async fn get(&self, path: &str) -> Value {
        let (status, v) = self.ask("GET", path, Some(ADMIN_TOKEN), None).await;
        assert_eq!(status, 200, "GET {path}: {v}");
        v
    }

    pub async fn post(&self, path: &str, body: Option<Value>) -> (u16, Value) {
        self.ask("POST", path, Some(ADMIN_TOKEN), body).await
    }

    /// An agent's request through the sidecar: `headers` are `x-sluice-*` hints and such.
    pub fn agent(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let mut req = self
            .client
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                self.agent_url(path),
            )
            .header("authorization", format!("Bearer {AGENT_TOKEN}"));
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        req
    }

    /// Holds the scope of `path` (`/PROVIDER/...`): the fake answers the next attempt there
    /// 429, asking for `retry_after_secs`, to an agent's call that may take 300 ms (a POST
    /// sends a chat body). The call ends without success; its answer is returned.
    pub async fn held_by_429(
        &self,
        method: &str,
        path: &str,
        retry_after_secs: u64,
    ) -> reqwest::Response {
        let at_provider = path.splitn(3, '/').nth(2).map(|p| format!("/{p}")).unwrap();
        self.fake.script(
            &at_provider,
            [sluice_fake_provider::Fault::RateLimited {
                retry_after: Some(sluice_fake_provider::RetryAfter::Seconds(retry_after_secs)),
            }],
        );
        let mut req = self.agent(method, path, &[("x-sluice-deadline-ms", "300")]);
        if method == "POST" {
            req = req.header("content-type", "application/json").body(chat());
        }
        req.send().await.unwrap()
    }
}

/// Asks `path` until `done` holds of its answer (at most 10 s).
pub async fn until(stack: &Stack, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..200 {
        let v = stack.get(path).await;
        if done(&v) {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{path} never answered as expected: {}",
        stack.get(path).await
    );
}

pub fn chat() -> String {
    json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}).to_string()
}
