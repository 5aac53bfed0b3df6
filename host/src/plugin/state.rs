//! What each plugin instance's store holds: a capability-free WASI context (its stdout and
//! stderr kept in memory, see `stdio.rs`), the resource limiter, and the sink for the
//! plugin's log messages.

use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, UpdateDeadline};
use wasmtime_wasi::{
    HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

use super::bindings::sluice::policy0_5_0::{log, types};
use super::bindings::v0_1::sluice::policy::{log as log_v0_1, types as types_v0_1};
use super::bindings::v0_2::sluice::policy::{log as log_v0_2, types as types_v0_2};
use super::bindings::v0_3::sluice::policy::{log as log_v0_3, types as types_v0_3};
use super::stdio::PluginStdio;

/// Per-instance state.
pub(crate) struct State {
    wasi: WasiCtx,
    stdio: PluginStdio,
    table: ResourceTable,
    max_memory: usize,
    max_table: usize,
    /// Set when the plugin asked for more memory than allowed: tells an out-of-memory
    /// abort apart from any other trap.
    pub(crate) memory_denied: bool,
    plugin: String,
    logged: usize,
    max_log: usize,
    deadline: Deadline,
}

/// How a call's deadline is enforced.
///
/// The epoch deadline measures wall time, but a call can be descheduled by the operating
/// system through no fault of its own (a busy machine, a host thread preempted in the
/// middle of lowering arguments). So when the wall-time deadline passes the first time, the
/// thread's CPU clock is noted and the call gets one more deadline; when it passes again, the
/// call is interrupted if it used at least half a deadline of CPU in between — it is running,
/// not waiting. A runaway plugin is therefore stopped within two deadlines (and two epoch
/// ticks, the deadline's granularity), a preempted one is not blamed, and after
/// [`Deadline::MAX_WINDOWS`] deadlines a call is stopped whatever its CPU use (so a loop on
/// a starved machine still ends).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    per_call: Duration,
    ticks: u64,
    cpu_mark: Option<Duration>,
    windows: u32,
}

impl Deadline {
    /// Deadlines after which a call is stopped even if it barely ran.
    pub(crate) const MAX_WINDOWS: u32 = 20;

    pub(crate) fn new(per_call: Duration, ticks: u64) -> Self {
        Self {
            per_call,
            ticks,
            cpu_mark: None,
            windows: 0,
        }
    }

    /// A call begins; its deadline counts `ticks` (the tick may have been shortened since
    /// the last call).
    fn reset(&mut self, ticks: u64) {
        self.ticks = ticks;
        self.cpu_mark = None;
        self.windows = 0;
    }

    fn passed(&mut self) -> UpdateDeadline {
        self.windows += 1;
        let Some(cpu) = thread_cpu_time() else {
            return UpdateDeadline::Interrupt;
        };
        match self.cpu_mark.replace(cpu) {
            Some(mark) if cpu.saturating_sub(mark) >= self.per_call / 2 => {
                UpdateDeadline::Interrupt
            }
            _ if self.windows >= Self::MAX_WINDOWS => UpdateDeadline::Interrupt,
            _ => UpdateDeadline::Continue(self.ticks),
        }
    }
}

/// CPU time the calling thread has used.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(Duration::new(
        u64::try_from(t.tv_sec).ok()?,
        u32::try_from(t.tv_nsec).ok()?,
    ))
}

/// Without a per-thread CPU clock, the wall-time deadline is final.
#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

impl State {
    pub(crate) fn new(
        plugin: &str,
        max_memory: usize,
        max_table: usize,
        max_log: usize,
        deadline: Deadline,
    ) -> Self {
        let stdio = PluginStdio::default();
        Self {
            wasi: capability_free_wasi(&stdio),
            stdio,
            table: ResourceTable::new(),
            max_memory,
            max_table,
            memory_denied: false,
            plugin: plugin.to_owned(),
            logged: 0,
            max_log,
            deadline,
        }
    }

    /// Called by the store each time the epoch deadline passes.
    pub(crate) fn deadline_passed(&mut self) -> UpdateDeadline {
        self.deadline.passed()
    }

    /// Called before each call, whose deadline counts `ticks`: per-call counters start
    /// over.
    pub(crate) fn begin_call(&mut self, ticks: u64) {
        self.logged = 0;
        self.memory_denied = false;
        self.deadline.reset(ticks);
    }

