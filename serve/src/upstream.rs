//! Where `/{provider}/...` goes: the provider's base URL, the dialect of its errors, which of
//! its routes are reads, and the credential an agent's call is sent with.
//!
//! Which routes are reads and how errors are written come from the configuration
//! (`[serve.providers.X] read_routes`, `error_shape`), else from the provider's plugin as it
//! describes itself at start (`describe`: `read-routes`, `error-shape`), so a provider whose
//! plugin says what its generations are is safe behind the sidecar with no configuration.

use std::collections::BTreeMap;

use sluice::contract::ErrorShape;

use crate::config::SidecarConfig;
use sluice::contract::{Description, RequestClass, route_matches};
use sluice::execute::DEFAULT_CREDENTIAL;

use crate::error::ServeError;

/// One provider as the sidecar forwards to it.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// Its name, the first segment of the path.
    pub name: String,
    /// Its base URL, without a trailing `/`.
    pub base_url: String,
    /// The shape of the errors the sidecar answers for it.
    pub shape: ErrorShape,
    /// Its read routes (`METHOD /path`, a `*` matching any run of characters).
    reads: Vec<String>,
    /// Its credential labels, and the headers each is sent in.
    credentials: BTreeMap<String, String>,
    /// Those headers, sorted, each once: looked at in every request.
    credential_headers: Vec<String>,
    /// Its pools' names: an agent's calls that name one go with a member of it.
    pools: Vec<String>,
}

/// The routes besides `GET`, `HEAD` and `OPTIONS` the host itself knows as reads: the
/// generation, embedding and counting routes of the dialects it speaks, which change nothing
/// at the provider. A plugin's `read-routes` are taken only where they name one of these.
/// Gemini's methods are the last segment's `:verb`, whatever model or project precedes it;
/// Amazon Bedrock's runtime names the model in the segment before its operation.
pub const KNOWN_READS: [&str; 23] = [
    "POST /v1/chat/completions",
    "POST /v1/completions",
    "POST /v1/embeddings",
    "POST /v1/responses",
    "POST /v1/moderations",
    "POST /v1/messages",
    "POST /v1/messages/count_tokens",
    "POST /v1/complete",
    "POST /v1beta/*:generateContent",
    "POST /v1beta/*:streamGenerateContent",
    "POST /v1beta/*:countTokens",
    "POST /v1beta/*:embedContent",
    "POST /v1beta/*:batchEmbedContents",
    "POST /v1/*:generateContent",
    "POST /v1/*:streamGenerateContent",
    "POST /v1/*:countTokens",
    "POST /v1/*:embedContent",
    "POST /v1/*:batchEmbedContents",
    "POST /model/*/converse",
    "POST /model/*/converse-stream",
    "POST /model/*/invoke",
    "POST /model/*/invoke-with-response-stream",
    "POST /model/*/count-tokens",
];

/// The read routes of `provider`'s plugin that confirm a route the host knows as a read
/// ([`KNOWN_READS`]). A plugin cannot make a write a read: a route it names beyond them stays
/// a write (journaled, sent once), with a warning naming the configuration key that can make
/// it a read.
fn confirmed_reads(provider: &str, described: Vec<String>) -> Vec<String> {
    let (known, unknown): (Vec<String>, Vec<String>) = described
        .into_iter()
        .partition(|r| KNOWN_READS.contains(&r.as_str()));
    if !unknown.is_empty() {
        tracing::warn!(
            provider = %sluice::printable::printable(provider),
            routes = %sluice::printable::printable(&unknown.join(", ")),
            "the provider's plugin names routes as reads that sluice does not know as reads: \
             they stay writes (journaled, sent once); to make them reads, list them in \
             [serve.providers.{provider}] read_routes"
        );
    }
    known
}

