//! Time, injected. Host logic never reads the system clock directly: it asks a [`Clock`], so
//! tests and the demo run on virtual time that they advance by hand.

use std::fmt::Debug;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of time: a monotonic instant for durations and a wall clock for plugins and
/// provider dates.
pub trait Clock: Send + Sync + Debug {
    /// The monotonic now, for measuring durations and deadlines.
    fn now(&self) -> Instant;
    /// The wall clock in milliseconds since the Unix epoch (UTC), as handed to plugins.
    fn wall_ms(&self) -> i64;
}

/// The real clocks of the machine.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(
        clippy::disallowed_methods,
        reason = "the one place that reads the real clock"
    )]
    fn now(&self) -> Instant {
        Instant::now()
    }

    #[allow(
        clippy::disallowed_methods,
        reason = "the one place that reads the real clock"
    )]
    fn wall_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// The clock tokio's timers run on: the machine's monotonic clock, or tokio's paused clock in
/// tests (`#[tokio::test(start_paused = true)]`), which moves only as timers fire. Code that
/// sleeps on tokio timers until instants it computes from a [`Clock`] (the admission handle,
/// `crate::admission::Admission`) needs this one, so that both agree on what time it is.
/// Its wall clock is the machine's.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        tokio_now().into_std()
    }

    fn wall_ms(&self) -> i64 {
        SystemClock.wall_ms()
    }
}

/// Tokio's clock with a wall clock that starts where it is told and moves with tokio's
/// clock: a host on a paused test runtime (or the demo) lives through a given date — the
/// last hour of a month — in virtual time. Calendar budgets ([`crate::budget`]) read it.
#[derive(Debug, Clone, Copy)]
pub struct TokioWallClock {
    start: tokio::time::Instant,
    wall_start_ms: i64,
}

impl TokioWallClock {
    /// A clock whose wall time is `wall_ms` (milliseconds since the Unix epoch) now.
    pub fn starting_at(wall_ms: i64) -> Self {
        Self {
            start: tokio_now(),
            wall_start_ms: wall_ms,
        }
    }
}

impl Clock for TokioWallClock {
    fn now(&self) -> Instant {
        tokio_now().into_std()
    }

    fn wall_ms(&self) -> i64 {
        let since = tokio_now().saturating_duration_since(self.start);
        let ms = i64::try_from(since.as_millis()).unwrap_or(i64::MAX);
        self.wall_start_ms.saturating_add(ms)
    }
}

/// Tokio's now: the machine's monotonic clock, or tokio's paused clock in tests. For code that
/// measures tokio timers (tests of timing); host logic takes a [`Clock`] instead.
#[allow(
    clippy::disallowed_methods,
    reason = "the one place that reads tokio's clock"
)]
pub fn tokio_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// A clock that moves only when told to: for tests and virtual-time runs.
#[derive(Debug)]
pub struct ManualClock {
    base: Instant,
    wall_base_ms: i64,
    elapsed: Mutex<Duration>,
}

impl ManualClock {
    /// A clock whose wall time starts at `wall_ms` (milliseconds since the Unix epoch).
    #[allow(clippy::disallowed_methods, reason = "an anchor for virtual instants")]
    pub fn starting_at(wall_ms: i64) -> Self {
        Self {
            base: Instant::now(),
            wall_base_ms: wall_ms,
            elapsed: Mutex::new(Duration::ZERO),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut e = self.elapsed.lock().unwrap_or_else(|p| p.into_inner());
        *e += by;
    }

    fn elapsed(&self) -> Duration {
        *self.elapsed.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.base + self.elapsed()
    }

    fn wall_ms(&self) -> i64 {
        let ms = i64::try_from(self.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.wall_base_ms.saturating_add(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let c = ManualClock::starting_at(1_000);
        let t0 = c.now();
        assert_eq!(c.wall_ms(), 1_000);
        c.advance(Duration::from_millis(250));
        assert_eq!(c.wall_ms(), 1_250);
        assert_eq!(c.now() - t0, Duration::from_millis(250));
    }

    #[tokio::test(start_paused = true)]
    async fn a_tokio_wall_clock_moves_its_date_with_tokio_paused_time() {
        let c = TokioWallClock::starting_at(1_000);
        let t0 = c.now();
        tokio::time::sleep(Duration::from_secs(3_600)).await;
        assert_eq!(c.wall_ms(), 1_000 + 3_600_000);
        assert_eq!(c.now() - t0, Duration::from_secs(3_600));
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_tokio_paused_time() {
        let t0 = TokioClock.now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(TokioClock.now() - t0, Duration::from_secs(3));
    }
}
