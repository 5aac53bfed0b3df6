//! The `[serve]` table: how `sluice serve`, the sidecar, listens, who its agents are, and how
//! it speaks each provider's dialect.
//!
//! ```toml
//! [serve]
//! listen = "127.0.0.1:8700"          # where agents' SDKs point (loopback by default)
//! shutdown_deadline_ms = 10000       # in-flight calls get this long after a stop signal
//! agent_provider_keys = "refuse"     # or "strip": a provider key an agent sends itself
//! priority_above_allowed = "refuse"  # or "lower": an x-sluice-priority the agent may not use
//! max_connections = 1024             # agents' connections seated at once (past it: 503)
//! max_connections_per_agent = 256    # one agent's (past it: 503, the others unhurt)
//! max_connections_per_tenant = 512   # one tenant's
//! max_unauthenticated = 256          # connections yet to present a valid token
//! auth_timeout_ms = 2000             # ... each has this long to present one, else cut
//! max_body_memory = 1073741824       # request bodies held at once, in bytes (past it: 503)
//! max_body_memory_per_tenant = 268435456   # one tenant's
//! workers = 4                        # threads serving agents' connections (default: one per CPU;
//!                                    # 0: the shared runtime's threads, with work stealing)
//! code_on_huge_pages = true         # the binary's code moved onto 2 MB pages at start (Linux)
//! read_timeout_ms = 30000            # a request's headers, then its body, must each arrive by then
//! failed_tokens_per_minute = 10      # wrong tokens one token (or, x10, one address) may try a minute
//! trusted_proxies = ["10.0.0.0/8"]   # peers whose X-Forwarded-For names the client (default: none)
//!
//! [serve.admin]
//! listen = "127.0.0.1:8701"
//! token = { env = "SLUICE_ADMIN_TOKEN" }
//! max_connections = 64               # its own, apart from the agents
//! # Optional: people who sign in to the console (`/console`) by name; a decision records
//! # the name. The admin token signs in as `admin`.
//! operators = { "ops@example.com" = { env = "OPS_CONSOLE_TOKEN" } }
//! # Optional: the origin browsers reach the console at through a TLS proxy; a form must
//! # come from it (default: `http://` and the listener's own address).
//! public_origin = "https://ops.example.com"
//!
//! [serve.agents.research]
//! token = { env = "RESEARCH_AGENT_TOKEN" }   # or { file = "..." }, or { sha256 = "<hex>" }
//! tenant = "acme"
//! tier = "paid"                      # optional: the tenant's tier (tenants.assign)
//! name_tenant = false                # may its requests name another tenant
//! class_hints = false                # may `x-sluice-class: read` make a write route a read
//! credentials = { openai = "team-key" }
//! priorities = ["standard", "background"]   # the classes it may ask for (default: all)
//! pass_headers = ["openai-project"]  # account headers it may set (default: none, stripped)
//!
//! [serve.providers.openai]
//! error_shape = "openai"             # default: as the plugin describes it, else openai
//! read_routes = ["POST /v1/chat/completions"]   # non-GET reads; default: the plugin's
//! ```
//!
//! The library reads the rest of the file and hands this table on as written
//! (`SluiceConfig::from_file_with`): one file configures the whole host, read once, and
//! [`from_file`] checks the table against the rest (the providers and credentials it names,
//! an agent's tier), as `sluice config check` and `sluice serve` do.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use sluice::admission::ClassSet;
use sluice::config::read::{NonEmpty, Ranged, Reader, under};
use sluice::config::{ConfigFileError, MAX_TIMEOUT_MS, SluiceConfig};

mod admin;
mod agents;
#[cfg(test)]
mod tests;

/// A sidecar's whole file: the host's configuration and its `[serve]` table, checked against
/// each other.
#[derive(Debug, Clone, PartialEq)]
pub struct SidecarConfig {
    /// The host: providers, admission, retries, the audit log, budgets, … (an agent's tier
    /// entered in `tenants.assign`).
    pub host: SluiceConfig,
    /// The `[serve]` table.
    pub serve: ServeConfig,
}

