//! A provider's plugin keys: where its plugin comes from, what reloads it, and its own
//! limits (`[providers.X.plugin_limits]`).

use serde::Deserialize;

use super::read::{NonEmpty, Ranged, Reader};
use super::{ConfigFileError, PluginSource, ReloadTrigger};
use crate::plugin::PluginLimits;

/// The most memory a plugin may be given, in MiB: 4 GiB, all a 32-bit wasm memory holds.
pub const MAX_PLUGIN_MEMORY_MIB: u64 = 4096;

/// `[providers.X.plugin_limits]`, each key in its range.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct LimitsTable {
    call_deadline_ms: Option<Ranged<1, 60_000>>,
    max_memory_mib: Option<Ranged<1, MAX_PLUGIN_MEMORY_MIB>>,
    max_table_elements: Option<Ranged<1, 1_000_000>>,
    max_warm_instances: Option<Ranged<0, 1024>>,
    instance_max_calls: Option<Ranged<1, 1_000_000_000>>,
}

impl LimitsTable {
    pub(super) fn limits(&self) -> PluginLimits {
        PluginLimits {
            call_deadline: self.call_deadline_ms.map(Ranged::ms),
            max_memory_bytes: self
                .max_memory_mib
                .map(|mib| usize::try_from(mib.get() << 20).unwrap_or(usize::MAX)),
            max_table_elements: self.max_table_elements.map(Ranged::usize),
            max_warm_instances: self.max_warm_instances.map(Ranged::usize),
            instance_max_calls: self.instance_max_calls.map(Ranged::get),
        }
    }
}

/// `reload` as written.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Reload {
    Manual,
    Watch,
}

/// `plugin`: a bundled plugin's name (the provider's own name when unset), or the path of a
/// `.wasm` file (anything ending in `.wasm` or holding a `/`), taken from the file's
/// directory.
pub(super) fn source(reader: &Reader<'_>, name: &str, given: Option<NonEmpty>) -> PluginSource {
    match given.map(NonEmpty::into_string) {
        None => PluginSource::Bundled(name.to_owned()),
        Some(p) if p.ends_with(".wasm") || p.contains('/') => {
            PluginSource::File(reader.base_dir.join(p))
        }
        Some(p) => PluginSource::Bundled(p),
    }
}

/// `reload` (at the key `at`): `"manual"` (the default) or `"watch"`, which needs a plugin
/// file to watch.
pub(super) fn reload(
    reader: &Reader<'_>,
    at: &str,
    given: Option<Reload>,
    source: &PluginSource,
) -> Result<ReloadTrigger, ConfigFileError> {
    match given {
        None | Some(Reload::Manual) => Ok(ReloadTrigger::Manual),
        Some(Reload::Watch) if matches!(source, PluginSource::File(_)) => Ok(ReloadTrigger::Watch),
        Some(Reload::Watch) => Err(reader.invalid(
            at,
            "\"watch\" watches a plugin file: set `plugin` to the path of a .wasm file, or \
             leave `reload` unset",
        )),
    }
}
