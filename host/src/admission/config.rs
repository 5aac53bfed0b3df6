//! Admission configuration in TOML: providers and their scopes, the safety margin, tenant
//! tiers, and the queue's bounds. Every error names the key it is about, and every number has a
//! range (a wait of at most a day, a margin from 1% to 100%, bounded counts): a value no one
//! means is refused with the range, not carried into the scheduler's arithmetic.
//!
//! A provider's narrower scopes are named as requests and responses name them. Models have
//! their own table: the bundled plugins report a model's figures for, and plan its requests
//! into, the scope `model:<name>`, which `[providers.X.models.<name>]` configures without
//! quoting (a model name with a dot needs quotes as a TOML key: `models."gpt-4.1"`). Any other
//! name goes under `[providers.X.scopes.<name>]`; configuring one scope both ways is refused.
//! A scope named by requests but not here is unbounded until responses teach it limits; a
//! provider keeps at most `max_unconfigured_scopes` such names at once, so an agent writing a
//! new model into each request cannot grow the host (see [`super::scheduler`]).
//!
//! ```toml
//! margin = 0.9                     # pace at 90% of every provider limit
//!
//! [queue]
//! max_queued = 100000              # requests waiting, all scopes together
//! max_queued_per_scope = 10000
//! max_wait_ms = 600000             # a request that would wait longer is refused at once
//! max_unconfigured_scopes = 256    # models (scopes) requests name and the file does not,
//!                                  # kept per provider; past them, `model:other`
//!
//! [providers.openai.limits]        # each credential's own bucket
//! requests_per_minute = 500
//! tokens_per_minute = 30000
//! concurrent_requests = 50
//!
//! [providers.openai.models.gpt-4o] # the scope `model:gpt-4o`, which requests for the model
//! tokens_per_minute = 30000        # charge and its plugin's figures land in
//!
//! [providers.anthropic.limits]
//! output_tokens_per_minute = 80000
//! refill = "continuous"            # the provider's quotas are token buckets: the whole
//!                                  # pace may go at once (default "window": only the part
//!                                  # of the limit above the pace)
//!
//! [providers.github.scopes.search] # any other narrower scope, by the name requests use
//! requests_per_minute = 30
//!
//! [tiers.free]
//! weight = 1
//! max_queued = 100
//! [tiers.free.limits]
//! requests_per_day = 1000
//!
//! [tiers.paid]
//! weight = 4
//!
//! [tenants]
//! default_tier = "free"
//! [tenants.assign]
//! acme = "paid"
//! ```

use std::collections::BTreeMap;
use std::num::{NonZeroU32, NonZeroU64};
use std::path::Path;

use serde::Deserialize;

use super::limits::Limits;
use super::scope::Shape;
use crate::printable::printable;

/// The default safety margin: pace at 90% of a provider's limit.
pub const DEFAULT_MARGIN: f64 = 0.9;

/// The name of the tier every tenant is in when the configuration defines none.
pub const DEFAULT_TIER: &str = "standard";

/// The admission configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The share of each provider limit to pace at, from `MIN_MARGIN` to 1.
    pub margin: f64,
    /// The queue's bounds.
    pub queue: QueueConfig,
    /// Providers by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Tenant tiers by name.
    pub tiers: BTreeMap<String, TierConfig>,
    /// Which tenant is in which tier.
    pub tenants: TenantsConfig,
}

/// The queue's bounds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// The most requests waiting, all scopes together (at most [`MAX_QUEUED`]).
    pub max_queued: NonZeroU32,
    /// The most requests waiting on any one scope (at most [`MAX_QUEUED`]).
    pub max_queued_per_scope: NonZeroU32,
    /// The longest estimated wait a request is queued for, in milliseconds (at most
    /// [`MAX_WAIT_MS`], a day).
    pub max_wait_ms: NonZeroU64,
    /// The most names of narrower scopes the configuration does not name (a model an agent
    /// wrote in its request) each provider keeps at once, over all its credentials (at most
    /// [`MAX_UNCONFIGURED_SCOPES`]); a name past them is counted under `model:other` or
    /// `other`. A provider's own `max_unconfigured_scopes` replaces it.
    pub max_unconfigured_scopes: u32,
    /// How long such a scope stays at rest (nothing waiting or in flight, no hold, its
    /// buckets full) before it is forgotten and its place freed, in milliseconds (at most
    /// [`MAX_WAIT_MS`]).
    pub unconfigured_idle_ms: NonZeroU64,
}

