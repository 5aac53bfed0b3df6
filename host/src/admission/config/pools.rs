//! A credential's own limits, and pools: several credentials of one provider behind one
//! name, each call admitted on the member that can take it soonest.
//!
//! ```toml
//! [providers.openai.limits]                  # every credential's, unless it says otherwise
//! requests_per_minute = 500
//!
//! [providers.openai.credentials.east.limits] # this credential's own bucket
//! requests_per_minute = 3000
//! tokens_per_minute = 450000
//! [providers.openai.credentials.east.models.gpt-4o]
//! tokens_per_minute = 300000
//!
//! [providers.openai.pools.gpt]               # a call names the pool instead of a credential
//! members = ["east", "west", "team-key"]
//! weights = { east = 2 }                     # ties go by weight (1 unless named)
//! ```
//!
//! A credential's `limits` replace its provider's `limits` for its own bucket; each of its
//! `models` and `scopes` replaces the provider's entry of the same name, and the rest are
//! the provider's.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;

use serde::Deserialize;

use super::{ConfigError, MAX_WEIGHT, ProviderConfig, bounds, model_scope, shape, toml_key};
use crate::admission::limits::Limits;

/// The most members one pool may have.
pub const MAX_POOL_MEMBERS: usize = 1_000;

/// One credential's own limits, where they differ from its provider's
/// (`[providers.X.credentials.LABEL]`: `limits`, `scopes.NAME`, `models.MODEL`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CredentialLimits {
    /// Its own bucket's limits, instead of the provider's `limits`.
    pub limits: Option<Limits>,
    /// Its narrower scopes' limits, instead of the provider's of the same name.
    pub scopes: BTreeMap<String, Limits>,
    /// Its models' limits, instead of the provider's of the same model.
    pub models: BTreeMap<String, Limits>,
}

/// A pool: credentials of one provider a call may go with, by the pool's name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    /// The credentials' labels, in order (at least one, at most [`MAX_POOL_MEMBERS`]).
    pub members: Vec<String>,
    /// The weight of members that are not 1 (at most [`MAX_WEIGHT`]): between members that
    /// would admit a call equally soon, each gets calls in proportion to its weight.
    #[serde(default)]
    pub weights: BTreeMap<String, NonZeroU32>,
}

impl PoolConfig {
    /// Each member's label and weight, in order.
    pub fn weighted(&self) -> impl Iterator<Item = (&str, u32)> {
        self.members.iter().map(|m| {
            let weight = self.weights.get(m).map_or(1, |w| w.get());
            (m.as_str(), weight)
        })
    }
}

impl CredentialLimits {
    /// Every narrower scope it configures, by scope name (`model:gpt-4o`, `search`), with
    /// the key under its table.
    pub fn named(&self) -> impl Iterator<Item = (String, String, &Limits)> {
        let scopes = self
            .scopes
            .iter()
            .map(|(n, l)| (n.clone(), format!("scopes.{}", toml_key(n)), l));
        let models = self
            .models
            .iter()
            .map(|(m, l)| (model_scope(m), format!("models.{}", toml_key(m)), l));
        scopes.chain(models)
    }
}

/// Checks a provider's credentials' limits and its pools (`at`: `providers.NAME`).
pub(super) fn validate(at: &str, p: &ProviderConfig, margin: f64) -> Result<(), ConfigError> {
    for (label, c) in &p.credentials {
        let at = format!("{at}.credentials.{}", toml_key(label));
        if let Some(limits) = &c.limits {
            bounds::limits(&format!("{at}.limits"), limits)?;
            shape(&format!("{at}.limits"), limits, margin)?;
        }
        for (_, key, limits) in c.named() {
            let key = format!("{at}.{key}");
            bounds::limits(&key, limits)?;
            shape(&key, limits, margin)?;
        }
    }
    for (name, pool) in &p.pools {
        let at = format!("{at}.pools.{}", toml_key(name));
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            key: format!("{at}.{key}"),
            message,
        };
        if p.credentials.contains_key(name) {
            return Err(same_name(&at, name));
        }
        if pool.members.is_empty() {
            return Err(invalid(
                "members",
                "is empty: name at least one credential label".into(),
            ));
        }
        if pool.members.len() > MAX_POOL_MEMBERS {
            return Err(invalid(
                "members",
                format!("{} members: at most {MAX_POOL_MEMBERS}", pool.members.len()),
            ));
        }
        let mut seen = BTreeSet::new();
        for m in &pool.members {
            if m.is_empty() {
                return Err(invalid("members", "holds an empty label".into()));
            }
            if !seen.insert(m.as_str()) {
                return Err(invalid(
                    "members",
                    format!("names `{m}` twice: name each credential once"),
                ));
            }
        }
        for (member, weight) in &pool.weights {
            if !seen.contains(member.as_str()) {
                return Err(invalid(
                    &format!("weights.{}", toml_key(member)),
                    format!("`{member}` is not a member of the pool: add it to `members`"),
                ));
            }
            bounds::at_most(
                &format!("{at}.weights.{}", toml_key(member)),
                weight.get().into(),
                MAX_WEIGHT.into(),
                "times an ordinary share",
            )?;
        }
    }
    Ok(())
}

/// The error of a pool at `at` named `name` like a credential.
pub(crate) fn same_name(at: &str, name: &str) -> ConfigError {
    ConfigError::Invalid {
        key: at.to_owned(),
        message: format!(
            "`{name}` is also a credential's label: a call names one or the other, so give \
             the pool another name"
        ),
    }
}
