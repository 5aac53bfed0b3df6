//! One quota dimension as a GCRA bucket (the generic cell rate algorithm), on the
//! scheduler's clock.
//!
//! Why GCRA: it keeps one number per bucket (the *theoretical arrival time*, `tat`), needs no
//! timer to refill, tells a denied request exactly how long to wait, and bounds what it admits
//! in **every** window, not just in fixed ones: in any interval of length `t` it admits at
//! most `burst + t / interval` units.
//!
//! Why the burst is the margin: a provider that allows `limit` per `window` is paced at
//! `paced = margin × limit` (90% by default), one unit every `window / paced`, and the burst
//! is the rest, `limit − paced + 1`. A window of length `window` then admits at most the burst
//! plus `paced − 1` paced units, `limit` in all, so the bucket can never by itself push the
//! provider over its limit, while a quiet scope can still send a small burst at once.
//!
//! Why a provider that refills continuously gets the whole pace as its burst
//! ([`Refill::Continuous`]): near the limit the burst above is small (2% of the limit at a
//! margin of 0.98), smaller than one large request, and such a request then waits for an
//! idle stretch that a busy scope never has — use collapses as the margin rises. A provider
//! whose quota is a token bucket (capacity `limit`, refilled at `limit / window`) refuses
//! nothing a bucket of capacity `paced` refilled at `paced / window` admits: the provider's
//! holds at least as much at every instant, since it starts fuller, refills faster, caps
//! higher and loses the same charges. So the burst can be the whole pace, and use rises with
//! the margin up to the limit.

use std::num::NonZeroU64;
use std::time::Duration;

pub use super::limits::Refill;

/// A point on the scheduler's clock: nanoseconds since its origin.
pub type Nanos = u64;

/// Why a quota cannot become a bucket.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QuotaError {
    /// The window is zero or too long to count in nanoseconds.
    #[error("the window must be between 1 ns and 100 years, not {0:?}")]
    Window(Duration),
    /// The margin is outside (0, 1].
    #[error("the margin must be above 0 and at most 1, not {0}")]
    Margin(f64),
    /// The pace is so fast that one unit is due more often than every nanosecond.
    #[error("{limit} per {window:?} is finer than the clock (one unit per nanosecond at most)")]
    TooFine {
        /// The limit.
        limit: u64,
        /// The window.
        window: Duration,
    },
}

/// Why a bucket refused a cost now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// The cost fits at the given instant (and not before).
    Until(Nanos),
    /// The cost is larger than the provider's whole limit per window: it can never be sent.
    TooLarge {
        /// The cost asked for.
        cost: u64,
        /// The limit per window.
        limit: u64,
    },
}

/// The constant part of a GCRA bucket: its pace and burst. Scopes configured alike share one
/// `Rate`; each keeps only its own theoretical arrival time (`tat`), one [`Nanos`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Nanoseconds per unit at the paced rate.
    interval: Nanos,
    /// The burst: the most units of small requests admitted at once.
    capacity: u64,
    /// `capacity × interval`: how far `tat` may run ahead of now.
    tolerance: Nanos,
    /// The provider's limit per window: the largest single cost ever admitted.
    limit: u64,
    /// The units paced per window.
    paced: u64,
}

impl Rate {
    /// The rate for `limit` units per `window`, paced at `margin` of the limit (at least one
    /// unit per window), with the rest of the limit as its burst.
    ///
    /// # Errors
    /// [`QuotaError`] for a window that is zero or absurd, a margin outside (0, 1], or a pace
    /// finer than a nanosecond.
    pub fn new(limit: NonZeroU64, window: Duration, margin: f64) -> Result<Self, QuotaError> {
        Self::refilled(limit, window, margin, Refill::Window)
    }