/// One provider's scopes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// This provider's margin, instead of the global one.
    pub margin: Option<f64>,
    /// The limits of each credential's own bucket.
    pub limits: Limits,
    /// Narrower buckets (endpoint families, GitHub's `search`) by the name requests and
    /// responses use.
    pub scopes: BTreeMap<String, Limits>,
    /// Models' buckets by model name: `gpt-4o` configures the scope `model:gpt-4o` (see
    /// [`model_scope`]).
    pub models: BTreeMap<String, Limits>,
    /// The most requests waiting on one scope of this provider, instead of the queue's (at
    /// most [`MAX_QUEUED`]).
    pub max_queued: Option<NonZeroU32>,
    /// The longest estimated wait on this provider, in milliseconds, instead of the queue's
    /// (at most [`MAX_WAIT_MS`]).
    pub max_wait_ms: Option<NonZeroU64>,
    /// The most names of its narrower scopes the configuration does not name it keeps at
    /// once, instead of the queue's (at most [`MAX_UNCONFIGURED_SCOPES`]).
    pub max_unconfigured_scopes: Option<u32>,
    /// Credentials' own limits, by label, where they differ from the provider's (see
    /// [`pools`]).
    pub credentials: BTreeMap<String, CredentialLimits>,
    /// Pools of its credentials, by the name calls use instead of a credential (see
    /// [`pools`]).
    pub pools: BTreeMap<String, PoolConfig>,
    /// How the provider refills its quotas as its plugin declares it (`description.refill`):
    /// the refill of every quota of the provider that sets none, its unconfigured scopes'
    /// included. Not read from the configuration: the host sets it from the plugin it loads.
    #[serde(skip)]
    pub declared_refill: Option<super::limits::Refill>,
}

/// One tenant tier.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// The weight of each tenant's fair share (1 is ordinary; at most [`MAX_WEIGHT`]).
    #[serde(default = "one")]
    pub weight: NonZeroU32,
    /// The most requests one tenant may queue (at most [`MAX_QUEUED`]).
    #[serde(default)]
    pub max_queued: Option<NonZeroU32>,
    /// The most requests one tenant may have in flight (at most [`MAX_IN_FLIGHT`]).
    #[serde(default)]
    pub max_in_flight: Option<NonZeroU32>,
    /// Each tenant's own rate quotas.
    #[serde(default)]
    pub limits: Limits,
    /// Its precedence over other tiers, 0 (the default) to
    /// [`super::fair::MAX_PRECEDENCE`]: a tier's requests that may go are served before
    /// those of every tier of lower precedence. Between tiers of one precedence, and within
    /// a tier, tenants share by weight whatever their classes.
    #[serde(default)]
    pub precedence: u8,
    /// The queue classes its tenants' requests may use (default: all); a request of
    /// another class is queued in the nearest allowed one, less urgent first.
    #[serde(default)]
    pub classes: Option<Vec<super::fair::Class>>,
}

/// Which tenant is in which tier.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TenantsConfig {
    /// The tier of a tenant not listed in `assign`.
    pub default_tier: String,
    /// Tiers of named tenants.
    pub assign: BTreeMap<String, String>,
}

/// What a model's scope name starts with.
pub const MODEL_SCOPE_PREFIX: &str = sluice_contract::scope::MODEL_PREFIX;

/// The name of the scope of `model`'s own quotas (`model:gpt-4o`): the scope plugins report
/// the model's figures for and plan its requests into, and that `[providers.X.models.<model>]`
/// configures.
pub fn model_scope(model: &str) -> String {
    format!("{MODEL_SCOPE_PREFIX}{model}")
}

/// A provider's narrower scope, as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedScope<'a> {
    /// The scope's name, as requests and responses use it (`model:gpt-4o`, `search`).
    pub name: String,
    /// The key that configures it, under its provider's table (`models.gpt-4o`,
    /// `scopes.search`).
    pub key: String,
    /// Its limits.
    pub limits: &'a Limits,
}

