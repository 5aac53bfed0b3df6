//! The provider's own limits, enforced exactly: a sliding log of the last minute. This is the
//! referee the host's pacing is judged against, so it is deliberately not the host's GCRA.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// A minute.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Requests and tokens counted in the last minute.
#[derive(Debug, Default)]
pub struct Window {
    /// When, how many requests (1 for an admission, 0 for tokens counted after one), how
    /// many tokens.
    log: VecDeque<(Instant, u64, u64)>,
    requests: u64,
    tokens: u64,
}

/// Why the window refused an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    /// `true` for the token limit, `false` for the request limit.
    pub tokens: bool,
    /// When enough of the window has passed for the attempt to fit.
    pub retry_after: Duration,
}

impl Window {
    fn expire(&mut self, now: Instant) {
        while let Some(&(at, requests, tokens)) = self.log.front() {
            if now.duration_since(at) < WINDOW {
                break;
            }
            self.log.pop_front();
            self.requests -= requests;
            self.tokens -= tokens;
        }
    }

    /// Takes one request of `tokens` at `now` if both limits allow it.
    ///
    /// # Errors
    /// [`Exceeded`] with the limit and the wait.
    pub fn take(
        &mut self,
        now: Instant,
        tokens: u64,
        rpm: Option<u64>,
        tpm: Option<u64>,
    ) -> Result<(), Exceeded> {
        self.expire(now);
        let until_entry_leaves = |at: Instant| (at + WINDOW).saturating_duration_since(now);
        if let Some(rpm) = rpm
            && self.requests >= rpm
        {
            // The admission that must leave for one more to fit: the rpm-th from the newest.
            let oldest = self
                .log
                .iter()
                .rev()
                .filter(|e| e.1 == 1)
                .nth(usize::try_from(rpm - 1).unwrap_or(usize::MAX))
                .map_or(now, |e| e.0);
            return Err(Exceeded {
                tokens: false,
                retry_after: until_entry_leaves(oldest),
            });
        }
        if let Some(tpm) = tpm
            && self.tokens + tokens > tpm
        {
            // Wait until enough old entries leave to make room.
            let mut freed = 0;
            let mut at = now;
            for &(t, _, n) in &self.log {
                freed += n;
                at = t;
                if self.tokens - freed + tokens <= tpm {
                    break;
                }
            }
            return Err(Exceeded {
                tokens: true,
                retry_after: until_entry_leaves(at),
            });
        }
        self.log.push_back((now, 1, tokens));
        self.requests += 1;
        self.tokens += tokens;
        Ok(())
    }

    /// Counts `tokens` used at `now` by a request already admitted (what a generation that
    /// named no maximum wrote): they fill the window as an admission's do, whatever its
    /// limit, as the provider learns of them only once they are written.
    pub fn count(&mut self, now: Instant, tokens: u64) {
        self.expire(now);
        if tokens > 0 {
            self.log.push_back((now, 0, tokens));
            self.tokens += tokens;
        }
    }

    /// Requests and tokens left in the window at `now`.
    pub fn remaining(&mut self, now: Instant, rpm: Option<u64>, tpm: Option<u64>) -> (u64, u64) {
        self.expire(now);
        (
            rpm.map_or(u64::MAX, |r| r.saturating_sub(self.requests)),
            tpm.map_or(u64::MAX, |t| t.saturating_sub(self.tokens)),
        )
    }

    /// When the oldest entry leaves the window (the window's reset), from `now`.
    pub fn reset_after(&self, now: Instant) -> Duration {
        self.log.front().map_or(Duration::ZERO, |&(at, _, _)| {
            (at + WINDOW).saturating_duration_since(now)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_minute_is_counted_exactly() {
        let t0 = crate::server::now();
        let mut w = Window::default();
        for i in 0..3 {
            assert!(
                w.take(t0 + Duration::from_secs(i), 10, Some(3), None)
                    .is_ok()
            );
        }
        let e = w
            .take(t0 + Duration::from_secs(30), 10, Some(3), None)
            .unwrap_err();
        assert_eq!(
            e.retry_after,
            Duration::from_secs(30),
            "until the first leaves"
        );
        assert!(!e.tokens);
        assert!(
            w.take(t0 + WINDOW, 10, Some(3), None).is_ok(),
            "the first left"
        );
    }

    #[test]
    fn tokens_wait_until_enough_leave() {
        let t0 = crate::server::now();
        let mut w = Window::default();
        assert!(w.take(t0, 600, None, Some(1000)).is_ok());
        assert!(
            w.take(t0 + Duration::from_secs(10), 300, None, Some(1000))
                .is_ok()
        );
        let e = w
            .take(t0 + Duration::from_secs(20), 500, None, Some(1000))
            .unwrap_err();
        assert!(e.tokens);
        assert_eq!(e.retry_after, Duration::from_secs(40));
        assert_eq!(
            w.remaining(t0 + Duration::from_secs(20), None, Some(1000))
                .1,
            100
        );
    }
}