/// Reads and parses the file at `path`, the host's part and the sidecar's.
///
/// # Errors
/// [`ConfigFileError`] naming the file and the key.
pub fn from_file(path: &Path) -> Result<SidecarConfig, ConfigFileError> {
    let (host, serve) = SluiceConfig::from_file_with(path, read)?;
    Ok(SidecarConfig { host, serve })
}

/// Parses a whole file's text; relative paths in it are taken from `base_dir`.
///
/// # Errors
/// [`ConfigFileError`] naming the key.
pub fn from_toml(text: &str, base_dir: &Path) -> Result<SidecarConfig, ConfigFileError> {
    let (host, serve) = SluiceConfig::from_toml_with(text, base_dir, read)?;
    Ok(SidecarConfig { host, serve })
}

/// The `[serve]` table `table` of a file whose host part is `host`, checked against it.
fn read(
    reader: &Reader<'_>,
    table: Option<toml::Value>,
    host: &mut SluiceConfig,
) -> Result<ServeConfig, ConfigFileError> {
    let table: ServeTable = match table {
        Some(t) => reader.read("serve", t)?,
        None => ServeTable::default(),
    };
    let serve = table.config(reader)?;
    reconcile(reader.origin, host, &serve)?;
    Ok(serve)
}

/// The default address the sidecar listens on for agents.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8700";
/// The default address of the admin API.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:8701";
/// The largest request body the sidecar takes by default: 32 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;
/// How long in-flight calls get after a stop signal, by default.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);
/// The agents' connections seated at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 1024;
/// The admin listener's connections served at once, by default.
pub const DEFAULT_ADMIN_MAX_CONNECTIONS: u32 = 64;
/// How long a request's headers, then its body, may each take to arrive, by default.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// One agent's connections seated at once, by default.
pub const DEFAULT_MAX_CONNECTIONS_PER_AGENT: u32 = 256;
/// One tenant's connections seated at once, by default.
pub const DEFAULT_MAX_CONNECTIONS_PER_TENANT: u32 = 512;
/// Connections yet to present a valid token, at once, by default.
pub const DEFAULT_MAX_UNAUTHENTICATED: u32 = 256;
/// How long a new connection has to present a valid token, by default.
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(2);
/// Request bodies held in memory at once, by default: 1 GiB.
pub const DEFAULT_MAX_BODY_MEMORY: u64 = 1 << 30;
/// One tenant's request bodies held in memory at once, by default: 256 MiB.
pub const DEFAULT_MAX_BODY_MEMORY_PER_TENANT: u64 = 256 << 20;
/// Wrong tokens one address may present a minute, by default.
pub const DEFAULT_FAILED_TOKENS_PER_MINUTE: u32 = 10;

