//! The `[serve]` table: how `sluice serve`, the sidecar, listens, who its agents are, and how
//! it speaks each provider's dialect.
//!
//! ```toml
//! [serve]
//! listen = "127.0.0.1:8700"          # where agents' SDKs point (loopback by default)
//! shutdown_deadline_ms = 10000       # in-flight calls get this long after a stop signal
//! agent_provider_keys = "refuse"     # or "strip": a provider key an agent sends itself
//! priority_above_allowed = "refuse"  # or "lower": an x-sluice-priority the agent may not use
//!
//! [serve.admin]
//! listen = "127.0.0.1:8701"
//! token = { env = "SLUICE_ADMIN_TOKEN" }
//! # Optional: people who sign in to the console (`/console`) by name; a decision records
//! # the name. The admin token signs in as `admin`.
//! operators = { "ops@example.com" = { env = "OPS_CONSOLE_TOKEN" } }
//!
//! [serve.agents.research]
//! token = { env = "RESEARCH_AGENT_TOKEN" }   # or { file = "..." }, or { sha256 = "<hex>" }
//! tenant = "acme"
//! tier = "paid"                      # optional: the tenant's tier (tenants.assign)
//! name_tenant = false                # may its requests name another tenant
//! credentials = { openai = "team-key" }
//! priorities = ["standard", "background"]   # the classes it may ask for (default: all)
//!
//! [serve.providers.openai]
//! error_shape = "openai"             # default: as the plugin describes it, else openai
//! read_routes = ["POST /v1/chat/completions"]   # non-GET reads; default: the plugin's
//! ```
//!
//! The sidecar itself lives in the `sluice-serve` crate; this is only its configuration, so
//! that one file configures the whole host and `sluice config check` checks all of it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use toml::{Table, Value};

use super::ConfigFileError;
use super::parse::Keys;
use crate::admission::{Class, ClassSet};

/// The default address the sidecar listens on for agents.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8700";
/// The default address of the admin API.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:8701";
/// The largest request body the sidecar takes by default: 32 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;
/// How long in-flight calls get after a stop signal, by default.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

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
            admin: None,
            agents: BTreeMap::new(),
            providers: BTreeMap::new(),
        }
    }
}

/// What the sidecar does with a provider key an agent sent itself (keys stay in the sidecar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// The credential label it uses, by provider; a provider left out: its only credential,
    /// or `default`.
    pub credentials: BTreeMap<String, String>,
    /// The queue classes it may ask for with `x-sluice-priority` (default: all). Between
    /// tenants classes give no precedence (see `admission::fair`); this keeps an agent's
    /// own requests from jumping its tenant's other agents.
    pub priorities: ClassSet,
}

/// What the sidecar does with an `x-sluice-priority` its agent may not use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// side effect: a generation), as `METHOD /path` (a trailing `*` matches any rest);
    /// `None`: the routes its plugin describes as reads (`read-routes`). Any other route is a
    /// write, journaled.
    pub read_routes: Option<Vec<String>>,
}

pub use crate::contract::ErrorShape;

/// Parses the `[serve]` table.
pub(super) fn parse(keys: &Keys<'_>, mut table: Table) -> Result<ServeConfig, ConfigFileError> {
    let mut serve = ServeConfig::default();
    if let Some(addr) = address(keys, &mut table, "listen", "serve.listen")? {
        serve.listen = addr;
    }
    if let Some(ms) = keys.number(
        &mut table,
        "shutdown_deadline_ms",
        "serve.shutdown_deadline_ms",
        1,
        super::parse::MAX_TIMEOUT_MS,
    )? {
        serve.shutdown_deadline = Duration::from_millis(ms);
    }
    if let Some(n) = keys.number(
        &mut table,
        "max_body_bytes",
        "serve.max_body_bytes",
        1024,
        1 << 30,
    )? {
        serve.max_body_bytes = n;
    }
    match keys
        .string(
            &mut table,
            "agent_provider_keys",
            "serve.agent_provider_keys",
        )?
        .as_deref()
    {
        None | Some("refuse") => {}
        Some("strip") => serve.agent_provider_keys = AgentProviderKeys::Strip,
        Some(_) => {
            return Err(keys.invalid("serve.agent_provider_keys", "`refuse` or `strip`"));
        }
    }
    match keys
        .string(
            &mut table,
            "priority_above_allowed",
            "serve.priority_above_allowed",
        )?
        .as_deref()
    {
        None | Some("refuse") => {}
        Some("lower") => serve.priority_above_allowed = PriorityAboveAllowed::Lower,
        Some(_) => {
            return Err(keys.invalid("serve.priority_above_allowed", "`refuse` or `lower`"));
        }
    }
    let admin = keys.table(&mut table, "admin", "serve.admin")?;
    if !admin.is_empty() {
        serve.admin = Some(admin_table(keys, admin)?);
    }
    for (name, value) in keys.table(&mut table, "agents", "serve.agents")? {
        let at = format!("serve.agents.{name}");
        let Value::Table(t) = value else {
            return Err(keys.invalid(&at, "a table"));
        };
        serve.agents.insert(name, agent(keys, &at, t)?);
    }
    for (name, value) in keys.table(&mut table, "providers", "serve.providers")? {
        let at = format!("serve.providers.{name}");
        let Value::Table(t) = value else {
            return Err(keys.invalid(&at, "a table"));
        };
        serve.providers.insert(name, provider(keys, &at, t)?);
    }
    keys.no_other_keys(
        &table,
        "serve",
        &[
            "listen",
            "shutdown_deadline_ms",
            "max_body_bytes",
            "agent_provider_keys",
            "priority_above_allowed",
            "admin",
            "agents",
            "providers",
        ],
    )?;
    Ok(serve)
}

