//! Admission configuration in TOML: providers and their scopes, the safety margin, tenant
//! tiers, and the queue's bounds. Every error names the key it is about.
//!
//! ```toml
//! margin = 0.9                     # pace at 90% of every provider limit
//!
//! [queue]
//! max_queued = 100000              # requests waiting, all scopes together
//! max_queued_per_scope = 10000
//! max_wait_ms = 600000             # a request that would wait longer is refused at once
//!
//! [providers.openai.limits]        # each credential's own bucket
//! requests_per_minute = 500
//! tokens_per_minute = 30000
//! concurrent_requests = 50
//!
//! [providers.openai.scopes.gpt-4o] # a narrower bucket that requests name
//! tokens_per_minute = 30000
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

/// The default safety margin: pace at 90% of a provider's limit.
pub const DEFAULT_MARGIN: f64 = 0.9;

/// The name of the tier every tenant is in when the configuration defines none.
pub const DEFAULT_TIER: &str = "standard";

/// The admission configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The share of each provider limit to pace at, in (0, 1].
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
    /// The most requests waiting, all scopes together.
    pub max_queued: NonZeroU32,
    /// The most requests waiting on any one scope.
    pub max_queued_per_scope: NonZeroU32,
    /// The longest estimated wait a request is queued for, in milliseconds.
    pub max_wait_ms: NonZeroU64,
}

/// One provider's scopes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// This provider's margin, instead of the global one.
    pub margin: Option<f64>,
    /// The limits of each credential's own bucket.
    pub limits: Limits,
    /// Narrower buckets (models, endpoint families) by the name requests and responses use.
    pub scopes: BTreeMap<String, Limits>,
    /// The most requests waiting on one scope of this provider, instead of the queue's.
    pub max_queued: Option<NonZeroU32>,
    /// The longest estimated wait on this provider, in milliseconds, instead of the queue's.
    pub max_wait_ms: Option<NonZeroU64>,
}

/// One tenant tier.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// The weight of each tenant's fair share (1 is ordinary).
    #[serde(default = "one")]
    pub weight: NonZeroU32,
    /// The most requests one tenant may queue.
    #[serde(default)]
    pub max_queued: Option<NonZeroU32>,
    /// The most requests one tenant may have in flight.
    #[serde(default)]
    pub max_in_flight: Option<NonZeroU32>,
    /// Each tenant's own rate quotas.
    #[serde(default)]
    pub limits: Limits,
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

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the admission configuration {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML does not parse, or a key is unknown or of the wrong type.
    #[error("{origin}: {message}")]
    Syntax {
        /// The file, or `configuration`.
        origin: String,
        /// The parser's message, which names the key and shows the line.
        message: String,
    },
    /// A value is out of range or refers to something undefined.
    #[error("`{key}`: {message}")]
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
    /// [`ConfigError::Syntax`] or [`ConfigError::Invalid`], naming the key.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        Self::parse(text, "configuration")
    }

    /// Reads, parses and validates a configuration file.
    ///
    /// # Errors
    /// [`ConfigError`], naming the file and the key.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            origin: origin.into(),
            message: e.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what the types cannot: margins, tier references, and that every quota can be
    /// paced.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first bad key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_margin("margin", self.margin)?;
        for (name, p) in &self.providers {
            let margin = p.margin.unwrap_or(self.margin);
            if let Some(m) = p.margin {
                check_margin(&format!("providers.{name}.margin"), m)?;
            }
            shape(&format!("providers.{name}.limits"), &p.limits, margin)?;
            for (scope, limits) in &p.scopes {
                shape(&format!("providers.{name}.scopes.{scope}"), limits, margin)?;
            }
        }
        for (name, t) in &self.tiers {
            shape(&format!("tiers.{name}.limits"), &t.limits, self.margin)?;
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

fn check_margin(key: &str, margin: f64) -> Result<(), ConfigError> {
    if margin > 0.0 && margin <= 1.0 {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            key: key.into(),
            message: format!(
                "the margin is the share of the provider's limit to pace at: above 0 and at \
                 most 1 (0.9 paces at 90%), not {margin}"
            ),
        })
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
mod tests {
    use super::*;

    #[test]
    fn the_module_example_parses() {
        let doc = include_str!("config.rs");
        let example: String = doc
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start()))
            .collect();
        let c = Config::from_toml(&example).unwrap();
        assert_eq!(c.tiers["paid"].weight.get(), 4);
        assert_eq!(
            c.providers["openai"].scopes["gpt-4o"]
                .tokens_per_minute
                .map(NonZeroU64::get),
            Some(30_000)
        );
        assert_eq!(c.tenants.assign["acme"], "paid");
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        assert_eq!(Config::from_toml("").unwrap(), Config::default());
    }

    fn err(text: &str) -> String {
        Config::from_toml(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_key() {
        let e = err("[providers.openai.limits]\nrequests_per_minit = 5\n");
        assert!(e.contains("requests_per_minit"), "{e}");
        let e = err("[providers.openai.limits]\nrequests_per_minute = 0\n");
        assert!(e.contains("requests_per_minute"), "{e}");
        let e = err("[providers.openai]\nmargin = 1.5\n");
        assert!(e.starts_with("`providers.openai.margin`"), "{e}");
        let e = err("[tenants.assign]\nacme = \"gold\"\n");
        assert!(e.starts_with("`tenants.assign.acme`"), "{e}");
        assert!(e.contains("[tiers.gold]"), "{e}");
        let e = err("[tiers.free]\nweight = 0\n");
        assert!(e.contains("weight"), "{e}");
    }
}
