//! A plugin's own limits: what one provider's plugin may use, over the runtime's defaults.
//!
//! Every plugin of a process runs on one wasmtime `Engine`, but each call runs in a `Store`
//! of its plugin's, and a store carries its own memory and table limits, its own epoch
//! deadline and its own pool of warm instances. So these limits can differ per plugin: a
//! tight deadline for a small external plugin, more memory for one that parses large
//! bodies, while the others keep the defaults. What belongs to the engine (the epoch tick,
//! the wasm stack) stays the runtime's.

use std::time::Duration;

use super::limits::RuntimeConfig;

/// Limits of one plugin that differ from the runtime's ([`RuntimeConfig`]); `None` keeps
/// the runtime's. The `[providers.X.plugin_limits]` table of the configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginLimits {
    /// How long one call may run (`call_deadline_ms`).
    pub call_deadline: Option<Duration>,
    /// Linear memory one instance may grow to, in bytes (`max_memory_mib`).
    pub max_memory_bytes: Option<usize>,
    /// Table elements one instance may hold (`max_table_elements`).
    pub max_table_elements: Option<usize>,
    /// Warm instances kept between calls (`max_warm_instances`); 0: a fresh instance for
    /// every call, so the plugin keeps no state at all.
    pub max_warm_instances: Option<usize>,
    /// Calls one warm instance serves before it is replaced (`instance_max_calls`).
    pub instance_max_calls: Option<u64>,
}

impl PluginLimits {
    /// Whether every limit is the runtime's.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The limits a plugin runs under: `base` with these in place of its own.
    pub fn apply(&self, base: &RuntimeConfig) -> RuntimeConfig {
        let mut c = base.clone();
        if let Some(d) = self.call_deadline {
            c.call_deadline = d;
        }
        if let Some(m) = self.max_memory_bytes {
            c.max_memory_bytes = m;
        }
        if let Some(t) = self.max_table_elements {
            c.max_table_elements = t;
        }
        if let Some(w) = self.max_warm_instances {
            c.max_warm_instances = w;
            c.reuse_instances = base.reuse_instances && w > 0;
        }
        if let Some(n) = self.instance_max_calls {
            c.instance_max_calls = n;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_limits_keep_the_runtime_s_and_set_ones_replace_them() {
        let base = RuntimeConfig::default();
        let same = PluginLimits::default().apply(&base);
        assert_eq!(same.call_deadline, base.call_deadline);
        assert_eq!(same.max_memory_bytes, base.max_memory_bytes);
        let own = PluginLimits {
            call_deadline: Some(Duration::from_millis(2)),
            max_memory_bytes: Some(4 << 20),
            max_warm_instances: Some(0),
            ..PluginLimits::default()
        }
        .apply(&base);
        assert_eq!(own.call_deadline, Duration::from_millis(2));
        assert_eq!(own.max_memory_bytes, 4 << 20);
        assert!(
            !own.reuse_instances,
            "no warm instance: a fresh one per call"
        );
        assert_eq!(own.max_table_elements, base.max_table_elements);
        assert_eq!(
            own.epoch_tick, base.epoch_tick,
            "the engine's tick is shared"
        );
    }
}