fn address(
    keys: &Keys<'_>,
    table: &mut Table,
    key: &str,
    path: &str,
) -> Result<Option<SocketAddr>, ConfigFileError> {
    keys.string(table, key, path)?
        .map(|s| {
            s.parse()
                .map_err(|_| keys.invalid(path, "an address and port, such as `127.0.0.1:8700`"))
        })
        .transpose()
}

fn admin_table(keys: &Keys<'_>, mut table: Table) -> Result<AdminConfig, ConfigFileError> {
    let listen = address(keys, &mut table, "listen", "serve.admin.listen")?.unwrap_or_else(|| {
        DEFAULT_ADMIN_LISTEN
            .parse()
            .unwrap_or(([127, 0, 0, 1], 8701).into())
    });
    let token = match table.remove("token") {
        Some(v) => token(keys, "serve.admin.token", v)?,
        None => {
            return Err(keys.invalid(
                "serve.admin.token",
                "the admin API needs a token: `token = { env = \"SLUICE_ADMIN_TOKEN\" }`",
            ));
        }
    };
    let mut operators = BTreeMap::new();
    for (name, value) in keys.table(&mut table, "operators", "serve.admin.operators")? {
        let at = format!("serve.admin.operators.{name}");
        if let Err(e) = crate::journal::text::check_operator(&name) {
            return Err(keys.invalid(&at, e.to_string()));
        }
        operators.insert(name, self::token(keys, &at, value)?);
    }
    keys.no_other_keys(&table, "serve.admin", &["listen", "token", "operators"])?;
    Ok(AdminConfig {
        listen,
        token,
        operators,
    })
}

fn agent(keys: &Keys<'_>, at: &str, mut table: Table) -> Result<AgentConfig, ConfigFileError> {
    let token = match table.remove("token") {
        Some(v) => token(keys, &format!("{at}.token"), v)?,
        None => return Err(keys.invalid(&format!("{at}.token"), "every agent needs a token")),
    };
    let Some(tenant) = keys.string(&mut table, "tenant", &format!("{at}.tenant"))? else {
        return Err(keys.invalid(
            &format!("{at}.tenant"),
            "every agent needs the tenant its calls are billed to",
        ));
    };
    let tier = keys.string(&mut table, "tier", &format!("{at}.tier"))?;
    let name_tenant = match table.remove("name_tenant") {
        None => false,
        Some(Value::Boolean(b)) => b,
        Some(_) => return Err(keys.invalid(&format!("{at}.name_tenant"), "true or false")),
    };
    let mut credentials = BTreeMap::new();
    for (provider, label) in keys.table(&mut table, "credentials", &format!("{at}.credentials"))? {
        match label {
            Value::String(s) if !s.is_empty() => {
                credentials.insert(provider, s);
            }
            _ => {
                return Err(keys.invalid(
                    &format!("{at}.credentials.{provider}"),
                    "the label of one of the provider's credentials",
                ));
            }
        }
    }
    let priorities = match table.remove("priorities") {
        None => ClassSet::ALL,
        Some(v) => priorities(keys, &format!("{at}.priorities"), v)?,
    };
    keys.no_other_keys(
        &table,
        at,
        &[
            "token",
            "tenant",
            "tier",
            "name_tenant",
            "credentials",
            "priorities",
        ],
    )?;
    Ok(AgentConfig {
        token,
        tenant,
        tier,
        name_tenant,
        credentials,
        priorities,
    })
}

