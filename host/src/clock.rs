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
}
