//! Full-jitter exponential backoff: `delay = uniform(0, min(cap, base × 2^n))`.
//!
//! Why full jitter: clients that failed together and back off by the same schedule retry
//! together, as one wave that fails together again. Drawing the whole delay at random spreads
//! them over the window. The random source is a parameter so tests can seed it. Backoff is
//! not rate limiting: the scope's pace is the admission queue's business; this only spaces
//! one call's attempts.

use std::time::Duration;

/// The backoff's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first window.
    pub base: Duration,
    /// The largest window.
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// The window before retry number `retry` (0 for the first retry).
    pub fn window(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// A delay drawn uniformly from the window before retry number `retry`.
    pub fn delay(&self, retry: u32, rng: &mut fastrand::Rng) -> Duration {
        let window = u64::try_from(self.window(retry).as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.u64(0..=window))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_double_up_to_the_cap() {
        let b = Backoff::default();
        let w: Vec<u64> = (0..8).map(|n| b.window(n).as_millis() as u64).collect();
        assert_eq!(w, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
        assert_eq!(b.window(u32::MAX), b.cap);
    }

    #[test]
    fn delays_fill_the_window_evenly() {
        let b = Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        };
        let mut rng = fastrand::Rng::with_seed(7);
        let delays: Vec<f64> = (0..10_000)
            .map(|_| b.delay(2, &mut rng).as_secs_f64())
            .collect();
        assert!(delays.iter().all(|d| (0.0..=4.0).contains(d)));
        // Ten bins over the 4 s window each hold about a tenth.
        let mut bins = [0usize; 10];
        for d in &delays {
            bins[((d / 0.4) as usize).min(9)] += 1;
        }
        for (i, n) in bins.iter().enumerate() {
            assert!((850..=1_150).contains(n), "bin {i}: {n} of 10 000");
        }
        let mean = delays.iter().sum::<f64>() / delays.len() as f64;
        assert!((1.9..=2.1).contains(&mean), "mean {mean}");
    }

    #[test]
    fn the_same_seed_gives_the_same_delays() {
        let b = Backoff::default();
        let a: Vec<_> = {
            let mut r = fastrand::Rng::with_seed(1);
            (0..5).map(|n| b.delay(n, &mut r)).collect()
        };
        let c: Vec<_> = {
            let mut r = fastrand::Rng::with_seed(1);
            (0..5).map(|n| b.delay(n, &mut r)).collect()
        };
        assert_eq!(a, c);
    }
}