    /// Called after each call of `function`, however it ended: logs what the plugin wrote
    /// to its stdout and stderr during it.
    pub(crate) fn end_call(&self, function: &str) {
        self.stdio.log_call(&self.plugin, function);
    }

    pub(crate) fn set_plugin_name(&mut self, name: &str) {
        name.clone_into(&mut self.plugin);
    }
}

/// A WASI context that grants nothing: no files, no environment, no arguments, no sockets,
/// no stdin, clocks frozen at the Unix epoch and randomness fixed; stdout and stderr go to
/// `stdio`, in memory, to be logged after each call. A wasm32-wasip2 guest imports these
/// interfaces whether it uses them or not; this makes them inert, so a plugin stays a pure
/// function of what the host passes in.
fn capability_free_wasi(stdio: &PluginStdio) -> WasiCtx {
    sandbox_wasi()
        .stdout(stdio.stdout.clone())
        .stderr(stdio.stderr.clone())
        .build()
}

/// The plugin sandbox's WASI context, still open to additions: no sockets, no name lookups,
/// frozen clocks and fixed randomness, and (as every builder starts) no files, environment,
/// arguments or stdio. A plugin's test binary (`sluice plugin run-test`) adds its arguments
/// and output.
pub fn sandbox_wasi() -> WasiCtxBuilder {
    let mut builder = WasiCtx::builder();
    builder
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .wall_clock(FrozenClock)
        .monotonic_clock(FrozenClock)
        .secure_random(wasmtime_wasi::Deterministic::new(vec![0x5a]))
        .insecure_random(wasmtime_wasi::Deterministic::new(vec![0xa5]))
        .insecure_random_seed(0);
    builder
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

impl types_v0_1::Host for State {}

impl types_v0_2::Host for State {}

impl types_v0_3::Host for State {}

impl log::Host for State {
    fn log(&mut self, level: log::Level, message: String) {
        self.write_log(level, &message);
    }
}

/// A frozen version's `log`, into the current one's.
macro_rules! frozen_log {
    ($($version:ident),+) => {$(
        impl $version::Host for State {
            fn log(&mut self, level: $version::Level, message: String) {
                let level = match level {
                    $version::Level::Debug => log::Level::Debug,
                    $version::Level::Info => log::Level::Info,
                    $version::Level::Warn => log::Level::Warn,
                    $version::Level::Error => log::Level::Error,
                };
                self.write_log(level, &message);
            }
        }
    )+};
}

frozen_log!(log_v0_1, log_v0_2, log_v0_3);

impl State {
    /// A plugin's message into the host's log, within the per-call cap and truncated.
    fn write_log(&mut self, level: log::Level, message: &str) {
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Burns CPU on this thread until it has used `d` more.
    fn spin_cpu(d: Duration) {
        let start = thread_cpu_time().unwrap();
        while thread_cpu_time().unwrap() - start < d {
            std::hint::black_box(0u64);
        }
    }

    #[test]
    fn a_call_that_keeps_running_is_interrupted_at_the_second_deadline() {
        let mut d = Deadline::new(Duration::from_millis(4), 5);
        assert!(matches!(d.passed(), UpdateDeadline::Continue(5)));
        spin_cpu(Duration::from_millis(3));
        assert!(matches!(d.passed(), UpdateDeadline::Interrupt));
    }

    #[test]
    fn a_call_that_was_descheduled_is_not_blamed() {
        let mut d = Deadline::new(Duration::from_millis(4), 5);
        assert!(matches!(d.passed(), UpdateDeadline::Continue(5)));
        // Not running: sleeping uses no CPU, as a preempted thread doesn't.
        std::thread::sleep(Duration::from_millis(10));
        assert!(matches!(d.passed(), UpdateDeadline::Continue(5)));
    }

    #[test]
    fn a_starved_call_still_ends_after_the_last_window() {
        let mut d = Deadline::new(Duration::from_secs(3600), 5);
        for _ in 1..Deadline::MAX_WINDOWS {
            assert!(matches!(d.passed(), UpdateDeadline::Continue(5)));
        }
        assert!(matches!(d.passed(), UpdateDeadline::Interrupt));
        // The next call starts over, with the ticks of the tick then in force.
        d.reset(3);
        assert!(matches!(d.passed(), UpdateDeadline::Continue(3)));
    }
}