/// The `[serve]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Where agents connect.
    pub listen: SocketAddr,
    /// How long in-flight calls get to finish (or be journaled) after a stop signal.
    pub shutdown_deadline: Duration,
    /// What happens to a request that carries a provider key of its own.
    pub agent_provider_keys: AgentProviderKeys,
    /// What happens to a request whose `x-sluice-priority` its agent may not use.
    pub priority_above_allowed: PriorityAboveAllowed,
    /// The largest request body taken, in bytes.
    pub max_body_bytes: u64,
    /// The agents' connections seated at once (each seated when its first request
    /// presents a valid agent token); past it a connection is answered 503 and closed.
    pub max_connections: u32,
    /// One agent's connections seated at once; past it, its next one is answered 503.
    pub max_connections_per_agent: u32,
    /// One tenant's connections seated at once (its agents' together).
    pub max_connections_per_tenant: u32,
    /// Connections yet to present a valid token, at once; past it the oldest is cut to make
    /// room for the newest, so they never keep an agent out.
    pub max_unauthenticated: u32,
    /// How long a new connection has to present a valid token before it is cut.
    pub auth_timeout: Duration,
    /// Request bodies held in memory at once, in bytes, over every tenant; past it a
    /// request is answered 503 with `Retry-After`.
    pub max_body_memory: u64,
    /// One tenant's request bodies held in memory at once, in bytes; past it its request is
    /// answered 503 with `Retry-After` (413 when its body alone is larger).
    pub max_body_memory_per_tenant: u64,
    /// The threads agents' connections are served on, each connection wholly on one;
    /// `None`: one per CPU the process may use; 0: none, the connections served on the
    /// runtime the sidecar starts on (its threads take work from each other).
    pub workers: Option<u32>,
    /// Whether `sluice serve` moves its own machine code onto huge pages at start
    /// ([`sluice::code_on_huge_pages`]): fewer address translations missed by each call.
    pub code_on_huge_pages: bool,
    /// How long a request's headers may take to arrive (the connection is closed past it),
    /// then its body (408 past it): a client that stalls keeps no connection for longer.
    pub read_timeout: Duration,
    /// Wrong tokens (agent, admin, console sign-in) one address may present in a minute;
    /// past it the address's attempts are refused (429) until the minute is over.
    pub failed_tokens_per_minute: u32,
    /// Proxies in front of the listeners (addresses or networks): a request from one of
    /// them is counted against the client its `X-Forwarded-For` names (the nearest address
    /// in it that is not itself a trusted proxy), not against the proxy. Empty: every
    /// request is its peer's.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The admin API; `None`: not served.
    pub admin: Option<AdminConfig>,
    /// The agents, by name.
    pub agents: BTreeMap<String, AgentConfig>,
    /// How each provider is spoken to, by the provider's name (see [`ServeProvider`]).
    pub providers: BTreeMap<String, ServeProvider>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN
                .parse()
                .unwrap_or(([127, 0, 0, 1], 8700).into()),
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
            agent_provider_keys: AgentProviderKeys::Refuse,
            priority_above_allowed: PriorityAboveAllowed::Refuse,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_agent: DEFAULT_MAX_CONNECTIONS_PER_AGENT,
            max_connections_per_tenant: DEFAULT_MAX_CONNECTIONS_PER_TENANT,
            max_unauthenticated: DEFAULT_MAX_UNAUTHENTICATED,
            auth_timeout: DEFAULT_AUTH_TIMEOUT,
            max_body_memory: DEFAULT_MAX_BODY_MEMORY,
            max_body_memory_per_tenant: DEFAULT_MAX_BODY_MEMORY_PER_TENANT,
            workers: None,
            code_on_huge_pages: true,
            read_timeout: DEFAULT_READ_TIMEOUT,
            failed_tokens_per_minute: DEFAULT_FAILED_TOKENS_PER_MINUTE,
            trusted_proxies: Vec::new(),
            admin: None,
            agents: BTreeMap::new(),
            providers: BTreeMap::new(),
        }
    }
}

/// What the sidecar does with a provider key an agent sent itself (keys stay in the sidecar).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentProviderKeys {
    /// Refuse the request (403), naming the header.
    Refuse,
    /// Remove the key and send the request with the sidecar's credential.
    Strip,
}

/// The `[serve.admin]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// Where the admin API listens.
    pub listen: SocketAddr,
    /// The token its callers present (`authorization: Bearer <token>`).
    pub token: TokenSource,
    /// The operators who sign in to the console, by name, and their tokens: the name is
    /// who decides an escalation signed in with that token. Each name is one line of
    /// visible characters, as the journal takes it.
    pub operators: BTreeMap<String, TokenSource>,
    /// The origin browsers reach the console at, when a proxy serves it
    /// (`https://ops.example.com`): the origin a form must come from. `None`: `http://` and
    /// the request's `Host`, the listener itself.
    pub public_origin: Option<String>,
    /// Its connections served at once, apart from the agents'.
    pub max_connections: u32,
}

