//! The epoch ticker: advances the engine's epoch every tick while plugin calls run, so a call
//! that runs past its deadline traps at the next check.
//!
//! How often it ticks: every half of the shortest call deadline among the runtime's and its
//! plugins' own limits, never more often than [`RuntimeConfig::epoch_tick`] — 2.5 ms with
//! the default 5 ms deadline. A deadline is enforced to within one tick, and each tick
//! wakes a thread: on a 2-vCPU virtual machine under load a wake-up cost about 20 µs of CPU,
//! so a fixed 1 ms tick cost a sidecar about 2% of a core for as long as calls ran (40 µs a
//! request at 500 requests a second; `docs/benchmarks/added-latency.md`, "The epoch tick")
//! and kept a 5 ms deadline no closer than it needed.
//!
//! Why it rests: a tick only matters to a call in progress. Once [`REST_AFTER_TICKS`] ticks
//! pass with no call running and none begun, the ticker parks, and the next call to begin
//! wakes it before the call enters the guest (one wake-up, paid by that call). Calls that
//! come steadily, closer than that, keep it ticking: waking it for each would cost more than
//! the ticks. Calls that come in bursts, as agents send them, let it rest between the
//! bursts: resting only after a second without a call, it woke 16 times in each 40 ms
//! between bursts that needed one or two ticks (`docs/benchmarks/added-latency.md`, "The
//! plain release build beside nginx").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::Engine;

use super::limits::RuntimeConfig;

/// How many ticks in a row without a call, running or begun, before the ticker rests.
pub(super) const REST_AFTER_TICKS: u32 = 2;

/// What the plugins of one runtime share with its ticker: how often it ticks, how many calls
/// run, and whether the ticker rests.
#[derive(Debug)]
pub(super) struct Ticking {
    /// The finest tick allowed ([`RuntimeConfig::epoch_tick`]).
    finest: Duration,
    /// The tick, in nanoseconds: only ever shortened, when a plugin with a shorter deadline
    /// is loaded.
    tick_ns: AtomicU64,
    running: AtomicUsize,
    /// Whether a call began since the ticker last looked.
    began: AtomicBool,
    resting: AtomicBool,
    /// The ticker's thread, to wake it; set once it starts.
    thread: std::sync::OnceLock<std::thread::Thread>,
    /// Tells the ticker to stop, or that the tick was shortened; set once it starts.
    tell: std::sync::OnceLock<mpsc::Sender<Word>>,
}

/// What the ticker is told between ticks.
#[derive(Debug)]
enum Word {
    /// The tick was shortened: wait for the new one, not what is left of the old.
    Shortened,
    /// The runtime is gone.
    Stop,
}

impl Ticking {
    /// Ticks for the runtime's limits: every half of its call deadline, at most every
    /// `epoch_tick`.
    pub(super) fn new(config: &RuntimeConfig) -> Self {
        let finest = config.epoch_tick.max(Duration::from_micros(1));
        Self {
            finest,
            tick_ns: AtomicU64::new(nanos(tick_for(config.call_deadline, finest))),
            running: AtomicUsize::new(0),
            began: AtomicBool::new(false),
            resting: AtomicBool::new(false),
            thread: std::sync::OnceLock::new(),
            tell: std::sync::OnceLock::new(),
        }
    }

    /// A plugin whose calls may run `deadline` is loaded: the tick is shortened to half of
    /// it if it was longer (never below the finest tick), and never lengthened again.
    pub(super) fn serve(&self, deadline: Duration) {
        let tick = nanos(tick_for(deadline, self.finest));
        let was = self.tick_ns.fetch_min(tick, Ordering::Relaxed);
        // A ticker waiting out a long tick would let a call of this plugin begun now run
        // that long unchecked. (A resting one reads the tick when a call wakes it.)
        if tick < was
            && let Some(tell) = self.tell.get()
        {
            let _ = tell.send(Word::Shortened);
        }
    }

    /// How long a tick is now.
    pub(super) fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_ns.load(Ordering::Relaxed))
    }

    /// A call begins: the ticker ticks until the returned guard is dropped. Call it before
    /// the call's deadline is set: a resting ticker is woken first.
    pub(super) fn begin(self: &Arc<Self>) -> Calling {
        // Sequentially consistent, as the ticker's store of `resting` and its load of
        // `running`: either this sees it resting and wakes it, or it sees this call.
        self.running.fetch_add(1, Ordering::SeqCst);
        self.began.store(true, Ordering::Relaxed);
        if self.resting.load(Ordering::SeqCst)
            && let Some(t) = self.thread.get()
        {
            t.unpark();
        }
        Calling(self.clone())
    }

    #[cfg(test)]
    fn is_resting(&self) -> bool {
        self.resting.load(Ordering::SeqCst)
    }
}

