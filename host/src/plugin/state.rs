//! What each plugin instance's store holds: a capability-free WASI context, the resource
//! limiter, and the sink for the plugin's log messages.

use std::time::Duration;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use super::bindings::sluice::policy::{log, types};

/// Per-instance state.
pub(crate) struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    max_memory: usize,
    max_table: usize,
    /// Set when the plugin asked for more memory than allowed: tells an out-of-memory
    /// abort apart from any other trap.
    pub(crate) memory_denied: bool,
    plugin: String,
    logged: usize,
    max_log: usize,
}

impl State {
    pub(crate) fn new(plugin: &str, max_memory: usize, max_table: usize, max_log: usize) -> Self {
        Self {
            wasi: capability_free_wasi(),
            table: ResourceTable::new(),
            max_memory,
            max_table,
            memory_denied: false,
            plugin: plugin.to_owned(),
            logged: 0,
            max_log,
        }
    }

    /// Called before each call: per-call counters start over.
    pub(crate) fn begin_call(&mut self) {
        self.logged = 0;
        self.memory_denied = false;
    }

    pub(crate) fn set_plugin_name(&mut self, name: &str) {
        name.clone_into(&mut self.plugin);
    }
}

/// A WASI context that grants nothing: no files, no environment, no arguments, no sockets,
/// stdio discarded, clocks frozen at the Unix epoch and randomness fixed. A wasm32-wasip2
/// guest imports these interfaces whether it uses them or not; this makes them inert, so a
/// plugin stays a pure function of what the host passes in.
fn capability_free_wasi() -> WasiCtx {
    WasiCtx::builder()
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .wall_clock(FrozenClock)
        .monotonic_clock(FrozenClock)
        .secure_random(wasmtime_wasi::Deterministic::new(vec![0x5a]))
        .insecure_random(wasmtime_wasi::Deterministic::new(vec![0xa5]))
        .insecure_random_seed(0)
        .build()
}

/// A clock that never moves. Plugins get time only through `now-ms`.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl ResourceLimiter for State {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = desired <= self.max_memory;
        self.memory_denied |= !ok;
        Ok(ok)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= self.max_table)
    }
}

impl types::Host for State {}

impl log::Host for State {
    fn log(&mut self, level: log::Level, message: String) {
        self.logged += 1;
        if self.logged > self.max_log {
            return;
        }
        let message: String = message.chars().take(512).collect();
        let plugin = self.plugin.as_str();
        match level {
            log::Level::Debug => tracing::debug!(plugin, "{message}"),
            log::Level::Info => tracing::info!(plugin, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, "{message}"),
            log::Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}