/// One agent: the token it presents, and the tenant its calls are billed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// Its token.
    pub token: TokenSource,
    /// The tenant its calls are billed to.
    pub tenant: String,
    /// The tenant's tier, when the agent's entry names it (it is then the tenant's tier in
    /// admission, `tenants.assign`).
    pub tier: Option<String>,
    /// Whether a request may name another tenant (`x-sluice-tenant`): a platform that
    /// serves many customers through one agent token.
    pub name_tenant: bool,
    /// Whether its `x-sluice-class: read` is taken on a request the sidecar would treat as a
    /// write (a `POST` outside the read routes). Without it such a hint is refused (400): a
    /// write is never made a read by the caller's word alone.
    pub class_hints: bool,
    /// The credential label it uses, by provider; a provider left out: its only credential,
    /// or `default`.
    pub credentials: BTreeMap<String, String>,
    /// The queue classes it may ask for with `x-sluice-priority` (default: all). Between
    /// tenants classes give no precedence (see `admission::fair`); this keeps an agent's
    /// own requests from jumping its tenant's other agents.
    pub priorities: ClassSet,
    /// The account headers ([`sluice::headers::ACCOUNT_HEADERS`]) it may set, lower case;
    /// every other one it sends is stripped, as every credential header is.
    pub pass_headers: Vec<String>,
}

/// What the sidecar does with an `x-sluice-priority` its agent may not use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriorityAboveAllowed {
    /// Refuse the request (400, naming the hint and what the agent may use).
    Refuse,
    /// Queue it in the nearest class the agent may use, less urgent first.
    Lower,
}

/// Where a token is read from. A token is compared by its SHA-256, so the file can hold
/// the digest alone.
#[derive(Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// An environment variable, read at start.
    Env(String),
    /// A file (surrounding whitespace trimmed), read at start.
    File(PathBuf),
    /// The token's SHA-256, hex: the configuration never holds the token.
    Sha256([u8; 32]),
}

/// Names where the token comes from, never a digest.
impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Env(v) => write!(f, "Env({v:?})"),
            Self::File(p) => write!(f, "File({p:?})"),
            Self::Sha256(_) => f.write_str("Sha256(..)"),
        }
    }
}

/// How the sidecar speaks to one provider's SDKs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServeProvider {
    /// The JSON shape of the errors the sidecar answers for it; `None`: the shape its plugin
    /// describes (`error-shape`), else OpenAI's.
    pub error_shape: Option<ErrorShape>,
    /// Routes besides `GET`, `HEAD` and `OPTIONS` that are reads (safe to send again, no
    /// side effect: a generation), as `METHOD /path` (a `*` matches any run of characters);
    /// `None`: the routes its plugin describes as reads (`read-routes`). Any other route is a
    /// write, journaled.
    pub read_routes: Option<Vec<String>>,
}

pub use sluice::contract::ErrorShape;

/// `[serve]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
struct ServeTable {
    listen: Option<NonEmpty>,
    shutdown_deadline_ms: Option<Ranged<1, MAX_TIMEOUT_MS>>,
    max_body_bytes: Option<Ranged<1024, { 1 << 30 }>>,
    max_connections: Option<Ranged<1, 1_000_000>>,
    max_connections_per_agent: Option<Ranged<1, 1_000_000>>,
    max_connections_per_tenant: Option<Ranged<1, 1_000_000>>,
    max_unauthenticated: Option<Ranged<1, 1_000_000>>,
    auth_timeout_ms: Option<Ranged<100, 60_000>>,
    max_body_memory: Option<Ranged<1024, { 1 << 40 }>>,
    max_body_memory_per_tenant: Option<Ranged<1024, { 1 << 40 }>>,
    workers: Option<Ranged<0, 1024>>,
    code_on_huge_pages: Option<bool>,
    read_timeout_ms: Option<Ranged<100, MAX_TIMEOUT_MS>>,
    failed_tokens_per_minute: Option<Ranged<1, 1_000_000>>,
    trusted_proxies: Vec<String>,
    agent_provider_keys: Option<AgentProviderKeys>,
    priority_above_allowed: Option<PriorityAboveAllowed>,
    admin: Option<admin::AdminTable>,
    agents: BTreeMap<String, agents::AgentTable>,
    providers: BTreeMap<String, ProviderTable>,
}

/// `[serve.providers.NAME]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
struct ProviderTable {
    error_shape: Option<NonEmpty>,
    read_routes: Option<Vec<String>>,
}