impl Upstream {
    /// Every configured provider; `describe` gives the description of a provider's plugin,
    /// when it has one loaded.
    ///
    /// # Errors
    /// [`ServeError::Config`]: a provider has no `base_url`.
    pub fn all(
        config: &SidecarConfig,
        describe: &dyn Fn(&str) -> Option<Description>,
    ) -> Result<BTreeMap<String, Self>, ServeError> {
        let mut out = BTreeMap::new();
        for (name, setup) in &config.host.providers {
            let Some(base) = &setup.base_url else {
                return Err(ServeError::Config(format!(
                    "`providers.{name}.base_url`: the sidecar forwards /{name}/... to it; set \
                     it (for example `https://api.openai.com`)"
                )));
            };
            let described = describe(name);
            let serve = config.serve.providers.get(name);
            let shape = serve
                .and_then(|s| s.error_shape)
                .or_else(|| described.as_ref()?.error_shape)
                .unwrap_or(ErrorShape::OpenAi);
            let reads = serve
                .and_then(|s| s.read_routes.clone())
                .or_else(|| described.map(|d| confirmed_reads(name, d.read_routes)))
                .unwrap_or_default();
            let credentials: BTreeMap<String, String> = setup
                .credentials
                .iter()
                .map(|(label, source)| (label.clone(), source.header.to_ascii_lowercase()))
                .collect();
            let mut credential_headers: Vec<String> = credentials.values().cloned().collect();
            credential_headers.sort();
            credential_headers.dedup();
            out.insert(
                name.clone(),
                Self {
                    name: name.clone(),
                    base_url: base.trim_end_matches('/').to_owned(),
                    shape,
                    reads,
                    credentials,
                    credential_headers,
                    pools: config
                        .host
                        .admission
                        .providers
                        .get(name)
                        .map(|p| p.pools.keys().cloned().collect())
                        .unwrap_or_default(),
                },
            );
        }
        Ok(out)
    }

    /// The class of a request that names none: a read for `GET`, `HEAD`, `OPTIONS` and the
    /// provider's read routes; anything else an uncertain write (journaled, sent once, and
    /// reconciled rather than resent blindly).
    pub fn class_of(&self, method: &str, path: &str) -> RequestClass {
        if matches!(method, "GET" | "HEAD" | "OPTIONS") {
            return RequestClass::Read;
        }
        let read = self.reads.iter().any(|r| route_matches(r, method, path));
        if read {
            RequestClass::Read
        } else {
            RequestClass::UncertainWrite
        }
    }

    /// The credential label an agent's call is sent with: the agent's choice for this
    /// provider, else the provider's only credential, else `default`.
    pub fn credential(&self, chosen: Option<&String>) -> String {
        if let Some(label) = chosen {
            return label.clone();
        }
        match self.credentials.keys().next() {
            Some(only) if self.credentials.len() == 1 => only.clone(),
            _ => DEFAULT_CREDENTIAL.to_owned(),
        }
    }

    /// Whether `label` names one of its pools rather than a credential.
    pub fn is_pool(&self, label: &str) -> bool {
        self.pools.iter().any(|p| p == label)
    }

