//! The epoch ticker: advances the engine's epoch every tick while plugin calls run, so a call
//! that runs past its deadline traps at the next check.
//!
//! Why it rests: a tick only matters to a call in progress, and a host that makes no call
//! for a while (a sidecar at night, an embedder between batches) would otherwise wake a
//! thread a thousand times a second for nothing. So once no call has begun for
//! [`REST_AFTER`], the ticker parks, and the next call to begin wakes it before the call
//! enters the guest. It does not park between the calls of a steady load: parking and
//! waking at every call would cost each call a wake-up of another thread, more than the
//! ticks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::Engine;

/// How long without a call beginning before the ticker rests.
pub(super) const REST_AFTER: Duration = Duration::from_secs(1);

/// What the plugins of one runtime share with its ticker: how many calls run, and whether
/// the ticker rests.
#[derive(Debug, Default)]
pub(super) struct Ticking {
    running: AtomicUsize,
    /// Whether a call began since the ticker last looked.
    began: AtomicBool,
    resting: AtomicBool,
    /// The ticker's thread, to wake it; set once it starts.
    thread: std::sync::OnceLock<std::thread::Thread>,
}

impl Ticking {
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
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Ticks `engine`'s epoch every `tick` while `ticking` has calls, resting after `rest`
    /// without any.
    pub(super) fn start(
        engine: Engine,
        tick: Duration,
        rest: Duration,
        ticking: Arc<Ticking>,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let idle_ticks = rest.as_nanos().div_ceil(tick.as_nanos().max(1)).max(1);
        let shared = ticking.clone();
        let thread = std::thread::Builder::new()
            .name("sluice-epoch".into())
            .spawn(move || {
                let mut idle = 0u128;
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    engine.increment_epoch();
                    // Calls of a few microseconds are rarely running at a tick: a call
                    // begun since the last one counts as activity too.
                    let began = shared.began.swap(false, Ordering::Relaxed);
                    if began || shared.running.load(Ordering::SeqCst) > 0 {
                        idle = 0;
                        continue;
                    }
                    idle += 1;
                    if idle < idle_ticks {
                        continue;
                    }
                    shared.resting.store(true, Ordering::SeqCst);
                    if shared.running.load(Ordering::SeqCst) == 0 {
                        // Woken by a call's begin, or by the drop below (then the channel
                        // is closed, and the loop ends at its next look).
                        std::thread::park();
                    }
                    shared.resting.store(false, Ordering::SeqCst);
                    idle = 0;
                }
            })?;
        let _ = ticking.thread.set(thread.thread().clone());
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ticker of 1 ms ticks on an engine of its own, resting after `rest_ms`.
    fn ticker(rest_ms: u64) -> (Arc<Ticking>, EpochTicker) {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        let ticking = Arc::new(Ticking::default());
        let ticker = EpochTicker::start(
            engine,
            Duration::from_millis(1),
            Duration::from_millis(rest_ms),
            ticking.clone(),
        )
        .unwrap();
        (ticking, ticker)
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
    fn a_resting_ticker_stops_when_dropped() {
        let (ticking, ticker) = ticker(5);
        until("resting", || ticking.is_resting());
        // Joins the thread: a ticker that stayed parked would hang the test here.
        drop(ticker);
    }
}
