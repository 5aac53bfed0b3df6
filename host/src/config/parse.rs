//! Splitting the file in two and reading each part with serde: the host's keys (its own
//! tables, and its keys inside the tables it shares with admission: a provider's plugin and
//! credentials, a tier's and the tenants' budgets) are taken out of the TOML table by name
//! and read into [`HostFile`]; what is left is admission's, read into
//! [`admission::Config`]. An unknown key is named with the keys of both parts, so that the
//! list an error gives is the table's whole list.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::{Table, Value};

use super::budgets::{BudgetsTable, PriceTable, TenantBudgets, TierBudgets};
use super::generations::GenerationTable;
use super::plugin::{LimitsTable, Reload};
use super::read::{NonEmpty, Reader, one_line, under};
use super::tables::{AuditTable, JournalTable, PluginsTable, TransportTable};
use super::telemetry::TelemetryTable;
use super::{ConfigFileError, ProviderSetup, SluiceConfig};
use crate::admission;
use crate::credentials::CredentialSource;
use crate::retry::RetryConfig;

/// The keys of the file's root that are the host's.
const ROOT_KEYS: &[&str] = &[
    "state_dir",
    "retry",
    "audit",
    "journal",
    "transport",
    "plugins",
    "serve",
    "budgets",
    "store",
    "telemetry",
];

/// The keys of `[providers.NAME]` that are the host's.
const PROVIDER_KEYS: &[&str] = &[
    "plugin",
    "vectors",
    "plugin_limits",
    "reload",
    "base_url",
    "credentials",
    "generations",
    "prices",
];

/// The keys of `[providers.NAME.credentials.LABEL]` that are admission's: the credential's
/// own limits.
const CREDENTIAL_LIMIT_KEYS: &[&str] = &["limits", "scopes", "models"];

/// The key of `[tiers.NAME]` and of `[tenants]` that is the host's.
const BUDGETS_KEYS: &[&str] = &["budgets"];

/// The host's part of the file, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct HostFile {
    state_dir: Option<NonEmpty>,
    retry: Table,
    audit: AuditTable,
    journal: JournalTable,
    transport: TransportTable,
    plugins: PluginsTable,
    /// The sidecar's: handed on as written (`SluiceConfig::from_toml_with`).
    serve: Option<Value>,
    budgets: BudgetsTable,
    /// A table, or the string `"memory"`: read by [`super::store`].
    store: Option<Value>,
    telemetry: Option<TelemetryTable>,
    providers: BTreeMap<String, ProviderTable>,
    tiers: BTreeMap<String, TierBudgets>,
    tenants: TenantBudgets,
}

/// A provider's keys that are the host's, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct ProviderTable {
    plugin: Option<NonEmpty>,
    vectors: Option<NonEmpty>,
    plugin_limits: LimitsTable,
    reload: Option<Reload>,
    base_url: Option<NonEmpty>,
    credentials: BTreeMap<String, CredentialSource>,
    generations: BTreeMap<String, GenerationTable>,
    prices: BTreeMap<String, PriceTable>,
}