    /// The headers the provider's credentials are sent in (an agent must not send them).
    pub fn credential_headers(&self) -> &[String] {
        &self.credential_headers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// What the bundled plugins say of themselves, as far as the sidecar reads it.
    fn described(name: &str) -> Option<Description> {
        let (read_routes, error_shape) = match name {
            "openai" => (vec!["POST /v1/chat/completions".into()], ErrorShape::OpenAi),
            "gemini" => (
                vec![
                    "POST /v1beta/*:generateContent".into(),
                    "POST /v1beta/*:streamGenerateContent".into(),
                    // Not one the host knows as a read: it stays a write.
                    "POST /v1beta/*:batchGenerateContent".into(),
                ],
                ErrorShape::OpenAi,
            ),
            "stripe" => (vec![], ErrorShape::Stripe),
            "bedrock" => (
                vec![
                    "POST /model/*/converse".into(),
                    "POST /model/*/converse-stream".into(),
                    "POST /model/*/invoke".into(),
                    "POST /model/*/invoke-with-response-stream".into(),
                    "POST /model/*/count-tokens".into(),
                ],
                ErrorShape::Aws,
            ),
            _ => return None,
        };
        Some(Description {
            name: name.into(),
            version: "1.0.0".into(),
            provider: name.into(),
            hosts: vec![],
            routes: vec![],
            read_routes,
            error_shape: Some(error_shape),
            refill: None,
        })
    }

    fn upstreams(toml: &str) -> BTreeMap<String, Upstream> {
        let config = crate::config::from_toml(toml, Path::new(".")).unwrap();
        Upstream::all(&config, &described).unwrap()
    }

    #[test]
    fn the_plugins_read_routes_are_reads_and_other_posts_are_writes() {
        let u = upstreams(
            "[providers.openai]\nbase_url = \"http://127.0.0.1:1/\"\n\
             [providers.openai.limits]\nrequests_per_minute = 60\n\
             [providers.stripe]\nbase_url = \"http://127.0.0.1:2\"\n\
             [providers.stripe.limits]\nrequests_per_minute = 60\n",
        );
        let openai = &u["openai"];
        assert_eq!(openai.base_url, "http://127.0.0.1:1");
        assert_eq!(openai.shape, ErrorShape::OpenAi);
        assert_eq!(
            openai.class_of("POST", "/v1/chat/completions"),
            RequestClass::Read
        );
        assert_eq!(
            openai.class_of("POST", "/v1/batches"),
            RequestClass::UncertainWrite
        );
        assert_eq!(openai.class_of("GET", "/v1/models"), RequestClass::Read);
        let stripe = &u["stripe"];
        assert_eq!(stripe.shape, ErrorShape::Stripe);
        assert_eq!(
            stripe.class_of("POST", "/v1/payment_intents"),
            RequestClass::UncertainWrite
        );
    }

    #[test]
    fn a_gemini_generation_of_any_model_is_a_read_and_its_batch_a_write() {
        let u = upstreams(
            "[providers.gemini]\nbase_url = \"http://127.0.0.1:1/\"\n\
             [providers.gemini.limits]\nrequests_per_minute = 60\n",
        );
        let gemini = &u["gemini"];
        for path in [
            "/v1beta/models/gemini-2.5-flash:generateContent",
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
            "/v1beta/tunedModels/mine:generateContent",
        ] {
            assert_eq!(gemini.class_of("POST", path), RequestClass::Read, "{path}");
        }
        for path in [
            "/v1beta/models/gemini-2.5-flash:batchGenerateContent",
            "/v1beta/cachedContents",
            "/v1beta/models/x:generateContent/../../files",
        ] {
            assert_eq!(
                gemini.class_of("POST", path),
                RequestClass::UncertainWrite,
                "{path}"
            );
        }
    }

    #[test]
    fn a_bedrock_generation_of_any_model_is_a_read_and_an_asynchronous_job_a_write() {
        let u = upstreams(
            "[providers.bedrock]\nbase_url = \"http://127.0.0.1:1/\"\n\
             [providers.bedrock.limits]\nrequests_per_minute = 60\n",
        );
        let bedrock = &u["bedrock"];
        assert_eq!(bedrock.shape, ErrorShape::Aws);
        for path in [
            "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
            "/model/us.amazon.nova-lite-v1%3A0/converse-stream",
            "/model/amazon.titan-embed-text-v2%3A0/invoke",
            "/model/meta.llama3-8b-instruct-v1%3A0/invoke-with-response-stream",
            "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/count-tokens",
        ] {
            assert_eq!(bedrock.class_of("POST", path), RequestClass::Read, "{path}");
        }
        for path in ["/async-invoke", "/guardrail/g1/version/1/apply"] {
            assert_eq!(
                bedrock.class_of("POST", path),
                RequestClass::UncertainWrite,
                "{path}"
            );
        }
    }

    #[test]
    fn configured_read_routes_replace_the_plugins_and_match_prefixes() {
        let u = upstreams(
            "[providers.openai]\nbase_url = \"http://127.0.0.1:1\"\n\
             [providers.openai.limits]\nrequests_per_minute = 60\n\
             [serve.providers.openai]\nread_routes = [\"POST /v1/search/*\"]\n",
        );
        let openai = &u["openai"];
        assert_eq!(
            openai.class_of("POST", "/v1/search/docs"),
            RequestClass::Read
        );
        assert_eq!(
            openai.class_of("POST", "/v1/chat/completions"),
            RequestClass::UncertainWrite
        );
    }

    #[test]
    fn a_provider_whose_plugin_says_nothing_has_only_get_reads_and_openai_errors() {
        let u = upstreams(
            "[providers.acme]\nplugin = \"ietf\"\nbase_url = \"http://127.0.0.1:1\"\n\
             [providers.acme.limits]\nrequests_per_minute = 60\n",
        );
        let acme = &u["acme"];
        assert_eq!(acme.shape, ErrorShape::OpenAi);
        assert_eq!(
            acme.class_of("POST", "/v1/generate"),
            RequestClass::UncertainWrite
        );
        assert_eq!(acme.class_of("GET", "/v1/things"), RequestClass::Read);
    }

    #[test]
    fn a_provider_without_a_base_url_is_named() {
        let config = crate::config::from_toml(
            "[providers.openai.limits]\nrequests_per_minute = 60\n",
            Path::new("."),
        )
        .unwrap();
        let err = Upstream::all(&config, &described).unwrap_err().to_string();
        assert!(err.contains("providers.openai.base_url"), "{err}");
    }
}