    /// The rate for `limit` units per `window`, paced at `margin` of the limit, with the burst
    /// `refill` makes safe: the rest of the limit ([`Refill::Window`]) or the whole paced
    /// amount ([`Refill::Continuous`]).
    ///
    /// # Errors
    /// As [`Rate::new`].
    pub fn refilled(
        limit: NonZeroU64,
        window: Duration,
        margin: f64,
        refill: Refill,
    ) -> Result<Self, QuotaError> {
        if !(margin > 0.0 && margin <= 1.0) {
            return Err(QuotaError::Margin(margin));
        }
        let window_ns = u64::try_from(window.as_nanos())
            .ok()
            .filter(|w| *w > 0 && *w <= 100 * 365 * 24 * 3600 * 1_000_000_000)
            .ok_or(QuotaError::Window(window))?;
        let limit = limit.get();
        // Truncating toward zero keeps the pace at or below the margin; the float cast
        // saturates, and the clamp keeps it within the limit.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a pace between 1 and the limit"
        )]
        let paced = ((limit as f64 * margin) as u64).clamp(1, limit);
        let capacity = match refill {
            Refill::Window => limit - paced + 1,
            Refill::Continuous => paced,
        };
        if paced > window_ns {
            return Err(QuotaError::TooFine { limit, window });
        }
        // Rounding up keeps the pace at or below the margin.
        let interval = window_ns.div_ceil(paced);
        Ok(Self {
            interval,
            capacity,
            tolerance: capacity.saturating_mul(interval),
            limit,
            paced,
        })
    }

    /// The burst: the most units of small requests admitted at once.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The provider's limit per window: the largest cost ever admitted.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The paced units per window: the limit times the margin.
    pub fn paced(&self) -> u64 {
        self.paced
    }

    /// Nanoseconds per unit at the paced rate.
    pub fn interval(&self) -> Nanos {
        self.interval
    }

    /// How far the theoretical arrival time may run ahead of now: the burst's worth of time.
    pub fn tolerance(&self) -> Nanos {
        self.tolerance
    }

    /// The earliest instant at or after `now` when `cost` units fit, for a bucket whose
    /// theoretical arrival time is `tat`.
    ///
    /// A cost larger than the burst fits too, once the bucket has been idle long enough to
    /// pay for the excess: `tat` must lie `(cost − capacity) × interval` in the past. Any
    /// window then still admits at most the limit, so a 4 000-token call is not refused by a
    /// scope whose burst is 3 000 tokens; it waits for a quieter moment.
    ///
    /// # Errors
    /// [`Denial::TooLarge`] when the cost exceeds the whole limit per window.
    pub fn ready_at(&self, tat: Nanos, now: Nanos, cost: u64) -> Result<Nanos, Denial> {
        if cost > self.limit {
            return Err(Denial::TooLarge {
                cost,
                limit: self.limit,
            });
        }
        // Fits when max(tat, t) + cost × interval − t ≤ tolerance.
        Ok(self.estimate(tat, now, 0, cost))
    }

    /// When `cost` units would fit if `ahead` units queued before them went first: an
    /// estimate of a queued request's wait (it may exceed the capacity; that is the point).
    pub fn estimate(&self, tat: Nanos, now: Nanos, ahead: u64, cost: u64) -> Nanos {
        let need = ahead.saturating_add(cost).saturating_mul(self.interval);
        tat.saturating_add(need)
            .saturating_sub(self.tolerance)
            .max(now)
    }

    /// Takes `cost` units at `now`, whether or not they fit.
    pub fn charge(&self, tat: &mut Nanos, now: Nanos, cost: u64) {
        *tat = (*tat)
            .max(now)
            .saturating_add(cost.saturating_mul(self.interval));
    }

    /// Gives back `cost` units charged before and not used.
    pub fn refund(&self, tat: &mut Nanos, cost: u64) {
        *tat = tat.saturating_sub(cost.saturating_mul(self.interval));
    }

    /// The units that fit at once at `now`, for a bucket whose theoretical arrival time is
    /// `tat`: what the bucket believes is available.
    pub fn available(&self, tat: Nanos, now: Nanos) -> u64 {
        let behind = tat.saturating_sub(now);
        self.tolerance.saturating_sub(behind) / self.interval
    }

    /// Takes from the bucket until at most `available` units fit at `now`; a bucket that
    /// believes `available` or less already is left alone, so this never gives anything
    /// back. With `free_by`, it takes no more than a hold until that instant would: one unit
    /// fits then. Returns how far the schedule moved, at most the burst's worth of time
    /// (`capacity × interval`).
    pub fn debit_to(
        &self,
        tat: &mut Nanos,
        now: Nanos,
        available: u64,
        free_by: Option<Nanos>,
    ) -> Nanos {
        // Exactly `available` units fit when max(tat, now) = now + tolerance − available ×
        // interval.
        let mut target = now
            .saturating_add(self.tolerance)
            .saturating_sub(available.saturating_mul(self.interval));
        if let Some(at) = free_by {
            let held = at
                .saturating_add(self.tolerance)
                .saturating_sub(self.interval);
            target = target.min(held);
        }
        let base = (*tat).max(now);
        if target <= base {
            return 0;
        }
        *tat = target;
        target - base
    }

    /// Admits nothing before `until`, and restarts from there at the paced rate, with an
    /// empty burst.
    pub fn hold_until(&self, tat: &mut Nanos, until: Nanos) {
        // At `until` exactly one unit fits: max(tat, until) + interval − until ≤ tolerance.
        let held = until
            .saturating_add(self.tolerance)
            .saturating_sub(self.interval);
        *tat = (*tat).max(held);
    }
}

