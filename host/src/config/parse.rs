//! Reading the file: the keys outside admission are taken out of the TOML table, each
//! checked where it is found; what is left is admission's, checked by admission.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use super::{AuditConfig, ConfigFileError, ProviderSetup, SluiceConfig};
use crate::admission;
use crate::credentials::CredentialSource;
use crate::retry::RetryConfig;
use crate::transport::{ExtraRoot, Timeouts, TransportConfig};

/// The longest timeout or deadline the file can name, in milliseconds: an hour.
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// The longest audit retention, in days: ten years.
pub const MAX_RETENTION_DAYS: u64 = 3_650;

/// Reads one key's value out of a table, naming it on error.
pub(super) struct Keys<'a> {
    pub(super) origin: &'a str,
    pub(super) base_dir: &'a Path,
}

impl Keys<'_> {
    pub(super) fn invalid(&self, key: &str, message: impl Into<String>) -> ConfigFileError {
        ConfigFileError::Invalid {
            origin: self.origin.to_owned(),
            key: key.to_owned(),
            message: message.into(),
        }
    }

    pub(super) fn string(
        &self,
        table: &mut Table,
        key: &str,
        path: &str,
    ) -> Result<Option<String>, ConfigFileError> {
        match table.remove(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s)),
            Some(Value::String(_)) => Err(self.invalid(path, "must not be empty")),
            Some(other) => Err(self.invalid(path, format!("a string, not {}", other.type_str()))),
        }
    }

    pub(super) fn path(
        &self,
        table: &mut Table,
        key: &str,
        path: &str,
    ) -> Result<Option<PathBuf>, ConfigFileError> {
        Ok(self
            .string(table, key, path)?
            .map(|s| self.base_dir.join(s)))
    }

    pub(super) fn table(
        &self,
        table: &mut Table,
        key: &str,
        path: &str,
    ) -> Result<Table, ConfigFileError> {
        match table.remove(key) {
            None => Ok(Table::new()),
            Some(Value::Table(t)) => Ok(t),
            Some(other) => Err(self.invalid(path, format!("a table, not {}", other.type_str()))),
        }
    }

    /// A whole number from `min` to `max`.
    pub(super) fn number(
        &self,
        table: &mut Table,
        key: &str,
        path: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ConfigFileError> {
        match table.remove(key) {
            None => Ok(None),
            Some(Value::Integer(n)) => match u64::try_from(n) {
                Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(self.invalid(path, format!("from {min} to {max}, not {n}"))),
            },
            Some(other) => {
                Err(self.invalid(path, format!("a whole number, not {}", other.type_str())))
            }
        }
    }

    /// Refuses a key of `table` that `known` does not name. Called before a table's keys are
    /// read (so a misspelt key is named as unknown, not as the required key it stands for),
    /// or after, on what is left of it.
    pub(super) fn no_other_keys(
        &self,
        table: &Table,
        path: &str,
        known: &[&str],
    ) -> Result<(), ConfigFileError> {
        match table.keys().find(|k| !known.contains(&k.as_str())) {
            None => Ok(()),
            Some(k) => Err(self.invalid(
                &format!("{path}.{k}"),
                format!("unknown key; the keys here are {}", known.join(", ")),
            )),
        }
    }
}