/// A non-empty list of queue classes.
fn priorities(keys: &Keys<'_>, at: &str, value: Value) -> Result<ClassSet, ConfigFileError> {
    const HOW: &str = "a non-empty list of \"interactive\", \"standard\", \"background\"";
    let Value::Array(items) = value else {
        return Err(keys.invalid(at, HOW));
    };
    let mut classes = Vec::new();
    for item in items {
        let class = match item.as_str() {
            Some("interactive") => Class::Interactive,
            Some("standard") => Class::Standard,
            Some("background") => Class::Background,
            _ => return Err(keys.invalid(at, HOW)),
        };
        classes.push(class);
    }
    if classes.is_empty() {
        return Err(keys.invalid(at, HOW));
    }
    Ok(ClassSet::of(&classes))
}

fn token(keys: &Keys<'_>, at: &str, value: Value) -> Result<TokenSource, ConfigFileError> {
    const HOW: &str =
        "one of `{ env = \"VAR\" }`, `{ file = \"path\" }` or `{ sha256 = \"<64 hex digits>\" }`";
    let Value::Table(mut t) = value else {
        return Err(keys.invalid(at, HOW));
    };
    let env = keys.string(&mut t, "env", &format!("{at}.env"))?;
    let file = keys.path(&mut t, "file", &format!("{at}.file"))?;
    let sha = keys.string(&mut t, "sha256", &format!("{at}.sha256"))?;
    keys.no_other_keys(&t, at, &["env", "file", "sha256"])?;
    match (env, file, sha) {
        (Some(v), None, None) => Ok(TokenSource::Env(v)),
        (None, Some(p), None) => Ok(TokenSource::File(p)),
        (None, None, Some(hex)) => digest(&hex)
            .map(TokenSource::Sha256)
            .ok_or_else(|| keys.invalid(&format!("{at}.sha256"), "64 hex digits")),
        _ => Err(keys.invalid(at, HOW)),
    }
}

/// 64 hex digits as 32 bytes.
fn digest(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn provider(keys: &Keys<'_>, at: &str, mut table: Table) -> Result<ServeProvider, ConfigFileError> {
    let error_shape = keys
        .string(&mut table, "error_shape", &format!("{at}.error_shape"))?
        .map(|s| {
            ErrorShape::named(&s).ok_or_else(|| {
                keys.invalid(
                    &format!("{at}.error_shape"),
                    "one of `openai`, `anthropic`, `github`, `stripe`",
                )
            })
        })
        .transpose()?;
    let read_routes = match table.remove("read_routes") {
        None => None,
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) if route_ok(&s) => Ok(s),
                    _ => Err(keys.invalid(
                        &format!("{at}.read_routes[{i}]"),
                        "`METHOD /path`, such as `POST /v1/chat/completions` (a trailing `*` \
                         matches any rest)",
                    )),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => {
            return Err(keys.invalid(
                &format!("{at}.read_routes"),
                "a list of `METHOD /path` routes",
            ));
        }
    };
    keys.no_other_keys(&table, at, &["error_shape", "read_routes"])?;
    Ok(ServeProvider {
        error_shape,
        read_routes,
    })
}

/// `METHOD /path`: an upper-case method, one space, a path from `/` with no spaces.
fn route_ok(route: &str) -> bool {
    route.split_once(' ').is_some_and(|(method, path)| {
        !method.is_empty()
            && method.bytes().all(|b| b.is_ascii_uppercase())
            && path.starts_with('/')
            && !path.contains(char::is_whitespace)
    })
}

/// Checks the `[serve]` table against the rest of the file: the providers it names exist,
/// each agent's credential labels are the provider's, and an agent's tier is defined and
/// agrees with `tenants.assign`, where it is then entered.
pub(super) fn reconcile(
    origin: &str,
    config: &mut super::SluiceConfig,
) -> Result<(), ConfigFileError> {
    let invalid = |key: String, message: String| ConfigFileError::Invalid {
        origin: origin.to_owned(),
        key,
        message,
    };
    let names = || {
        config
            .providers
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    };
    for name in config.serve.providers.keys() {
        if !config.providers.contains_key(name) {
            return Err(invalid(
                format!("serve.providers.{name}"),
                format!("no provider of that name; the providers are {}", names()),
            ));
        }
    }
    let mut assign = Vec::new();
    for (agent, a) in &config.serve.agents {
        for (provider, label) in &a.credentials {
            let Some(setup) = config.providers.get(provider) else {
                return Err(invalid(
                    format!("serve.agents.{agent}.credentials.{provider}"),
                    format!("no provider of that name; the providers are {}", names()),
                ));
            };
            if !setup.credentials.contains_key(label) {
                return Err(invalid(
                    format!("serve.agents.{agent}.credentials.{provider}"),
                    format!("provider `{provider}` has no credential labelled `{label}`"),
                ));
            }
        }
        if let Some(tier) = &a.tier {
            let defined = tier == crate::admission::config::DEFAULT_TIER
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
