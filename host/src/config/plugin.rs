//! A provider's plugin keys: where its plugin comes from, the vectors it must pass before
//! it serves, and its own limits (`[providers.X.plugin_limits]`).

use std::time::Duration;

use toml::Table;

use super::parse::Keys;
use super::{ConfigFileError, PluginSource, ReloadTrigger};
use crate::plugin::PluginLimits;

/// The keys of `[providers.X.plugin_limits]`.
pub(super) const LIMIT_KEYS: &[&str] = &[
    "call_deadline_ms",
    "max_memory_mib",
    "max_table_elements",
    "max_warm_instances",
    "instance_max_calls",
];

/// The most memory a plugin may be given, in MiB: 4 GiB, all a 32-bit wasm memory holds.
pub const MAX_PLUGIN_MEMORY_MIB: u64 = 4096;

/// `plugin`: a bundled plugin's name (the provider's own name when unset), or the path of a
/// `.wasm` file (anything ending in `.wasm` or holding a `/`), taken from the file's
/// directory.
pub(super) fn source(
    keys: &Keys<'_>,
    name: &str,
    table: &mut Table,
) -> Result<PluginSource, ConfigFileError> {
    Ok(
        match keys.string(table, "plugin", &format!("providers.{name}.plugin"))? {
            None => PluginSource::Bundled(name.to_owned()),
            Some(p) if p.ends_with(".wasm") || p.contains('/') => {
                PluginSource::File(keys.base_dir.join(p))
            }
            Some(p) => PluginSource::Bundled(p),
        },
    )
}

/// `reload`: `"manual"` (the default) or `"watch"`, which needs a plugin file to watch.
pub(super) fn reload(
    keys: &Keys<'_>,
    name: &str,
    table: &mut Table,
    source: &PluginSource,
) -> Result<ReloadTrigger, ConfigFileError> {
    let at = format!("providers.{name}.reload");
    match keys.string(table, "reload", &at)?.as_deref() {
        None | Some("manual") => Ok(ReloadTrigger::Manual),
        Some("watch") if matches!(source, PluginSource::File(_)) => Ok(ReloadTrigger::Watch),
        Some("watch") => Err(keys.invalid(
            &at,
            "\"watch\" watches a plugin file: set `plugin` to the path of a .wasm file, or \
             leave `reload` unset",
        )),
        Some(_) => Err(keys.invalid(&at, "\"manual\" or \"watch\"")),
    }
}

/// `[providers.X.plugin_limits]`, each key in its range.
pub(super) fn limits(
    keys: &Keys<'_>,
    name: &str,
    table: &mut Table,
) -> Result<PluginLimits, ConfigFileError> {
    let at = format!("providers.{name}.plugin_limits");
    let mut t = keys.table(table, "plugin_limits", &at)?;
    let key = |k: &str| format!("{at}.{k}");
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let limits = PluginLimits {
        call_deadline: keys
            .number(
                &mut t,
                "call_deadline_ms",
                &key("call_deadline_ms"),
                1,
                60_000,
            )?
            .map(Duration::from_millis),
        max_memory_bytes: keys
            .number(
                &mut t,
                "max_memory_mib",
                &key("max_memory_mib"),
                1,
                MAX_PLUGIN_MEMORY_MIB,
            )?
            .map(|mib| size(mib << 20)),
        max_table_elements: keys
            .number(
                &mut t,
                "max_table_elements",
                &key("max_table_elements"),
                1,
                1_000_000,
            )?
            .map(size),
        max_warm_instances: keys
            .number(
                &mut t,
                "max_warm_instances",
                &key("max_warm_instances"),
                0,
                1024,
            )?
            .map(size),
        instance_max_calls: keys.number(
            &mut t,
            "instance_max_calls",
            &key("instance_max_calls"),
            1,
            1_000_000_000,
        )?,
    };
    keys.no_other_keys(&t, &at, LIMIT_KEYS)?;
    Ok(limits)
}