/// Parses the file's text (read from `origin`), taking relative paths from `base_dir`.
pub(super) fn parse(
    text: &str,
    origin: &str,
    base_dir: &Path,
) -> Result<SluiceConfig, ConfigFileError> {
    let keys = Keys { origin, base_dir };
    let mut root: Table =
        toml::from_str(text).map_err(|e| admission::config::syntax_error(origin, text, &e))?;

    let state_dir = keys.path(&mut root, "state_dir", "state_dir")?;
    let retry = retry(&keys, keys.table(&mut root, "retry", "retry")?)?;
    let audit = audit(&keys, keys.table(&mut root, "audit", "audit")?)?;
    let journal = journal(&keys, keys.table(&mut root, "journal", "journal")?)?;
    let transport = transport(&keys, keys.table(&mut root, "transport", "transport")?)?;
    let mut plugins = keys.table(&mut root, "plugins", "plugins")?;
    let plugin_call_deadline = keys
        .number(
            &mut plugins,
            "call_deadline_ms",
            "plugins.call_deadline_ms",
            1,
            60_000,
        )?
        .map(Duration::from_millis);
    keys.no_other_keys(&plugins, "plugins", &["call_deadline_ms"])?;

    let mut providers = BTreeMap::new();
    if let Some(Value::Table(all)) = root.get_mut("providers") {
        for (name, value) in all.iter_mut() {
            let Value::Table(table) = value else {
                continue; // admission names it below
            };
            providers.insert(name.clone(), provider(&keys, name, table)?);
        }
    }

    let serve = super::serve::parse(&keys, keys.table(&mut root, "serve", "serve")?)?;
    let budgets = super::budgets::parse(&keys, &mut root)?;
    let store = super::store::parse(&keys, &mut root)?;

    let admission = admission_part(origin, root)?;
    let mut config = SluiceConfig {
        state_dir,
        providers,
        admission,
        retry,
        audit,
        transport,
        plugin_call_deadline,
        serve,
        budgets,
        store,
        journal,
    };
    super::serve::reconcile(origin, &mut config)?;
    Ok(config)
}

/// Takes a provider's own keys out of its table, leaving admission's.
fn provider(
    keys: &Keys<'_>,
    name: &str,
    table: &mut Table,
) -> Result<ProviderSetup, ConfigFileError> {
    let at = |k: &str| format!("providers.{name}.{k}");
    let plugin = super::plugin::source(keys, name, table)?;
    let vectors = keys.path(table, "vectors", &at("vectors"))?;
    let plugin_limits = super::plugin::limits(keys, name, table)?;
    let reload = super::plugin::reload(keys, name, table, &plugin)?;
    let base_url = keys.string(table, "base_url", &at("base_url"))?;
    if let Some(url) = &base_url
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        return Err(keys.invalid(&at("base_url"), "an absolute http:// or https:// URL"));
    }
    let generations = super::generations::parse(keys, name, table)?;
    let mut credentials = BTreeMap::new();
    for (label, value) in keys.table(table, "credentials", &at("credentials"))? {
        let key = format!("providers.{name}.credentials.{label}");
        let source: CredentialSource = serde_path_to_error::deserialize(value).map_err(|e| {
            keys.invalid(
                &join(&key, &e.path().to_string()),
                one_line(&e.inner().to_string()),
            )
        })?;
        let mut source = source;
        source.file = source.file.map(|f| keys.base_dir.join(f));
        if source.env.is_some() == source.file.is_some() {
            return Err(keys.invalid(
                &key,
                "give exactly one of `env` (an environment variable) or `file` (a path)",
            ));
        }
        credentials.insert(label, source);
    }
    Ok(ProviderSetup {
        plugin,
        vectors,
        plugin_limits,
        reload,
        base_url,
        credentials,
        generations,
    })
}

/// The first line of a deserializer's message (the rest repeats the key).
fn one_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_owned()
}

/// `key.path`, or `key` when the error is at the table itself.
fn join(key: &str, path: &str) -> String {
    if path.is_empty() || path == "." {
        key.to_owned()
    } else {
        format!("{key}.{path}")
    }
}

/// The keys taken out of a table before admission reads what is left of it: an unknown key
/// there is answered with these too, so that the list of keys it names is whole.
fn taken_out(table: &str) -> &'static [&'static str] {
    let segments: Vec<&str> = table.split('.').collect();
    match segments[..] {
        [""] => &[
            "state_dir",
            "retry",
            "audit",
            "journal",
            "transport",
            "plugins",
            "serve",
            "budgets",
            "store",
        ],
        ["providers", _] => &[
            "plugin",
            "vectors",
            "plugin_limits",
            "reload",
            "base_url",
            "credentials",
            "generations",
            "prices",
        ],
        ["tiers", _] | ["tenants"] => &["budgets"],
        _ => &[],
    }
}