/// A GCRA bucket for one dimension of one scope: a [`Rate`] and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    rate: Rate,
    /// The theoretical arrival time of the next unit.
    tat: Nanos,
}

impl Bucket {
    /// A bucket for `limit` units per `window`; see [`Rate::new`].
    ///
    /// # Errors
    /// As [`Rate::new`].
    pub fn new(limit: NonZeroU64, window: Duration, margin: f64) -> Result<Self, QuotaError> {
        Ok(Self {
            rate: Rate::new(limit, window, margin)?,
            tat: 0,
        })
    }

    /// The bucket's pace and burst.
    pub fn rate(&self) -> &Rate {
        &self.rate
    }

    /// The burst: the most units of small requests this bucket admits at once.
    pub fn capacity(&self) -> u64 {
        self.rate.capacity
    }

    /// Nanoseconds per unit at the paced rate.
    pub fn interval(&self) -> Nanos {
        self.rate.interval
    }

    /// Takes `cost` units at `now` if they fit; else says when they would.
    ///
    /// # Errors
    /// [`Denial::Until`] with the earliest instant the cost fits, or [`Denial::TooLarge`].
    pub fn check(&mut self, now: Nanos, cost: u64) -> Result<(), Denial> {
        let at = self.ready_at(now, cost)?;
        if at > now {
            return Err(Denial::Until(at));
        }
        self.rate.charge(&mut self.tat, now, cost);
        Ok(())
    }

    /// The earliest instant at or after `now` when `cost` units fit.
    ///
    /// # Errors
    /// [`Denial::TooLarge`] when they never fit at once.
    pub fn ready_at(&self, now: Nanos, cost: u64) -> Result<Nanos, Denial> {
        self.rate.ready_at(self.tat, now, cost)
    }

    /// Gives back `cost` units charged before and not used (the estimate was high).
    pub fn refund(&mut self, cost: u64) {
        self.rate.refund(&mut self.tat, cost);
    }

    /// Takes `cost` units whether or not they fit (the actual use was higher than the
    /// estimate): later requests wait for it.
    pub fn charge(&mut self, now: Nanos, cost: u64) {
        self.rate.charge(&mut self.tat, now, cost);
    }