impl ServeTable {
    /// The `[serve]` table's configuration.
    fn config(self, reader: &Reader<'_>) -> Result<ServeConfig, ConfigFileError> {
        let defaults = ServeConfig::default();
        let serve = ServeConfig {
            listen: match self.listen {
                Some(addr) => address(reader, "serve.listen", addr)?,
                None => defaults.listen,
            },
            shutdown_deadline: self
                .shutdown_deadline_ms
                .map_or(defaults.shutdown_deadline, Ranged::ms),
            agent_provider_keys: self
                .agent_provider_keys
                .unwrap_or(defaults.agent_provider_keys),
            priority_above_allowed: self
                .priority_above_allowed
                .unwrap_or(defaults.priority_above_allowed),
            max_body_bytes: self
                .max_body_bytes
                .map_or(defaults.max_body_bytes, Ranged::get),
            max_connections: self
                .max_connections
                .map_or(defaults.max_connections, Ranged::u32),
            max_connections_per_agent: self
                .max_connections_per_agent
                .map_or(defaults.max_connections_per_agent, Ranged::u32),
            max_connections_per_tenant: self
                .max_connections_per_tenant
                .map_or(defaults.max_connections_per_tenant, Ranged::u32),
            max_unauthenticated: self
                .max_unauthenticated
                .map_or(defaults.max_unauthenticated, Ranged::u32),
            auth_timeout: self
                .auth_timeout_ms
                .map_or(defaults.auth_timeout, Ranged::ms),
            max_body_memory: self
                .max_body_memory
                .map_or(defaults.max_body_memory, Ranged::get),
            max_body_memory_per_tenant: self
                .max_body_memory_per_tenant
                .map_or(defaults.max_body_memory_per_tenant, Ranged::get),
            workers: self.workers.map(Ranged::u32),
            code_on_huge_pages: self
                .code_on_huge_pages
                .unwrap_or(defaults.code_on_huge_pages),
            read_timeout: self
                .read_timeout_ms
                .map_or(defaults.read_timeout, Ranged::ms),
            failed_tokens_per_minute: self
                .failed_tokens_per_minute
                .map_or(defaults.failed_tokens_per_minute, Ranged::u32),
            trusted_proxies: self
                .trusted_proxies
                .iter()
                .enumerate()
                .map(|(i, p)| proxy(reader, &format!("serve.trusted_proxies[{i}]"), p))
                .collect::<Result<_, _>>()?,
            admin: self.admin.map(|a| a.config(reader)).transpose()?,
            agents: each("serve.agents", self.agents, |a, at| a.config(reader, at))?,
            providers: each("serve.providers", self.providers, |p, at| {
                p.config(reader, at)
            })?,
        };
        Ok(serve)
    }
}

/// Each entry of the table at `table`, read by `read` with its own key.
fn each<T, U>(
    table: &str,
    entries: BTreeMap<String, T>,
    read: impl Fn(T, &str) -> Result<U, ConfigFileError>,
) -> Result<BTreeMap<String, U>, ConfigFileError> {
    entries
        .into_iter()
        .map(|(name, entry)| {
            let at = under(table, &name);
            Ok((name, read(entry, &at)?))
        })
        .collect()
}

/// A trusted proxy at `key`: an address (`10.0.0.5`) or a network (`10.0.0.0/8`).
fn proxy(reader: &Reader<'_>, key: &str, text: &str) -> Result<ipnet::IpNet, ConfigFileError> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| {
            reader.invalid(
                key,
                format!(
                    "`{}` is neither an address (10.0.0.5, ::1) nor a network (10.0.0.0/8)",
                    sluice::printable::printable_cut(text, 100)
                ),
            )
        })
}

/// An address and port, at `key`.
fn address(reader: &Reader<'_>, key: &str, given: NonEmpty) -> Result<SocketAddr, ConfigFileError> {
    given
        .0
        .parse()
        .map_err(|_| reader.invalid(key, "an address and port, such as `127.0.0.1:8700`"))
}

