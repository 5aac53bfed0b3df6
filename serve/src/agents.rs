//! Who is calling: each agent presents its own token, never a provider key.
//!
//! An agent sends its sluice token where its SDK puts the API key (`authorization: Bearer`,
//! `x-api-key`), or in `x-sluice-token`. Tokens are compared by their SHA-256, so the
//! configuration may hold only the digest. Every credential header is removed before the
//! request goes on: the provider sees the sidecar's key, and never an agent's token. A
//! credential header that holds something else than the agent's token is a provider key of
//! the agent's own: refused, or stripped, as configured. An AWS SDK's SigV4 signature
//! (`authorization: AWS4-HMAC-SHA256 …`) is neither: it carries no secret, only a proof made
//! with the agent's keys for this request, so it is removed (sluice signs again, with its
//! own keys) and the agent presents its token in `x-sluice-token`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::config::{AgentProviderKeys, PriorityAboveAllowed, ServeConfig, TokenSource};
use hyper::HeaderMap;
use hyper::header::HeaderName;
use sha2::{Digest, Sha256};
use sluice::admission::ClassSet;
use sluice::input_file;
use smallvec::SmallVec;

use crate::error::ServeError;

/// The header an agent may carry its token in, whatever its SDK does with the API key.
pub const TOKEN_HEADER: &str = "x-sluice-token";

/// The headers every provider SDK puts its API key in, and the sidecar's own: an agent's
/// token is found in any of them (and in the provider's own credential headers), whatever
/// provider stands behind the sidecar — a real one or `--fake-providers`.
const CREDENTIAL_HEADERS: [&str; 7] = [
    "authorization",
    "x-api-key",
    "api-key",
    "openai-api-key",
    "x-goog-api-key",
    "ocp-apim-subscription-key",
    TOKEN_HEADER,
];

/// What an AWS SDK's signature begins with: not a token, and not a key.
const SIGV4_SCHEME: &str = "AWS4-HMAC-SHA256 ";

/// A token header's value as a token: the bearer scheme removed.
fn bare(value: &str) -> &str {
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .unwrap_or(value)
        .trim()
}

/// The token `headers` present first, in the order [`Agents::admit`] looks for one (`extra`:
/// the provider's own credential headers); empty when they present none.
pub fn presented<'h>(headers: &'h HeaderMap, extra: &[String]) -> &'h str {
    CREDENTIAL_HEADERS
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
        .find_map(|name| {
            let token = bare(headers.get(name)?.to_str().ok()?);
            (!token.is_empty()).then_some(token)
        })
        .unwrap_or("")
}

/// One agent, as configured.
#[derive(Debug)]
pub struct Agent {
    /// Its name in the configuration.
    pub name: String,
    /// The tenant its calls are billed to.
    pub tenant: String,
    /// Whether its requests may name another tenant.
    pub name_tenant: bool,
    /// Whether its `x-sluice-class: read` may make a write route a read.
    pub class_hints: bool,
    /// Its credential label by provider.
    pub credentials: BTreeMap<String, String>,
    /// The classes it may ask for with `x-sluice-priority`.
    pub priorities: ClassSet,
    /// Whether a priority it may not use is lowered (else refused).
    pub lower_priority: bool,
    /// The account headers it may set (lower case).
    pub pass_headers: Vec<String>,
}

/// The agents, by their tokens' digests.
#[derive(Debug, Default)]
pub struct Agents {
    by_digest: HashMap<[u8; 32], Arc<Agent>>,
    provider_keys: Option<AgentProviderKeys>,
}

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No token at all.
    NoToken,
    /// A token no agent has.
    UnknownToken,
    /// A provider key of the agent's own, in `header` (refused by configuration).
    ProviderKey(String),
}

impl Refusal {
    /// A message for the agent: what is wrong and what to do.
    pub fn message(&self) -> String {
        match self {
            Self::NoToken => "sluice: no agent token; pass your sluice agent token as the SDK's \
                              api_key (or in the x-sluice-token header)"
                .into(),
            Self::UnknownToken => "sluice: the token is not an agent token of this sidecar; \
                                   provider keys stay in the sidecar, so pass your sluice agent \
                                   token as the SDK's api_key"
                .into(),
            Self::ProviderKey(h) => format!(
                "sluice: the request carries a provider key of its own in `{h}`; keys stay in \
                 the sidecar: remove it and authenticate with your agent token"
            ),
        }
    }
}

/// The agent a request comes from, and the request's headers without any credential.
#[derive(Debug)]
pub struct Admitted {
    /// The agent.
    pub agent: Arc<Agent>,
    /// Whether a provider key of the agent's own was stripped.
    pub stripped_key: bool,
}

/// The SHA-256 of a token.
pub fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.trim().as_bytes()).into()
}