impl ProviderConfig {
    /// Every narrower scope the provider configures: `scopes` under their own names, then
    /// `models` as `model:<name>`.
    pub fn named_scopes(&self) -> impl Iterator<Item = NamedScope<'_>> {
        let scopes = self.scopes.iter().map(|(name, limits)| NamedScope {
            name: name.clone(),
            key: format!("scopes.{}", toml_key(name)),
            limits,
        });
        let models = self.models.iter().map(|(model, limits)| NamedScope {
            name: model_scope(model),
            key: format!("models.{}", toml_key(model)),
            limits,
        });
        scopes.chain(models)
    }
}

/// `name` as a TOML key: bare when it can be, else quoted.
pub(crate) fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

fn one() -> NonZeroU32 {
    NonZeroU32::MIN
}

impl Default for Config {
    fn default() -> Self {
        Self {
            margin: DEFAULT_MARGIN,
            queue: QueueConfig::default(),
            providers: BTreeMap::new(),
            tiers: BTreeMap::new(),
            tenants: TenantsConfig::default(),
        }
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_queued: NonZeroU32::new(100_000).unwrap_or(NonZeroU32::MAX),
            max_queued_per_scope: NonZeroU32::new(10_000).unwrap_or(NonZeroU32::MAX),
            max_wait_ms: NonZeroU64::new(600_000).unwrap_or(NonZeroU64::MAX),
            max_unconfigured_scopes: 256,
            unconfigured_idle_ms: NonZeroU64::new(600_000).unwrap_or(NonZeroU64::MAX),
        }
    }
}

impl Default for TenantsConfig {
    fn default() -> Self {
        Self {
            default_tier: DEFAULT_TIER.into(),
            assign: BTreeMap::new(),
        }
    }
}

mod bounds;
mod file;
pub mod pools;
mod syntax;

pub use bounds::{
    MAX_IN_FLIGHT, MAX_QUEUED, MAX_UNCONFIGURED_SCOPES, MAX_WAIT_MS, MAX_WEIGHT, MIN_MARGIN,
};
pub use file::MAX_FILE_BYTES;
pub(crate) use file::read as read_text;
pub use pools::{CredentialLimits, MAX_POOL_MEMBERS, PoolConfig};
pub use syntax::QUOTED_CHARS;
pub(crate) use syntax::error as syntax_error;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why. Its message is part of this one and not repeated as a cause.
        error: std::io::Error,
    },
    /// The path names a directory, a fifo or a device, not a file.
    #[error("the configuration file {path} is not a regular file: give the path of a file")]
    NotAFile {
        /// The path.
        path: String,
    },
    /// The file is larger than any configuration needs to be.
    #[error(
        "the configuration file {path} is larger than {max} bytes: a configuration is at \
         most 1 MiB"
    )]
    TooLarge {
        /// The file.
        path: String,
        /// The largest size read.
        max: u64,
    },
    /// The TOML does not parse, or a key is unknown or of the wrong type.
    #[error("{origin}: {message}")]
    Syntax {
        /// The file, or `configuration`.
        origin: String,
        /// The parser's message on one line: the line and column, what is wrong (naming the
        /// key), and at most [`QUOTED_CHARS`] characters of the line around the error — all
        /// escaped by [`printable`].
        message: String,
    },
    /// A value is out of range or refers to something undefined. Both fields may quote the
    /// file (a provider's or tier's name): they are printed escaped by
    /// [`printable`].
    #[error("`{}`: {}", printable(.key), printable(.message))]
    Invalid {
        /// The dotted key.
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
}