/// Parses the file's text (read from `origin`), taking relative paths from `base_dir`.
pub(super) fn parse<T>(
    text: &str,
    origin: &str,
    base_dir: &std::path::Path,
    serve: impl FnOnce(&Reader<'_>, Option<Value>, &mut SluiceConfig) -> Result<T, ConfigFileError>,
) -> Result<(SluiceConfig, T), ConfigFileError> {
    let reader = Reader { origin, base_dir };
    let mut root: Table =
        toml::from_str(text).map_err(|e| admission::config::syntax_error(origin, text, &e))?;
    let mut file: HostFile = reader
        .read("", Value::Table(split_off_host(&mut root)))
        .map_err(with_limit_keys)?;
    let admission = admission_part(origin, root)?;

    let retry = retry(&reader, file.retry)?;
    let prices = file
        .providers
        .iter_mut()
        .map(|(name, p)| (name.clone(), std::mem::take(&mut p.prices)))
        .collect();
    let mut providers = BTreeMap::new();
    for (name, table) in file.providers {
        providers.insert(name.clone(), provider(&reader, &name, table)?);
    }
    let mut config = SluiceConfig {
        state_dir: file.state_dir.map(|d| reader.path(d)),
        providers,
        admission,
        retry,
        audit: file.audit.config(&reader),
        transport: file.transport.config(&reader),
        plugin_call_deadline: file.plugins.call_deadline(),
        budgets: file
            .budgets
            .config(&reader, file.tiers, file.tenants, prices)?,
        store: super::store::config(&reader, file.store)?,
        journal: file.journal.config(&reader)?,
        telemetry: TelemetryTable::config(file.telemetry, &reader)?,
    };
    let served = serve(&reader, file.serve, &mut config)?;
    pool_members(origin, &config)?;
    group_budgets(
        origin,
        config.store.as_ref().map(|s| s.hosts),
        config.journal.url.is_some(),
        &config.budgets,
    )?;
    Ok((config, served))
}

/// Refuses budgets in a group of `hosts` hosts that shares its quotas (`[store]`) but not a
/// journal (`shared_journal`): each host would count a tenant's use on its own, and the
/// group would let it use each budget once a host. `budgets.per_host = true` says the
/// operator wants exactly that. Checked when a file is read and when a host is built (an
/// embedder may give the store in code).
///
/// # Errors
/// [`ConfigFileError::Invalid`] naming `journal.url`.
pub(crate) fn group_budgets(
    origin: &str,
    hosts: Option<std::num::NonZeroU32>,
    shared_journal: bool,
    budgets: &crate::budget::BudgetConfig,
) -> Result<(), ConfigFileError> {
    let Some(hosts) = hosts else {
        return Ok(());
    };
    if shared_journal || !budgets.has_budgets() || budgets.per_host {
        return Ok(());
    }
    Err(ConfigFileError::Invalid {
        origin: origin.to_owned(),
        key: "journal.url".into(),
        message: format!(
            "missing: this host shares its quotas with a group of {hosts} hosts ([store]) but \
             keeps its journal to itself, so every host would count each tenant's budgets apart \
             and the group would let a tenant use up to {hosts} times each one. Give the group one \
             journal ([journal] url = \"postgres://...\"), or set [budgets] per_host = true \
             to count budgets on each host knowingly"
        ),
    })
}

/// Checks that every pool's members are credentials of its provider, when the file names
/// the provider's credentials (an embedder may give them in code instead).
fn pool_members(origin: &str, config: &SluiceConfig) -> Result<(), ConfigFileError> {
    for (provider, p) in &config.admission.providers {
        let Some(setup) = config.providers.get(provider) else {
            continue;
        };
        let labels = &setup.credentials;
        if let Some(name) = p.pools.keys().find(|n| labels.contains_key(*n)) {
            let at = format!("providers.{provider}.pools.{name}");
            return Err(admission::config::pools::same_name(&at, name).into());
        }
        let own = p.credentials.keys().filter(|l| !labels.contains_key(*l));
        let members = p.pools.iter().flat_map(|(name, pool)| {
            pool.members
                .iter()
                .map(move |m| (format!("pools.{name}.members"), m))
        });
        let own = own.map(|l| (format!("credentials.{l}"), l));
        for (key, label) in members.chain(own) {
            if labels.is_empty() || labels.contains_key(label) {
                continue;
            }
            let known: Vec<&str> = labels.keys().map(String::as_str).collect();
            return Err(ConfigFileError::Invalid {
                origin: origin.to_owned(),
                key: format!("providers.{provider}.{key}"),
                message: format!(
                    "`{label}` is not one of the provider's credentials ({}): add \
                     [providers.{provider}.credentials.{label}] with its `env` or `file`",
                    known.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// Takes the host's keys out of `root`, into a table of their own of the same shape.
fn split_off_host(root: &mut Table) -> Table {
    let mut host = take(root, ROOT_KEYS);
    if let Some(Value::Table(all)) = root.get_mut("providers") {
        let providers = all
            .iter_mut()
            .filter_map(|(name, value)| match value {
                Value::Table(t) => {
                    let mut host = take(t, PROVIDER_KEYS);
                    give_back_limits(&mut host, t);
                    Some((name.clone(), Value::Table(host)))
                }
                _ => None, // admission names it
            })
            .collect();
        host.insert("providers".into(), Value::Table(providers));
    }
    if let Some(Value::Table(all)) = root.get_mut("tiers") {
        let tiers = all
            .iter_mut()
            .filter_map(|(name, value)| match value {
                Value::Table(t) => Some((name.clone(), Value::Table(take(t, BUDGETS_KEYS)))),
                _ => None,
            })
            .collect();
        host.insert("tiers".into(), Value::Table(tiers));
    }
    if let Some(Value::Table(tenants)) = root.get_mut("tenants") {
        host.insert("tenants".into(), Value::Table(take(tenants, BUDGETS_KEYS)));
    }
    host
}

/// A credential's own limits are admission's: taken out of the host's `credentials` table
/// of a provider, into admission's `provider` table.
fn give_back_limits(host: &mut Table, provider: &mut Table) {
    let Some(Value::Table(credentials)) = host.get_mut("credentials") else {
        return;
    };
    let mut limits = Table::new();
    for (label, value) in credentials.iter_mut() {
        if let Value::Table(t) = value {
            let own = take(t, CREDENTIAL_LIMIT_KEYS);
            if !own.is_empty() {
                limits.insert(label.clone(), Value::Table(own));
            }
        }
    }
    // A credential given only its limits here (its secret given in code) is admission's.
    credentials.retain(|_, v| !matches!(v, Value::Table(t) if t.is_empty()));
    if !limits.is_empty() {
        provider.insert("credentials".into(), Value::Table(limits));
    }
}

/// An unknown key of a credential's table, named with the keys admission takes there too,
/// so that the list the error gives is the table's whole list.
fn with_limit_keys(e: ConfigFileError) -> ConfigFileError {
    match e {
        ConfigFileError::Invalid {
            origin,
            key,
            mut message,
        } if message.starts_with("unknown field")
            && matches!(
                key.split('.').collect::<Vec<_>>()[..],
                ["providers", _, "credentials", _, _]
            ) =>
        {
            for k in CREDENTIAL_LIMIT_KEYS {
                message.push_str(&format!(", `{k}`"));
            }
            ConfigFileError::Invalid {
                origin,
                key,
                message,
            }
        }
        other => other,
    }
}

/// The entries of `table` named in `keys`, taken out of it.
fn take(table: &mut Table, keys: &[&str]) -> Table {
    keys.iter()
        .filter_map(|k| table.remove(*k).map(|v| ((*k).to_owned(), v)))
        .collect()
}

/// A provider's setup from its table, at `providers.NAME`.
fn provider(
    reader: &Reader<'_>,
    name: &str,
    table: ProviderTable,
) -> Result<ProviderSetup, ConfigFileError> {
    let at = under("providers", name);
    let plugin = super::plugin::source(reader, name, table.plugin);
    let reload = super::plugin::reload(reader, &under(&at, "reload"), table.reload, &plugin)?;
    let base_url = table.base_url.map(NonEmpty::into_string);
    if let Some(url) = &base_url
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        return Err(reader.invalid(
            &under(&at, "base_url"),
            "an absolute http:// or https:// URL",
        ));
    }
    let mut credentials = BTreeMap::new();
    for (label, mut source) in table.credentials {
        source.file = source.file.map(|f| reader.base_dir.join(f));
        let key = under(&under(&at, "credentials"), &label);
        if let Some(sigv4) = source.sigv4.as_mut() {
            sigv4.file = sigv4.file.take().map(|f| reader.base_dir.join(f));
            if source.env.is_some() || source.file.is_some() || source.scheme.is_some() {
                return Err(reader.invalid(
                    &key,
                    "a SigV4 credential takes its keys from `sigv4` (its `file`, or AWS's \
                     variables): remove `env`, `file` and `scheme`",
                ));
            }
        } else if source.env.is_some() == source.file.is_some() {
            return Err(reader.invalid(
                &key,
                "give exactly one of `env` (an environment variable) or `file` (a path), or \
                 a `sigv4` table",
            ));
        }
        if let Some(url) = &source.base_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(reader.invalid(
                &under(&key, "base_url"),
                "an absolute http:// or https:// URL",
            ));
        }
        if let Some(path) = &source.path
            && !path.starts_with('/')
        {
            return Err(reader.invalid(
                &under(&key, "path"),
                "a path that starts with `/` (`{path}` stands for the call's path after its \
                 first segment)",
            ));
        }
        source.base_url = source.base_url.map(|u| u.trim_end_matches('/').to_owned());
        credentials.insert(label, source);
    }
    Ok(ProviderSetup {
        plugin,
        vectors: table.vectors.map(|v| reader.path(v)),
        plugin_limits: table.plugin_limits.limits(),
        reload,
        base_url,
        credentials,
        generations: super::generations::config(table.generations),
    })
}

/// The host's keys of `table` (a dotted key), which admission's list of an unknown key's
/// neighbours lacks.
fn taken_out(table: &str) -> &'static [&'static str] {
    let segments: Vec<&str> = table.split('.').collect();
    match segments[..] {
        [""] => ROOT_KEYS,
        ["providers", _] => PROVIDER_KEYS,
        ["tiers", _] | ["tenants"] => BUDGETS_KEYS,
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

fn retry(reader: &Reader<'_>, table: Table) -> Result<RetryConfig, ConfigFileError> {
    RetryConfig::from_table(table).map_err(|e| {
        let message = e.to_string();
        let message = message.trim_start_matches("retry configuration: ");
        // "`classes.read.max_attempts`: at least 1": the key under `retry`.
        match message.strip_prefix('`').and_then(|m| m.split_once("`: ")) {
            Some((key, why)) => reader.invalid(&format!("retry.{key}"), one_line(why)),
            None => reader.invalid("retry", one_line(message)),
        }
    })
}