/// The token a source holds (its digest, for `sha256`), read now.
///
/// # Errors
/// [`ServeError::Token`] naming the key and the source.
pub fn load_token(key: &str, source: &TokenSource) -> Result<[u8; 32], ServeError> {
    let bad = |why: String| ServeError::Token {
        key: key.to_owned(),
        why,
    };
    match source {
        TokenSource::Sha256(d) => Ok(*d),
        TokenSource::Env(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(digest(&v)),
            _ => Err(bad(format!(
                "the environment variable {var} is not set (or is empty): export it before \
                 starting"
            ))),
        },
        TokenSource::File(path) => {
            let text = input_file::read_text(path, 4096)
                .map_err(|e| bad(format!("the token file {e}")))?;
            if text.trim().is_empty() {
                return Err(bad(format!("the token file {} is empty", path.display())));
            }
            Ok(digest(&text))
        }
    }
}

impl Agents {
    /// The configured agents, their tokens read now.
    ///
    /// # Errors
    /// [`ServeError::Token`]: a token cannot be read, or two agents share one.
    pub fn load(config: &ServeConfig) -> Result<Self, ServeError> {
        let mut by_digest = HashMap::new();
        for (name, a) in &config.agents {
            let key = format!("serve.agents.{name}.token");
            let d = load_token(&key, &a.token)?;
            let agent = Arc::new(Agent {
                name: name.clone(),
                tenant: a.tenant.clone(),
                name_tenant: a.name_tenant,
                class_hints: a.class_hints,
                credentials: a.credentials.clone(),
                priorities: a.priorities,
                lower_priority: config.priority_above_allowed == PriorityAboveAllowed::Lower,
                pass_headers: a.pass_headers.clone(),
            });
            if let Some(other) = by_digest.insert(d, agent) {
                return Err(ServeError::Token {
                    key,
                    why: format!("agent `{}` has the same token", other.name),
                });
            }
        }
        Ok(Self {
            by_digest,
            provider_keys: Some(config.agent_provider_keys),
        })
    }

    /// The agent whose token has the SHA-256 `digest`, if any.
    pub fn by_digest(&self, digest: &[u8; 32]) -> Option<&Agent> {
        self.by_digest.get(digest).map(AsRef::as_ref)
    }

