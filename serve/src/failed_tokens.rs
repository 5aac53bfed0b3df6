//! Wrong tokens, counted per door — agents' tokens on the agents' listener, and operators'
//! (the admin token, console sign-ins) apart — and per [`Presenter`]: the client's address
//! (read from `X-Forwarded-For` only behind a trusted proxy, `serve.trusted_proxies`) and
//! a mark of the token it presented (its first characters, hashed). Past `per_minute`
//! failures of one mark in a minute, or ten times as many of one address whatever it
//! presented, the presenter's admin and console attempts are refused (429) until the minute
//! is over, before any token is compared, so guessing those is slow; its wrong agent tokens
//! are answered 429, but a right one is still served — agents share addresses, and one
//! misconfigured agent must not lock the others out (agent tokens are long random secrets:
//! for them the count is for noise and alarms). An agent's wrong tokens never count against
//! the operators' door, and a stale token one client keeps sending locks out that token
//! only: behind a proxy every operator may share one address. Each failure is counted in
//! `sluice_serve_failed_tokens_total` (`listener`); the first of each address in a minute,
//! and its lock-out, are logged. At most [`MAX_SOURCES`] counts are remembered; the oldest
//! minute is forgotten first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

/// The most counts remembered (an address's and each of its marks').
pub const MAX_SOURCES: usize = 10_000;

/// A minute, in milliseconds.
const MINUTE_MS: i64 = 60_000;

/// How many more failures an address may have than one of its marks: a guesser trying
/// tokens of every shape is held by this.
const ADDRESS_FACTOR: u32 = 10;

/// The characters of a presented token its mark is made of.
const MARK_CHARS: usize = 8;

/// The failures of one count in its current minute.
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

/// Who presented a token: the client's address, and a mark of what it presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Presenter {
    /// The client's address.
    pub addr: IpAddr,
    /// The first bytes of the SHA-256 of the token's first [`MARK_CHARS`] characters (the
    /// token itself is never kept); 0 for no token.
    pub mark: u32,
}

impl Presenter {
    /// `token`, presented from `addr`.
    pub fn of(addr: IpAddr, token: &str) -> Self {
        let mark = if token.is_empty() {
            0
        } else {
            let end = token
                .char_indices()
                .nth(MARK_CHARS)
                .map_or(token.len(), |(i, _)| i);
            let d = Sha256::digest(&token.as_bytes()[..end]);
            u32::from_be_bytes([d[0], d[1], d[2], d[3]]) | 1
        };
        Self { addr, mark }
    }
}

/// A count's key: an address's (`mark: None`) or one of its marks'.
type Key = (IpAddr, Door, Option<u32>);

/// Wrong tokens by presenter and door.
#[derive(Debug)]
pub struct FailedTokens {
    per_minute: u32,
    by_source: Mutex<HashMap<Key, Minute>>,
}

