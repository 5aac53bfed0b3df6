//! How much a plugin may use, per call and per instance. Plugins are untrusted code: every
//! resource they can take is bounded here, and every value they hand back is capped (see
//! `validate.rs`).

use std::time::Duration;

/// The largest plugin file (`.wasm`) loaded, in bytes: 64 MiB. The bundled plugins are
/// about 350 KiB each and a debug build a few MiB; a file past this is not a plugin anyone
/// built (nor is `/dev/zero`), and compiling it would cost many times its size.
pub const MAX_PLUGIN_BYTES: u64 = 64 << 20;

/// Limits and tuning of the plugin runtime.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// How long one plugin call may run. Default: 5 ms. A call still running when it passes
    /// is given one more such window; if it used at least half of it on the CPU, it is
    /// interrupted (a call the OS merely descheduled is not blamed; see `state.rs`). Enforced
    /// to within one epoch tick.
    pub call_deadline: Duration,
    /// The finest epoch tick. The engine's epoch ticks every half of the shortest call
    /// deadline (the runtime's, or a loaded plugin's own), but never more often than this,
    /// since each tick wakes a thread. Default: 1 ms; with the default deadline the tick is
    /// 2.5 ms. The thread that ticks rests once two ticks pass with no call running or
    /// begun, and the next call wakes it.
    pub epoch_tick: Duration,
    /// Linear memory one plugin instance may grow to. Default: 16 MiB.
    pub max_memory_bytes: usize,
    /// Table elements one plugin instance may hold. Default: 10 000.
    pub max_table_elements: usize,
    /// Wasm stack one call may use before it traps. Default: 512 KiB.
    pub max_wasm_stack: usize,
    /// Caps on every string and list a plugin returns.
    pub caps: Caps,
    /// Keep instances warm between calls (the default). When false, every call gets a
    /// fresh instance: slower, and a plugin can keep no state at all between calls.
    pub reuse_instances: bool,
    /// Warm instances kept per plugin. Default: 8.
    pub max_warm_instances: usize,
    /// Calls served by one warm instance before it is replaced, so state a plugin leaks
    /// (memory growth, caches) cannot pile up. Default: 10 000.
    pub instance_max_calls: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            call_deadline: Duration::from_millis(5),
            epoch_tick: Duration::from_millis(1),
            max_memory_bytes: 16 << 20,
            max_table_elements: 10_000,
            max_wasm_stack: 512 << 10,
            caps: Caps::default(),
            reuse_instances: true,
            max_warm_instances: 8,
            instance_max_calls: 10_000,
        }
    }
}

impl RuntimeConfig {
    /// The most epoch ticks a deadline may count: the engine adds a deadline to its current
    /// epoch (and instantiation gets ten), so a deadline near `u64::MAX` would wrap around to
    /// one already past. At one tick a millisecond this is still over a million years.
    const MAX_DEADLINE_TICKS: u64 = 1 << 45;

    /// The deadline in epoch ticks of `tick` (at least one, plus one for the tick in
    /// progress, at most [`Self::MAX_DEADLINE_TICKS`]).
    pub(crate) fn deadline_ticks(&self, tick: Duration) -> u64 {
        let tick = tick.as_nanos().max(1);
        let ticks = self.call_deadline.as_nanos().div_ceil(tick);
        u64::try_from(ticks)
            .unwrap_or(u64::MAX)
            .saturating_add(1)
            .min(Self::MAX_DEADLINE_TICKS)
    }
}

/// Caps on data lifted from a plugin. A value over a cap makes the call fail as invalid
/// output; the host then answers with its built-in policy.
#[derive(Debug, Clone)]
pub struct Caps {
    /// Longest string (error code, source, reason, URL...), in bytes. Default: 2048.
    pub max_string_bytes: usize,
    /// Longest name of a tenant or a quota scope (in a plan or an observation), in bytes.
    /// Default: 256.
    pub max_name_bytes: usize,
    /// Most entries in a list (observations, costs, usage, hosts, headers). Default: 64.
    pub max_list_len: usize,
    /// Most scopes one request plan may name. Default: 16.
    pub max_scopes: usize,
    /// Longest status-query body, in bytes. Default: 64 KiB.
    pub max_body_bytes: usize,
    /// Longest delay a plugin may ask for before a retry (`retry-after-ms`), in
    /// milliseconds. Default: one day. A call is not kept waiting longer for a retry; a
    /// quota spent for longer is a `quota-exhausted` verdict and an observation's reset.
    pub max_delay_ms: u64,
    /// Longest quota window (`window-ms`) and time until a quota resets (`reset-after-ms`)
    /// an observation may report, in milliseconds. Default: 31 days, so a monthly quota can
    /// be stated as one.
    pub max_window_ms: u64,
    /// Largest quota figure, cost or usage amount. Default: 10^12.
    pub max_amount: u64,
    /// Log messages kept per call; more are dropped. Default: 16.
    pub max_log_messages: usize,
}

impl Default for Caps {
    fn default() -> Self {
        // The contract's caps, which the SDK fits every answer to before it leaves a plugin.
        use sluice_contract::caps;
        Self {
            max_string_bytes: caps::MAX_STRING_BYTES,
            max_name_bytes: caps::MAX_NAME_BYTES,
            max_list_len: caps::MAX_LIST_LEN,
            max_scopes: caps::MAX_SCOPES,
            max_body_bytes: caps::MAX_BODY_BYTES,
            max_delay_ms: caps::MAX_DELAY_MS,
            max_window_ms: caps::MAX_WINDOW_MS,
            max_amount: caps::MAX_AMOUNT,
            max_log_messages: caps::MAX_LOG_MESSAGES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_rounds_up_and_adds_the_tick_in_progress() {
        let ms = Duration::from_millis(1);
        let c = RuntimeConfig::default();
        assert_eq!(c.deadline_ticks(ms), 6);
        assert_eq!(c.deadline_ticks(Duration::from_micros(2500)), 3);
        let c = RuntimeConfig {
            call_deadline: Duration::from_micros(1500),
            ..RuntimeConfig::default()
        };
        assert_eq!(c.deadline_ticks(ms), 3);
    }

    #[test]
    fn a_deadline_too_long_to_count_is_capped_far_from_wrapping() {
        let c = RuntimeConfig {
            call_deadline: Duration::MAX,
            ..RuntimeConfig::default()
        };
        let ms = Duration::from_millis(1);
        assert_eq!(c.deadline_ticks(ms), RuntimeConfig::MAX_DEADLINE_TICKS);
        // Instantiation's ten deadlines, added to an epoch of centuries, still fit.
        let centuries_of_ticks: u64 = 1 << 40;
        assert!(
            (c.deadline_ticks(ms) * 10)
                .checked_add(centuries_of_ticks)
                .is_some()
        );
    }
}