    /// How many agents there are.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether no agent is configured (every request is refused).
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// The agent `headers` authenticate, with every credential header removed from them
    /// (`extra` names the provider's own credential headers besides the usual ones).
    ///
    /// # Errors
    /// A [`Refusal`]: no token, an unknown one, or a provider key of the agent's own where the
    /// configuration refuses them.
    pub fn admit(&self, headers: &mut HeaderMap, extra: &[String]) -> Result<Admitted, Refusal> {
        // A token header's place in the list: an agent's token is looked for in that order.
        let rank = |name: &str| {
            CREDENTIAL_HEADERS
                .iter()
                .copied()
                .chain(extra.iter().map(String::as_str))
                .position(|c| c.eq_ignore_ascii_case(name))
        };
        // One pass over the headers: each non-empty token header's value, as a token would
        // be (the bearer scheme removed), by its digest (each value hashed once); and the
        // headers that may go no further: the token headers, every other credential-like one
        // (cookies, a vendor's token header) and the account headers.
        let mut values: SmallVec<[(usize, &str, [u8; 32]); 2]> = SmallVec::new();
        let mut held: SmallVec<[(&HeaderName, bool); 4]> = SmallVec::new();
        for (name, v) in headers.iter() {
            let n = name.as_str();
            let place = rank(n);
            if let Some(place) = place {
                let raw = v.to_str().unwrap_or("");
                let token = bare(raw);
                if !token.is_empty() && !raw.starts_with(SIGV4_SCHEME) {
                    values.push((place, n, digest(token)));
                }
            }
            if held.last().is_some_and(|(last, _)| *last == name) {
                continue;
            }
            if place.is_some() || sluice::headers::is_credential(n) {
                held.push((name, false));
            } else if sluice::headers::is_account(n) {
                held.push((name, true));
            }
        }
        if values.is_empty() {
            return Err(Refusal::NoToken);
        }
        values.sort_by_key(|(place, ..)| *place);
        let found = values
            .iter()
            .find_map(|(_, _, d)| self.by_digest.get(d).map(|a| (a, *d)));
        let Some((agent, token)) = found else {
            return Err(Refusal::UnknownToken);
        };
        let foreign = values
            .iter()
            .find(|(_, _, d)| *d != token)
            .map(|(_, n, _)| (*n).to_owned());
        let stripped_key = match (foreign, self.provider_keys) {
            (Some(h), Some(AgentProviderKeys::Refuse) | None) => {
                return Err(Refusal::ProviderKey(h));
            }
            (Some(_), Some(AgentProviderKeys::Strip)) => true,
            (None, _) => false,
        };
        // The values borrow `headers`, which is changed below.
        drop(values);
        // An account header the agent may set goes on.
        let removed: SmallVec<[HeaderName; 4]> = held
            .into_iter()
            .filter(|(name, account)| {
                !account || !agent.pass_headers.iter().any(|p| p == name.as_str())
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in removed {
            headers.remove(name);
        }
        Ok(Admitted {
            agent: agent.clone(),
            stripped_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentConfig;

    fn agents(keys: AgentProviderKeys) -> Agents {
        let mut config = ServeConfig {
            agent_provider_keys: keys,
            ..ServeConfig::default()
        };
        config.agents.insert(
            "bot".into(),
            AgentConfig {
                token: TokenSource::Sha256(digest("agent-token")),
                tenant: "acme".into(),
                tier: None,
                name_tenant: false,
                class_hints: false,
                credentials: BTreeMap::new(),
                priorities: ClassSet::ALL,
                pass_headers: vec!["openai-project".into()],
            },
        );
        Agents::load(&config).unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(*n, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_token_sent_as_the_sdk_api_key_admits_the_agent_and_is_never_forwarded() {
        let a = agents(AgentProviderKeys::Refuse);
        for (name, value) in [
            ("authorization", "Bearer agent-token"),
            ("x-api-key", "agent-token"),
            ("x-sluice-token", "agent-token"),
        ] {
            let mut h = headers(&[(name, value), ("content-type", "application/json")]);
            let admitted = a.admit(&mut h, &[]).unwrap();
            assert_eq!(admitted.agent.tenant, "acme");
            assert!(h.get(name).is_none(), "{name} is removed");
            assert!(h.get("content-type").is_some());
        }
    }

    #[test]
    fn an_aws_sdk_s_signature_is_removed_neither_a_token_nor_a_provider_key() {
        let a = agents(AgentProviderKeys::Refuse);
        let signed = [
            ("x-sluice-token", "agent-token"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261206/us-east-1/bedrock/aws4_request, \
                 SignedHeaders=host;x-amz-date, Signature=5fa0",
            ),
            ("x-amz-security-token", "session"),
            ("x-amz-date", "20261206T120000Z"),
        ];
        let mut h = headers(&signed);
        let admitted = a.admit(&mut h, &[]).unwrap();
        assert!(!admitted.stripped_key);
        assert!(h.get("authorization").is_none() && h.get("x-amz-security-token").is_none());
        // Alone, a signature admits no one.
        assert_eq!(
            a.admit(&mut headers(&signed[1..]), &[]).unwrap_err(),
            Refusal::NoToken
        );
    }

    #[test]
    fn no_token_and_a_wrong_token_are_told_apart() {
        let a = agents(AgentProviderKeys::Refuse);
        assert_eq!(
            a.admit(&mut headers(&[]), &[]).unwrap_err(),
            Refusal::NoToken
        );
        assert_eq!(
            a.admit(&mut headers(&[("authorization", "Bearer sk-live")]), &[])
                .unwrap_err(),
            Refusal::UnknownToken
        );
    }

    #[test]
    fn a_provider_key_beside_the_agent_token_is_refused_or_stripped_by_configuration() {
        let both = [
            ("x-sluice-token", "agent-token"),
            ("authorization", "Bearer sk-proj-123"),
        ];
        let refused = agents(AgentProviderKeys::Refuse).admit(&mut headers(&both), &[]);
        assert_eq!(
            refused.unwrap_err(),
            Refusal::ProviderKey("authorization".into())
        );
        let mut h = headers(&both);
        let admitted = agents(AgentProviderKeys::Strip).admit(&mut h, &[]).unwrap();
        assert!(admitted.stripped_key);
        assert!(h.get("authorization").is_none());
    }

    /// Issue 27: `cookie`, `openai-organization` and `openai-project` passed through, the
    /// last two letting an agent bill another project on an unscoped key.
    #[test]
    fn cookies_vendor_tokens_and_account_headers_not_allowed_are_stripped() {
        let mut h = headers(&[
            ("x-sluice-token", "agent-token"),
            ("cookie", "session=abc"),
            ("x-auth-token", "t"),
            ("openai-organization", "org-other"),
            ("openai-project", "proj-mine"),
            ("openai-beta", "assistants=v2"),
        ]);
        agents(AgentProviderKeys::Refuse)
            .admit(&mut h, &[])
            .unwrap();
        let mut left: Vec<&str> = h.keys().map(|n| n.as_str()).collect();
        left.sort_unstable();
        assert_eq!(
            left,
            ["openai-beta", "openai-project"],
            "the agent may set the project"
        );
    }

    #[test]
    fn a_token_is_found_in_every_sdks_key_header_whatever_the_provider() {
        let a = agents(AgentProviderKeys::Refuse);
        for name in [
            "x-goog-api-key",
            "api-key",
            "openai-api-key",
            "ocp-apim-subscription-key",
        ] {
            let mut h = headers(&[(name, "agent-token")]);
            let admitted = a.admit(&mut h, &[]);
            assert!(admitted.is_ok(), "{name}: {admitted:?}");
            assert!(h.get(name).is_none(), "{name} went on");
        }
    }

    #[test]
    fn a_providers_own_credential_header_counts_as_a_key() {
        let a = agents(AgentProviderKeys::Refuse);
        let mut h = headers(&[("x-sluice-token", "agent-token"), ("x-goog-api-key", "k")]);
        let err = a.admit(&mut h, &["x-goog-api-key".into()]).unwrap_err();
        assert_eq!(err, Refusal::ProviderKey("x-goog-api-key".into()));
    }
}
