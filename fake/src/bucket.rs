//! Anthropic-style limits: token buckets refilled continuously, not windows that reset.
//!
//! The output-token bucket is charged the way Anthropic documents it: a request reserves its
//! whole `max_tokens` when it starts (it is refused if the bucket cannot hold that much) and
//! gives back what it did not produce when it ends. So an account's real output capacity is
//! in tokens actually produced, and a client that charges itself `max_tokens` and never
//! corrects the charge uses only a fraction of it.

use std::time::Duration;

use tokio::time::Instant;

/// One continuously refilled bucket: `limit` units per minute, holding at most `limit`.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    limit: u64,
    level: f64,
    at: Instant,
}

impl TokenBucket {
    /// A full bucket of `limit` per minute at `now`.
    pub fn new(limit: u64, now: Instant) -> Self {
        Self {
            limit,
            #[allow(clippy::cast_precision_loss, reason = "limits far below 2^52")]
            level: limit as f64,
            at: now,
        }
    }

    #[allow(clippy::cast_precision_loss, reason = "limits far below 2^52")]
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        let per_sec = self.limit as f64 / 60.0;
        self.level = (self.level + elapsed * per_sec).min(self.limit as f64);
    }

    /// What is left at `now`, rounded down.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a level between 0 and the limit"
    )]
    pub fn remaining(&mut self, now: Instant) -> u64 {
        self.refill(now);
        self.level.max(0.0) as u64
    }

    /// Takes `amount` at `now` if the bucket holds it.
    ///
    /// # Errors
    /// How long until it would hold `amount` (`Duration::MAX` when it never can).
    #[allow(clippy::cast_precision_loss, reason = "limits far below 2^52")]
    pub fn take(&mut self, now: Instant, amount: u64) -> Result<(), Duration> {
        self.refill(now);
        let want = amount as f64;
        if want > self.limit as f64 {
            return Err(Duration::MAX);
        }
        if self.level + 1e-9 >= want {
            self.level -= want;
            return Ok(());
        }
        let per_sec = self.limit as f64 / 60.0;
        Err(Duration::from_secs_f64((want - self.level) / per_sec))
    }

    /// Gives back `amount` (a reservation's unused part) at `now`.
    #[allow(clippy::cast_precision_loss, reason = "limits far below 2^52")]
    pub fn give_back(&mut self, now: Instant, amount: u64) {
        self.refill(now);
        self.level = (self.level + amount as f64).min(self.limit as f64);
    }

    /// How long from `now` until the bucket is full again.
    #[allow(clippy::cast_precision_loss, reason = "limits far below 2^52")]
    pub fn until_full(&mut self, now: Instant) -> Duration {
        self.refill(now);
        let per_sec = self.limit as f64 / 60.0;
        Duration::from_secs_f64(((self.limit as f64 - self.level) / per_sec).max(0.0))
    }

    /// The limit per minute.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_given_back_is_capacity_again() {
        let t0 = crate::server::now();
        let mut b = TokenBucket::new(600, t0);
        assert!(b.take(t0, 500).is_ok());
        assert_eq!(b.remaining(t0), 100);
        assert!(b.take(t0, 200).is_err(), "only 100 left");
        b.give_back(t0, 400);
        assert_eq!(b.remaining(t0), 500);
        // 10 per second refill.
        let wait = b.take(t0, 600).unwrap_err();
        assert_eq!(wait, Duration::from_secs(10));
        assert!(b.take(t0 + Duration::from_secs(10), 600).is_ok());
    }

    #[test]
    fn more_than_the_limit_never_fits() {
        let t0 = crate::server::now();
        let mut b = TokenBucket::new(100, t0);
        assert_eq!(b.take(t0, 101).unwrap_err(), Duration::MAX);
    }
}

/// The input- and output-token buckets of an account whose configuration sets them.
#[derive(Debug, Default)]
pub(crate) struct Buckets {
    pub input: Option<TokenBucket>,
    pub output: Option<TokenBucket>,
}

impl Buckets {
    /// Takes an attempt's input tokens and reserves its whole `max_output`; nothing is taken
    /// unless both fit.
    pub fn take(
        &mut self,
        config: &crate::FakeConfig,
        now: Instant,
        input: u64,
        max_output: u64,
    ) -> Result<(), crate::window::Exceeded> {
        if self.input.is_none() {
            self.input = config.itpm.map(|l| TokenBucket::new(l, now));
        }
        if self.output.is_none() {
            self.output = config.otpm.map(|l| TokenBucket::new(l, now));
        }
        let exceeded = |retry_after| crate::window::Exceeded {
            tokens: true,
            retry_after,
        };
        if let Some(b) = self.input.as_mut() {
            b.take(now, input).map_err(exceeded)?;
        }
        if let Some(b) = self.output.as_mut()
            && let Err(wait) = b.take(now, max_output)
        {
            if let Some(i) = self.input.as_mut() {
                i.give_back(now, input);
            }
            return Err(exceeded(wait));
        }
        Ok(())
    }

    /// Undoes a [`Buckets::take`] (another limit refused the attempt).
    pub fn give_back(&mut self, now: Instant, input: u64, max_output: u64) {
        if let Some(b) = self.input.as_mut() {
            b.give_back(now, input);
        }
        if let Some(b) = self.output.as_mut() {
            b.give_back(now, max_output);
        }
    }

    /// An attempt ended having produced less than it reserved: `unused` goes back.
    pub fn finish(&mut self, now: Instant, unused: u64) {
        if let Some(b) = self.output.as_mut() {
            b.give_back(now, unused);
        }
    }
}

impl TokenBucket {
    /// The limit, what is left and how long until full, for quota headers.
    pub(crate) fn figures(&mut self, now: Instant) -> (u64, u64, Duration) {
        (self.limit, self.remaining(now), self.until_full(now))
    }
}