/// The tick a deadline of `deadline` needs: half of it, at least `finest`.
fn tick_for(deadline: Duration, finest: Duration) -> Duration {
    (deadline / 2).max(finest)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A call in progress ([`Ticking::begin`]).
#[derive(Debug)]
pub(super) struct Calling(Arc<Ticking>);

impl Drop for Calling {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The ticker's thread. Stops when dropped.
#[derive(Debug)]
pub(super) struct EpochTicker {
    tell: mpsc::Sender<Word>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Ticks `engine`'s epoch every [`Ticking::tick`] while `ticking` has calls, resting
    /// after `rest` ticks in a row without any.
    pub(super) fn start(engine: Engine, rest: u32, ticking: Arc<Ticking>) -> std::io::Result<Self> {
        let (tell, told) = mpsc::channel::<Word>();
        let shared = ticking.clone();
        let thread = std::thread::Builder::new()
            .name("sluice-epoch".into())
            .spawn(move || {
                let mut idle = 0_u32;
                loop {
                    let tick = shared.tick();
                    match told.recv_timeout(tick) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Ok(Word::Shortened) => continue,
                        Ok(Word::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                    engine.increment_epoch();
                    // Calls of a few microseconds are rarely running at a tick: a call
                    // begun since the last one counts as activity too.
                    let began = shared.began.swap(false, Ordering::Relaxed);
                    if began || shared.running.load(Ordering::SeqCst) > 0 {
                        idle = 0;
                        continue;
                    }
                    idle += 1;
                    if idle < rest {
                        continue;
                    }
                    shared.resting.store(true, Ordering::SeqCst);
                    if shared.running.load(Ordering::SeqCst) == 0 {
                        // Woken by a call's begin, or by the drop below (which said stop
                        // first, so the loop ends at its next look).
                        std::thread::park();
                    }
                    shared.resting.store(false, Ordering::SeqCst);
                    idle = 0;
                }
            })?;
        let _ = ticking.thread.set(thread.thread().clone());
        let _ = ticking.tell.set(tell.clone());
        Ok(Self {
            tell,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        let _ = self.tell.send(Word::Stop);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Limits whose deadline asks for 1 ms ticks.
    fn one_ms_ticks() -> RuntimeConfig {
        RuntimeConfig {
            call_deadline: Duration::from_millis(2),
            ..RuntimeConfig::default()
        }
    }

    /// A ticker of 1 ms ticks on an engine of its own, resting after `rest` idle ticks.
    fn ticker(rest: u32) -> (Arc<Ticking>, EpochTicker) {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        let ticking = Arc::new(Ticking::new(&one_ms_ticks()));
        assert_eq!(ticking.tick(), Duration::from_millis(1));
        let ticker = EpochTicker::start(engine, rest, ticking.clone()).unwrap();
        (ticking, ticker)
    }

    #[test]
    fn the_tick_is_half_the_shortest_deadline_and_never_below_the_finest() {
        let defaults = Ticking::new(&RuntimeConfig::default());
        assert_eq!(defaults.tick(), Duration::from_micros(2500));
        // A plugin with a shorter deadline of its own shortens it; a longer one does not
        // lengthen it again.
        defaults.serve(Duration::from_millis(3));
        assert_eq!(defaults.tick(), Duration::from_micros(1500));
        defaults.serve(Duration::from_millis(60_000));
        assert_eq!(defaults.tick(), Duration::from_micros(1500));
        // Never finer than `epoch_tick`.
        defaults.serve(Duration::from_millis(1));
        assert_eq!(defaults.tick(), Duration::from_millis(1));
        let coarse = Ticking::new(&RuntimeConfig {
            epoch_tick: Duration::from_millis(10),
            ..RuntimeConfig::default()
        });
        assert_eq!(coarse.tick(), Duration::from_millis(10));
    }

    fn until(what: &str, f: impl Fn() -> bool) {
        for _ in 0..2_000 {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("{what}: not within 2 s");
    }

    #[test]
    fn the_ticker_rests_without_calls_and_a_call_wakes_it() {
        let (ticking, ticker) = ticker(20);
        until("resting with no call", || ticking.is_resting());

        let call = ticking.begin();
        until("woken by the call", || !ticking.is_resting());
        // It does not rest while the call runs, however long.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!ticking.is_resting(), "rested under a running call");

        drop(call);
        until("resting again after the call", || ticking.is_resting());
        drop(ticker);
    }

    #[test]
    fn short_calls_in_a_steady_stream_keep_the_ticker_awake() {
        let (ticking, _ticker) = ticker(100);
        // A call of no length every 5 ms, for 500 ms: almost never running at a tick.
        for _ in 0..100 {
            drop(ticking.begin());
            assert!(!ticking.is_resting(), "rested between calls 5 ms apart");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn the_ticker_rests_between_bursts_of_calls() {
        let (ticking, _ticker) = ticker(REST_AFTER_TICKS);
        for _ in 0..5 {
            // A burst: twenty short calls at once, as twenty agents' requests arrive.
            for _ in 0..20 {
                drop(ticking.begin());
            }
            // Then 40 ms without a call: it rests within a few ticks of the last one.
            until("resting between bursts", || ticking.is_resting());
            std::thread::sleep(Duration::from_millis(40));
            assert!(ticking.is_resting(), "woken with no call");
        }
    }

    #[test]
    fn a_resting_ticker_stops_when_dropped() {
        let (ticking, ticker) = ticker(5);
        until("resting", || ticking.is_resting());
        // Joins the thread: a ticker that stayed parked would hang the test here.
        drop(ticker);
    }
}