impl Config {
    /// Parses and validates a configuration.
    ///
    /// # Errors
    /// `ConfigError::Syntax` or `ConfigError::Invalid`, naming the key.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        Self::parse(text, "configuration")
    }

    /// Reads, parses and validates a configuration file: a regular file of at most
    /// `MAX_FILE_BYTES` (a fifo or a device is refused without waiting on it).
    ///
    /// # Errors
    /// `ConfigError`, naming the file and the key.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = file::read(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| syntax::error(origin, text, &e))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what the types cannot: that every number is in its range (margins from
    /// `MIN_MARGIN` to 1, waits up to `MAX_WAIT_MS`, queue bounds up to `MAX_QUEUED`,
    /// requests in flight up to `MAX_IN_FLIGHT`, weights up to `MAX_WEIGHT`, places of
    /// unconfigured scopes up to `MAX_UNCONFIGURED_SCOPES`), tier
    /// references, and that every quota can be paced.
    ///
    /// # Errors
    /// `ConfigError::Invalid` naming the first bad key, and the range for a number.
    pub fn validate(&self) -> Result<(), ConfigError> {
        bounds::margin("margin", self.margin)?;
        let q = &self.queue;
        bounds::queued("queue.max_queued", Some(q.max_queued))?;
        bounds::queued("queue.max_queued_per_scope", Some(q.max_queued_per_scope))?;
        bounds::wait_ms("queue.max_wait_ms", Some(q.max_wait_ms))?;
        bounds::unconfigured(
            "queue.max_unconfigured_scopes",
            Some(q.max_unconfigured_scopes),
        )?;
        bounds::wait_ms("queue.unconfigured_idle_ms", Some(q.unconfigured_idle_ms))?;
        for (name, p) in &self.providers {
            let margin = p.margin.unwrap_or(self.margin);
            if let Some(m) = p.margin {
                bounds::margin(&format!("providers.{name}.margin"), m)?;
            }
            bounds::queued(&format!("providers.{name}.max_queued"), p.max_queued)?;
            bounds::wait_ms(&format!("providers.{name}.max_wait_ms"), p.max_wait_ms)?;
            bounds::unconfigured(
                &format!("providers.{name}.max_unconfigured_scopes"),
                p.max_unconfigured_scopes,
            )?;
            bounds::limits(&format!("providers.{name}.limits"), &p.limits)?;
            shape(&format!("providers.{name}.limits"), &p.limits, margin)?;
            for model in p.models.keys() {
                let scope = model_scope(model);
                if p.scopes.contains_key(&scope) {
                    return Err(ConfigError::Invalid {
                        key: format!("providers.{name}.models.{}", toml_key(model)),
                        message: format!(
                            "configures the scope `{scope}`, which \
                             `providers.{name}.scopes.{}` configures too: keep one of the two",
                            toml_key(&scope)
                        ),
                    });
                }
            }
            for named in p.named_scopes() {
                let key = format!("providers.{name}.{}", named.key);
                bounds::limits(&key, named.limits)?;
                shape(&key, named.limits, margin)?;
            }
            pools::validate(&format!("providers.{name}"), p, margin)?;
        }
        for (name, t) in &self.tiers {
            let key = |k: &str| format!("tiers.{name}.{k}");
            bounds::at_most(
                &key("weight"),
                t.weight.get().into(),
                MAX_WEIGHT.into(),
                "times an ordinary share",
            )?;
            bounds::queued(&key("max_queued"), t.max_queued)?;
            bounds::in_flight(&key("max_in_flight"), t.max_in_flight)?;
            bounds::limits(&key("limits"), &t.limits)?;
            shape(&key("limits"), &t.limits, self.margin)?;
            bounds::at_most(
                &key("precedence"),
                t.precedence.into(),
                super::fair::MAX_PRECEDENCE.into(),
                "0 shares with every tier; a higher one goes first",
            )?;
            if t.classes.as_ref().is_some_and(Vec::is_empty) {
                return Err(ConfigError::Invalid {
                    key: key("classes"),
                    message: "is empty: name at least one of \"interactive\", \"standard\", \
                              \"background\""
                        .into(),
                });
            }
        }
        let known = |tier: &str| tier == DEFAULT_TIER || self.tiers.contains_key(tier);
        if !known(&self.tenants.default_tier) {
            return Err(undefined_tier(
                "tenants.default_tier",
                &self.tenants.default_tier,
            ));
        }
        for (tenant, tier) in &self.tenants.assign {
            if !known(tier) {
                return Err(undefined_tier(&format!("tenants.assign.{tenant}"), tier));
            }
        }
        Ok(())
    }
}

/// The shape of a scope with `limits`, or the error naming `key`.
pub(crate) fn shape(key: &str, limits: &Limits, margin: f64) -> Result<Shape, ConfigError> {
    Shape::new(limits, margin).map_err(|(quota, e)| ConfigError::Invalid {
        key: format!("{key}.{quota}"),
        message: e.to_string(),
    })
}

fn undefined_tier(key: &str, tier: &str) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        message: format!("the tier `{tier}` is not defined: add a [tiers.{tier}] table"),
    }
}

#[cfg(test)]
mod tests;