impl FailedTokens {
    /// At most `per_minute` wrong tokens of one mark a minute, ten times as many of one
    /// address.
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            by_source: Mutex::default(),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Minute>> {
        self.by_source
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `who` may present a token at `door` at `now_ms`: `Err` with the milliseconds
    /// until it may again.
    ///
    /// # Errors
    /// The wait, while its mark or its address is over its limit.
    pub fn check(&self, who: Presenter, door: Door, now_ms: i64) -> Result<(), u64> {
        let by = self.counts();
        let over = |key: Key, limit: u32| match by.get(&key) {
            Some(m) if now_ms - m.started_ms < MINUTE_MS && m.failures >= limit => {
                Some(u64::try_from(m.started_ms + MINUTE_MS - now_ms).unwrap_or(0))
            }
            _ => None,
        };
        let mark = over((who.addr, door, Some(who.mark)), self.per_minute);
        let addr = over(
            (who.addr, door, None),
            self.per_minute.saturating_mul(ADDRESS_FACTOR),
        );
        match mark.max(addr) {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    /// `who` presented a wrong token to `listener` (`agents`, `admin`, `console`), counted
    /// at `door`, at `now_ms`.
    pub fn failed(&self, who: Presenter, listener: &'static str, door: Door, now_ms: i64) {
        metrics::counter!(crate::metric_names::FAILED_TOKENS, "listener" => listener).increment(1);
        let mut by = self.counts();
        let mut add = |key: Key| {
            if by.len() >= MAX_SOURCES && !by.contains_key(&key) {
                by.retain(|_, m| now_ms - m.started_ms < MINUTE_MS);
                if by.len() >= MAX_SOURCES
                    && let Some(oldest) =
                        by.iter().min_by_key(|(_, m)| m.started_ms).map(|(k, _)| *k)
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
            m.failures
        };
        let of_mark = add((who.addr, door, Some(who.mark)));
        let of_addr = add((who.addr, door, None));
        let source = who.addr;
        if of_addr == 1 {
            tracing::warn!(%source, listener, door = door.name(), "a wrong token was presented");
        }
        if of_mark == self.per_minute || of_addr == self.per_minute.saturating_mul(ADDRESS_FACTOR) {
            tracing::warn!(
                %source,
                listener,
                door = door.name(),
                failures = of_addr,
                "too many wrong tokens from one address: its attempts with that token are \
                 refused for the rest of the minute"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(addr: &str, token: &str) -> Presenter {
        Presenter::of(addr.parse().unwrap(), token)
    }

    #[test]
    fn a_token_past_its_limit_waits_for_the_minute_and_others_do_not() {
        let t = FailedTokens::new(3);
        let a = at("10.0.0.1", "stale-token-1");
        for _ in 0..3 {
            assert_eq!(t.check(a, Door::Operators, 1_000), Ok(()));
            t.failed(a, "admin", Door::Operators, 1_000);
        }
        assert_eq!(t.check(a, Door::Operators, 11_000), Err(50_000));
        assert_eq!(
            t.check(at("10.0.0.2", "stale-token-1"), Door::Operators, 11_000),
            Ok(()),
            "another address"
        );
        assert_eq!(
            t.check(
                at("10.0.0.1", "the-right-admin-token"),
                Door::Operators,
                11_000
            ),
            Ok(()),
            "another token from the same address (an operator behind the same proxy)"
        );
        assert_eq!(t.check(a, Door::Operators, 61_000), Ok(()), "a new minute");
    }

    #[test]
    fn an_address_guessing_tokens_of_every_shape_is_held_by_its_own_count() {
        let t = FailedTokens::new(3);
        for i in 0..30 {
            let guess = at("10.0.0.1", &format!("{i:08}-guess"));
            assert_eq!(t.check(guess, Door::Operators, 1_000), Ok(()), "guess {i}");
            t.failed(guess, "admin", Door::Operators, 1_000);
        }
        assert!(
            t.check(at("10.0.0.1", "any"), Door::Operators, 1_000)
                .is_err()
        );
    }

    #[test]
    fn an_agents_wrong_tokens_never_lock_the_operators_door() {
        let t = FailedTokens::new(3);
        let proxy = at("10.0.0.9", "wrong");
        for _ in 0..40 {
            t.failed(proxy, "agents", Door::Agents, 1_000);
        }
        assert!(t.check(proxy, Door::Agents, 1_000).is_err());
        assert_eq!(t.check(proxy, Door::Operators, 1_000), Ok(()));
    }

    #[test]
    fn the_counts_remembered_stay_bounded() {
        let t = FailedTokens::new(1);
        for i in 0..(MAX_SOURCES as u32 + 100) {
            let who = Presenter {
                addr: IpAddr::from(i.to_be_bytes()),
                mark: 1,
            };
            t.failed(who, "agents", Door::Agents, i64::from(i));
        }
        assert!(t.counts().len() <= MAX_SOURCES);
    }
}
