//! Wrong tokens, counted per source address and per door: agents' tokens on the agents'
//! listener, and operators' (the admin token, console sign-ins) apart. Past `per_minute`
//! failures in a minute, the address's admin and console attempts are refused (429) until
//! the minute is over, before any token is looked at, so guessing those is slow; its wrong
//! agent tokens are answered 429, but a right one is still served — agents share addresses,
//! and one misconfigured agent must not lock the others out (agent tokens are long random
//! secrets: for them the count is for noise and alarms). An agent's wrong tokens never count
//! against the operators' door: behind a proxy every operator shares the agents' address,
//! and a broken agent must not lock them out of `/readyz`, `/metrics` or the console. Each failure is counted in `sluice_serve_failed_tokens_total`
//! (`listener`); the first of each address in a minute, and its lock-out, are logged. At most
//! [`MAX_SOURCES`] addresses are remembered; the oldest minute is forgotten first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

/// The most source addresses remembered.
pub const MAX_SOURCES: usize = 10_000;

/// A minute, in milliseconds.
const MINUTE_MS: i64 = 60_000;

/// The failures of one address in its current minute.
#[derive(Debug, Clone, Copy)]
struct Minute {
    started_ms: i64,
    failures: u32,
}

/// Which tokens a failure was about: the two are counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Door {
    /// Agents' tokens, on the agents' listener.
    Agents,
    /// Operators': the admin token, console sign-ins.
    Operators,
}

impl Door {
    /// Its name in `sluice_serve_failed_tokens_total` and in the log.
    fn name(self) -> &'static str {
        match self {
            Self::Agents => "agents",
            Self::Operators => "operators",
        }
    }
}

/// Wrong tokens by source address and door.
#[derive(Debug)]
pub struct FailedTokens {
    per_minute: u32,
    by_source: Mutex<HashMap<(IpAddr, Door), Minute>>,
}

impl FailedTokens {
    /// At most `per_minute` wrong tokens per address a minute.
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            by_source: Mutex::default(),
        }
    }

    /// Whether `source` may present a token at `door` at `now_ms`: `Err` with the milliseconds until
    /// it may again.
    ///
    /// # Errors
    /// The wait, while the address is over its limit.
    pub fn check(&self, source: IpAddr, door: Door, now_ms: i64) -> Result<(), u64> {
        let by = self
            .by_source
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match by.get(&(source, door)) {
            Some(m) if now_ms - m.started_ms < MINUTE_MS && m.failures >= self.per_minute => {
                Err(u64::try_from(m.started_ms + MINUTE_MS - now_ms).unwrap_or(0))
            }
            _ => Ok(()),
        }
    }

    /// `source` presented a wrong token to `listener` (`agents`, `admin`, `console`),
    /// counted at `door`, at `now_ms`.
    pub fn failed(&self, source: IpAddr, listener: &'static str, door: Door, now_ms: i64) {
        metrics::counter!("sluice_serve_failed_tokens_total", "listener" => listener).increment(1);
        let key = (source, door);
        let mut by = self
            .by_source
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if by.len() >= MAX_SOURCES && !by.contains_key(&key) {
            by.retain(|_, m| now_ms - m.started_ms < MINUTE_MS);
            if by.len() >= MAX_SOURCES
                && let Some(oldest) = by.iter().min_by_key(|(_, m)| m.started_ms).map(|(a, _)| *a)
            {
                by.remove(&oldest);
            }
        }
        let m = by.entry(key).or_insert(Minute {
            started_ms: now_ms,
            failures: 0,
        });
        if now_ms - m.started_ms >= MINUTE_MS {
            *m = Minute {
                started_ms: now_ms,
                failures: 0,
            };
        }
        m.failures += 1;
        if m.failures == 1 {
            tracing::warn!(%source, listener, door = door.name(), "a wrong token was presented");
        } else if m.failures == self.per_minute {
            tracing::warn!(
                %source,
                listener,
                door = door.name(),
                failures = m.failures,
                "too many wrong tokens from one address: its attempts are refused for the \
                 rest of the minute"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_past_its_limit_waits_for_the_minute_and_others_do_not() {
        let t = FailedTokens::new(3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert_eq!(t.check(a, Door::Operators, 1_000), Ok(()));
            t.failed(a, "admin", Door::Operators, 1_000);
        }
        assert_eq!(t.check(a, Door::Operators, 11_000), Err(50_000));
        assert_eq!(t.check(b, Door::Operators, 11_000), Ok(()));
        assert_eq!(t.check(a, Door::Operators, 61_000), Ok(()), "a new minute");
        t.failed(a, "console", Door::Operators, 61_000);
        assert_eq!(t.check(a, Door::Operators, 61_000), Ok(()));
    }

    #[test]
    fn an_agents_wrong_tokens_never_lock_the_operators_door() {
        let t = FailedTokens::new(3);
        let proxy: IpAddr = "10.0.0.9".parse().unwrap();
        for _ in 0..12 {
            t.failed(proxy, "agents", Door::Agents, 1_000);
        }
        assert!(t.check(proxy, Door::Agents, 1_000).is_err());
        assert_eq!(t.check(proxy, Door::Operators, 1_000), Ok(()));
    }

    #[test]
    fn the_addresses_remembered_stay_bounded() {
        let t = FailedTokens::new(1);
        for i in 0..(MAX_SOURCES as u32 + 100) {
            t.failed(
                IpAddr::from(i.to_be_bytes()),
                "agents",
                Door::Agents,
                i64::from(i),
            );
        }
        assert!(t.by_source.lock().unwrap().len() <= MAX_SOURCES);
    }
}