impl ProviderTable {
    fn config(self, reader: &Reader<'_>, at: &str) -> Result<ServeProvider, ConfigFileError> {
        let error_shape = self
            .error_shape
            .map(|s| {
                ErrorShape::named(&s.0).ok_or_else(|| {
                    reader.invalid(
                        &under(at, "error_shape"),
                        "one of `openai`, `anthropic`, `github`, `stripe`, `google`, `aws`",
                    )
                })
            })
            .transpose()?;
        if let Some(routes) = &self.read_routes
            && let Some(i) = routes.iter().position(|r| !route_ok(r))
        {
            return Err(reader.invalid(
                &format!("{}[{i}]", under(at, "read_routes")),
                "`METHOD /path`, such as `POST /v1/chat/completions` (one `*` at most, \
                 matching any run of characters)",
            ));
        }
        Ok(ServeProvider {
            error_shape,
            read_routes: self.read_routes,
        })
    }
}

/// `METHOD /path`: an upper-case method, one space, a path from `/` with no spaces.
fn route_ok(route: &str) -> bool {
    route.split_once(' ').is_some_and(|(method, path)| {
        !method.is_empty()
            && method.bytes().all(|b| b.is_ascii_uppercase())
            && path.starts_with('/')
            && !path.contains(char::is_whitespace)
            && path.matches('*').count() <= 1
    })
}

/// Checks the `[serve]` table against the rest of the file: the providers it names exist,
/// each agent's credential labels are the provider's, and an agent's tier is defined and
/// agrees with `tenants.assign`, where it is then entered.
fn reconcile(
    origin: &str,
    config: &mut SluiceConfig,
    serve: &ServeConfig,
) -> Result<(), ConfigFileError> {
    let invalid = |key: String, message: String| ConfigFileError::Invalid {
        origin: origin.to_owned(),
        key,
        message,
    };
    let names = || match config.providers.len() {
        0 => "none is configured (add a [providers.NAME] table)".to_owned(),
        _ => {
            let names: Vec<&str> = config.providers.keys().map(String::as_str).collect();
            format!("the providers are {}", names.join(", "))
        }
    };
    for name in serve.providers.keys() {
        if !config.providers.contains_key(name) {
            return Err(invalid(
                format!("serve.providers.{name}"),
                format!("no provider of that name; {}", names()),
            ));
        }
    }
    let mut assign = Vec::new();
    for (agent, a) in &serve.agents {
        for (provider, label) in &a.credentials {
            let Some(setup) = config.providers.get(provider) else {
                return Err(invalid(
                    format!("serve.agents.{agent}.credentials.{provider}"),
                    format!("no provider of that name; {}", names()),
                ));
            };
            let pool = config
                .admission
                .providers
                .get(provider)
                .is_some_and(|p| p.pools.contains_key(label));
            if !setup.credentials.contains_key(label) && !pool {
                return Err(invalid(
                    format!("serve.agents.{agent}.credentials.{provider}"),
                    format!("provider `{provider}` has no credential and no pool named `{label}`"),
                ));
            }
        }
        if let Some(tier) = &a.tier {
            let defined = tier == sluice::admission::config::DEFAULT_TIER
                || config.admission.tiers.contains_key(tier);
            if !defined {
                return Err(invalid(
                    format!("serve.agents.{agent}.tier"),
                    format!("no tier `{tier}` is defined under [tiers]"),
                ));
            }
            match config.admission.tenants.assign.get(&a.tenant) {
                Some(t) if t != tier => {
                    return Err(invalid(
                        format!("serve.agents.{agent}.tier"),
                        format!(
                            "tenant `{}` is in tier `{t}` (tenants.assign), not `{tier}`",
                            a.tenant
                        ),
                    ));
                }
                _ => assign.push((a.tenant.clone(), tier.clone())),
            }
        }
    }
    for (tenant, tier) in assign {
        if let Some(t) = config.admission.tenants.assign.get(&tenant)
            && *t != tier
        {
            return Err(invalid(
                "serve.agents".into(),
                format!("two agents put tenant `{tenant}` in tiers `{t}` and `{tier}`"),
            ));
        }
        config.admission.tenants.assign.insert(tenant, tier);
    }
    Ok(())
}