    /// Admits nothing before `until` (a 429, or `remaining: 0` with a reset), and restarts
    /// from there at the paced rate, with an empty burst.
    pub fn hold_until(&mut self, until: Nanos) {
        self.rate.hold_until(&mut self.tat, until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SEC: Nanos = 1_000_000_000;

    fn bucket(limit: u64, window_s: u64) -> Bucket {
        Bucket::new(
            NonZeroU64::new(limit).unwrap(),
            Duration::from_secs(window_s),
            0.9,
        )
        .unwrap()
    }

    #[test]
    fn paces_at_the_margin_with_the_rest_as_burst() {
        let b = bucket(600, 60);
        assert_eq!(b.capacity(), 61);
        assert_eq!(b.interval(), (60 * SEC).div_ceil(540));
    }

    #[test]
    fn a_continuously_refilled_quota_holds_its_whole_pace_as_burst() {
        let r = Rate::refilled(
            NonZeroU64::new(30_000).unwrap(),
            Duration::from_secs(60),
            0.98,
            Refill::Continuous,
        )
        .unwrap();
        assert_eq!((r.paced(), r.capacity()), (29_400, 29_400));
        let w = Rate::new(
            NonZeroU64::new(30_000).unwrap(),
            Duration::from_secs(60),
            0.98,
        )
        .unwrap();
        assert_eq!(
            (w.paced(), w.capacity()),
            (29_400, 601),
            "by window: the rest of the limit"
        );
        // A 1 024-token reservation goes at once on a busy continuous scope that has it.
        let mut tat = 0;
        r.charge(&mut tat, 0, 20_000);
        assert_eq!(r.ready_at(tat, 0, 1_024), Ok(0));
        let mut tat = 0;
        w.charge(&mut tat, 0, 500);
        assert!(w.ready_at(tat, 0, 1_024).unwrap() > 0, "by window it waits");
    }

    #[test]
    fn a_denial_says_when() {
        let mut b = bucket(10, 10); // 9 per 10 s, burst 2
        assert_eq!(b.check(0, 2), Ok(()));
        let Err(Denial::Until(at)) = b.check(0, 1) else {
            panic!()
        };
        assert_eq!(at, b.interval());
        assert_eq!(b.check(at - 1, 1), Err(Denial::Until(at)));
        assert_eq!(b.check(at, 1), Ok(()));
    }

    #[test]
    fn more_than_the_limit_is_never_admitted() {
        let mut b = bucket(100, 1);
        assert_eq!(
            b.check(0, 101),
            Err(Denial::TooLarge {
                cost: 101,
                limit: 100
            })
        );
    }

    #[test]
    fn a_cost_above_the_burst_waits_until_the_bucket_has_been_idle_long_enough() {
        let mut b = bucket(100, 1); // 90 per second paced, burst 11
        assert_eq!(b.check(0, 50), Err(Denial::Until(39 * b.interval())));
        assert_eq!(b.check(39 * b.interval(), 50), Ok(()));
        // The next unit waits until the excess is paid.
        assert_eq!(b.ready_at(39 * b.interval(), 1), Ok(79 * b.interval()));
    }

    #[test]
    fn refunds_and_charges_move_the_next_admission() {
        let mut b = bucket(100, 1); // capacity 11
        assert_eq!(b.check(0, 11), Ok(()));
        assert!(b.check(0, 5).is_err());
        b.refund(5);
        assert_eq!(b.check(0, 5), Ok(()));
        b.charge(0, 20);
        // 31 units are charged against a tolerance of 11: the next waits for 21 of them.
        assert_eq!(b.ready_at(0, 1), Ok(21 * b.interval()));
    }

    #[test]
    fn a_hold_admits_nothing_before_and_one_at_the_instant() {
        let mut b = bucket(600, 60);
        b.hold_until(10 * SEC);
        assert_eq!(b.check(10 * SEC - 1, 1), Err(Denial::Until(10 * SEC)));
        assert_eq!(b.check(10 * SEC, 1), Ok(()));
        assert!(b.check(10 * SEC, 1).is_err(), "the burst restarts empty");
    }

    #[test]
    fn a_debit_leaves_exactly_what_it_is_told_and_never_credits() {
        let b = bucket(600, 60); // burst 61
        let rate = *b.rate();
        let mut tat = 0;
        assert_eq!(rate.available(tat, 10 * SEC), 61);
        let moved = rate.debit_to(&mut tat, 10 * SEC, 10, None);
        assert_eq!(moved, 51 * rate.interval());
        assert_eq!(rate.available(tat, 10 * SEC), 10);
        assert_eq!(rate.ready_at(tat, 10 * SEC, 10), Ok(10 * SEC));
        assert_eq!(
            rate.ready_at(tat, 10 * SEC, 11),
            Ok(10 * SEC + rate.interval())
        );
        // Believing more than it does changes nothing.
        let before = tat;
        assert_eq!(rate.debit_to(&mut tat, 10 * SEC, 30, None), 0);
        assert_eq!(tat, before);
        // Nothing left: the next unit fits after one interval, not after the whole burst.
        let mut tat = 0;
        assert_eq!(
            rate.debit_to(&mut tat, SEC, 0, None),
            rate.capacity() * rate.interval()
        );
        assert_eq!(rate.ready_at(tat, SEC, 1), Ok(SEC + rate.interval()));
        // Never more than a hold until `free_by` would take: one unit fits then.
        let mut tat = 0;
        rate.debit_to(&mut tat, 10 * SEC, 1, Some(10 * SEC - 5 * rate.interval()));
        assert_eq!(rate.available(tat, 10 * SEC), 6);
    }

    #[test]
    fn bad_quotas_are_errors() {
        let one = NonZeroU64::new(1).unwrap();
        assert!(matches!(
            Bucket::new(one, Duration::ZERO, 0.9),
            Err(QuotaError::Window(_))
        ));
        assert!(matches!(
            Bucket::new(one, Duration::from_secs(1), 0.0),
            Err(QuotaError::Margin(_))
        ));
        assert!(matches!(
            Bucket::new(one, Duration::from_secs(1), 1.5),
            Err(QuotaError::Margin(_))
        ));
        assert!(matches!(
            Bucket::new(one, Duration::from_secs(1), f64::NAN),
            Err(QuotaError::Margin(_))
        ));
        let huge = NonZeroU64::new(u64::MAX).unwrap();
        assert!(matches!(
            Bucket::new(huge, Duration::from_nanos(10), 0.9),
            Err(QuotaError::TooFine { .. })
        ));
    }

    proptest! {
        /// For any arrival pattern and costs, no window of the quota's length ever admits more
        /// than the provider's limit.
        #[test]
        fn never_more_than_the_limit_in_any_window(
            limit in 1u64..2000,
            window_ms in 1u64..120_000,
            margin in 0.05f64..=1.0,
            ops in prop::collection::vec((0u64..5_000_000_000, 1u64..2000), 1..400),
        ) {
            let window = window_ms * 1_000_000;
            let mut b = Bucket::new(NonZeroU64::new(limit).unwrap(), Duration::from_millis(window_ms), margin).unwrap();
            let mut now = 0;
            let mut admitted: Vec<(Nanos, u64)> = Vec::new();
            for (gap, cost) in ops {
                now += gap % (2 * window);
                if b.check(now, cost).is_ok() {
                    admitted.push((now, cost));
                }
            }
            for (i, &(start, _)) in admitted.iter().enumerate() {
                let in_window: u64 = admitted[i..]
                    .iter()
                    .take_while(|(t, _)| *t < start + window)
                    .map(|(_, c)| c)
                    .sum();
                prop_assert!(in_window <= limit, "{in_window} > {limit} in the window from {start}");
            }
        }
    }
}