fn admission_part(origin: &str, root: Table) -> Result<admission::Config, ConfigFileError> {
    let config: admission::Config =
        serde_path_to_error::deserialize(Value::Table(root)).map_err(|e| {
            let mut message = one_line(&e.inner().to_string());
            if message.starts_with("unknown field") {
                let path = e.path().to_string();
                let table = path.rsplit_once('.').map_or("", |(t, _)| t);
                for key in taken_out(table) {
                    message.push_str(&format!(", `{key}`"));
                }
            }
            ConfigFileError::Invalid {
                origin: origin.to_owned(),
                key: e.path().to_string(),
                message,
            }
        })?;
    config.validate()?;
    Ok(config)
}

fn retry(keys: &Keys<'_>, table: Table) -> Result<RetryConfig, ConfigFileError> {
    RetryConfig::from_table(table).map_err(|e| {
        let message = e.to_string();
        let message = message.trim_start_matches("retry configuration: ");
        // "`classes.read.max_attempts`: at least 1": the key under `retry`.
        match message.strip_prefix('`').and_then(|m| m.split_once("`: ")) {
            Some((key, why)) => keys.invalid(&format!("retry.{key}"), one_line(why)),
            None => keys.invalid("retry", one_line(message)),
        }
    })
}

fn audit(keys: &Keys<'_>, mut table: Table) -> Result<AuditConfig, ConfigFileError> {
    let mut audit = AuditConfig::default();
    if let Some(n) = keys.number(
        &mut table,
        "checkpoint_every",
        "audit.checkpoint_every",
        1,
        1_000_000,
    )? {
        audit.checkpoint_every =
            NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
    }
    audit.retention = keys
        .number(
            &mut table,
            "retention_days",
            "audit.retention_days",
            1,
            MAX_RETENTION_DAYS,
        )?
        .map(|d| Duration::from_secs(d * 86_400));
    audit.key_file = keys.path(&mut table, "key_file", "audit.key_file")?;
    audit.witness = keys.path(&mut table, "witness", "audit.witness")?;
    keys.no_other_keys(
        &table,
        "audit",
        &["checkpoint_every", "retention_days", "key_file", "witness"],
    )?;
    Ok(audit)
}

fn journal(keys: &Keys<'_>, mut table: Table) -> Result<super::JournalConfig, ConfigFileError> {
    let mut journal = super::JournalConfig::default();
    if let Some(days) = keys.number(
        &mut table,
        "keep_answers_days",
        "journal.keep_answers_days",
        0,
        MAX_RETENTION_DAYS,
    )? {
        journal.keep_answers = Duration::from_secs(days * 86_400);
    }
    keys.no_other_keys(&table, "journal", &["keep_answers_days"])?;
    Ok(journal)
}

fn transport(keys: &Keys<'_>, mut table: Table) -> Result<TransportConfig, ConfigFileError> {
    let defaults = Timeouts::default();
    let mut ms = |key: &str, default: Duration| -> Result<Duration, ConfigFileError> {
        Ok(keys
            .number(
                &mut table,
                key,
                &format!("transport.{key}"),
                1,
                MAX_TIMEOUT_MS,
            )?
            .map_or(default, Duration::from_millis))
    };
    let timeouts = Timeouts {
        connect: ms("connect_timeout_ms", defaults.connect)?,
        first_byte: ms("first_byte_timeout_ms", defaults.first_byte)?,
        generation: ms("generation_timeout_ms", defaults.generation)?,
        idle: ms("idle_timeout_ms", defaults.idle)?,
    };
    let extra_roots = match table.remove("extra_roots") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) if !s.is_empty() => Ok(ExtraRoot::PemFile(keys.base_dir.join(s))),
                _ => Err(keys.invalid(
                    &format!("transport.extra_roots[{i}]"),
                    "the path of a PEM file",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(keys.invalid("transport.extra_roots", "a list of PEM files' paths")),
    };
    keys.no_other_keys(
        &table,
        "transport",
        &[
            "connect_timeout_ms",
            "first_byte_timeout_ms",
            "generation_timeout_ms",
            "idle_timeout_ms",
            "extra_roots",
        ],
    )?;
    Ok(TransportConfig {
        timeouts,
        extra_roots,
        ..TransportConfig::default()
    })
}
