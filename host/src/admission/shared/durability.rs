//! Whether the store can lose a claim. A claim is the only record, outside a host, that an
//! action was taken: one that disappears while the store's ownership epoch stays lets a
//! second host claim the action and send it again. Redis drops single keys in two ways the
//! epoch cannot see —
//!
//! - eviction: with a `maxmemory` and any policy but `noeviction`, Redis deletes keys to
//!   make room, and claims (which expire after 30 days) are exactly what `volatile-*`
//!   policies pick;
//! - a restart that loads an older snapshot: without the append-only file, a Redis that
//!   crashes comes back with its last RDB snapshot, which lacks every claim made since.
//!
//! So before a host claims, it asks the store how it keeps keys (`INFO`), and refuses writes
//! while it could lose one ([`Vanishing`]), unless the operator accepted the risk
//! (`[store] accept_claim_loss`). The answer is asked again every [`RECHECK`], so a store
//! reconfigured at run time is seen. What this cannot see: a replica promoted before it had
//! a claim, and with `appendfsync everysec` (Redis's default) the last second of claims
//! when the machine under Redis (not only the Redis process) crashes; docs/shared-state.md
//! says how to close both.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::answers::StoreError;

/// How often a host asks again how the store keeps keys.
pub const RECHECK: Duration = Duration::from_secs(10);

/// Why the store can lose a claim: each setting that allows it, with its fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the shared store can lose a claim, and a second host would then send the action again: \
     {}. Writes are refused until it cannot (docs/shared-state.md); or accept the risk with \
     [store] accept_claim_loss = true",
    reasons.join("; ")
)]
pub struct Vanishing {
    /// What allows it, and how to stop it.
    pub reasons: Vec<String>,
}

/// Judges the text of Redis's `INFO` (its `memory` and `persistence` sections at least).
///
/// # Errors
/// [`Vanishing`] naming every setting that lets the store lose a key: eviction (a
/// `maxmemory` with a policy other than `noeviction`), no append-only file, or a section
/// missing from the answer (the store does not say, so it cannot be trusted).
pub fn judge(info: &str) -> Result<(), Vanishing> {
    let field = |name: &str| {
        info.lines()
            .filter_map(|l| l.trim_end_matches('\r').split_once(':'))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.trim())
    };
    let mut reasons = Vec::new();
    match (field("maxmemory"), field("maxmemory_policy")) {
        (Some("0"), Some(_)) | (Some(_), Some("noeviction")) => {}
        (Some(limit), Some(policy)) => reasons.push(format!(
            "maxmemory-policy is {policy} with maxmemory {limit}, so Redis evicts keys when \
             full (set maxmemory-policy noeviction, or maxmemory 0)"
        )),
        _ => reasons.push(
            "the store's INFO does not say how it evicts keys (maxmemory, maxmemory_policy)"
                .to_owned(),
        ),
    }
    match field("aof_enabled") {
        Some("1") => {}
        Some(_) => reasons.push(
            "appendonly is off, so a restart loads an older snapshot or nothing (set \
             appendonly yes)"
                .to_owned(),
        ),
        None => reasons.push(
            "the store's INFO does not say whether it keeps an append-only file (aof_enabled)"
                .to_owned(),
        ),
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Vanishing { reasons })
    }
}

impl super::Gate {
    /// Whether the store can lose a claim: the answer asked at most [`RECHECK`] ago, or
    /// asked now. Always `Ok` when the operator accepted the risk.
    ///
    /// # Errors
    /// [`StoreError`] when the store does not answer.
    pub(super) async fn claims_kept(&self) -> Result<Result<(), Vanishing>, StoreError> {
        if self.config().accept_claim_loss {
            return Ok(Ok(()));
        }
        let now = self.clock_now();
        if let Some(answer) = self.durability().fresh(now) {
            return Ok(answer);
        }
        let answer = match self.store().info().await {
            Ok(info) => judge(&info),
            // Asked and refused (INFO renamed away): the store does not say.
            Err(StoreError::Redis(e)) if refused(&e) => Err(Vanishing {
                reasons: vec![format!("the store refuses INFO ({e}), so it does not say")],
            }),
            Err(e) => return Err(e),
        };
        self.durability().keep(now, answer.clone());
        Ok(answer)
    }
}

/// Whether Redis refused the command itself (renamed away, or not allowed to this user),
/// rather than failing to answer.
fn refused(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    e.contains("unknown command") || e.contains("noperm")
}

/// The last answer, and when it was asked.
#[derive(Debug, Default)]
pub(super) struct Durability {
    last: Mutex<Option<(Instant, Result<(), Vanishing>)>>,
}

impl Durability {
    /// The last answer if it is younger than [`RECHECK`] at `now`.
    pub(super) fn fresh(&self, now: Instant) -> Option<Result<(), Vanishing>> {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.as_ref()
            .filter(|(at, _)| now.saturating_duration_since(*at) < RECHECK)
            .map(|(_, answer)| answer.clone())
    }

    /// Keeps `answer`, asked at `now`; says so in the log when it changed.
    pub(super) fn keep(&self, now: Instant, answer: Result<(), Vanishing>) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = last.as_ref().is_none_or(|(_, before)| *before != answer);
        if changed {
            match &answer {
                Ok(()) => {
                    tracing::info!("the shared store cannot lose a claim: writes are claimed")
                }
                Err(e) => tracing::error!("{e}"),
            }
        }
        *last = Some((now, answer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(maxmemory: Option<&str>, policy: Option<&str>, aof: Option<&str>) -> String {
        let mut text = String::from("# Memory\r\nused_memory:1024\r\n");
        if let Some(m) = maxmemory {
            text.push_str(&format!("maxmemory:{m}\r\n"));
        }
        if let Some(p) = policy {
            text.push_str(&format!("maxmemory_policy:{p}\r\n"));
        }
        text.push_str("\r\n# Persistence\r\nloading:0\r\n");
        if let Some(a) = aof {
            text.push_str(&format!("aof_enabled:{a}\r\n"));
        }
        text
    }

    #[test]
    fn only_a_store_that_neither_evicts_nor_forgets_on_restart_is_trusted() {
        let policies = [
            "noeviction",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
        ];
        for maxmemory in [None, Some("0"), Some("104857600")] {
            for policy in policies.iter().map(|p| Some(*p)).chain([None]) {
                for aof in [None, Some("0"), Some("1")] {
                    let text = info(maxmemory, policy, aof);
                    let evicts = match (maxmemory, policy) {
                        (Some("0"), Some(_)) => false,
                        (Some(_), Some(p)) => p != "noeviction",
                        _ => true, // not said: not trusted
                    };
                    let forgets = aof != Some("1");
                    let verdict = judge(&text);
                    assert_eq!(
                        verdict.is_ok(),
                        !evicts && !forgets,
                        "{maxmemory:?} {policy:?} {aof:?}: {verdict:?}"
                    );
                    if let Err(v) = verdict {
                        assert_eq!(v.reasons.len(), usize::from(evicts) + usize::from(forgets));
                        let said = v.to_string();
                        assert!(said.contains("accept_claim_loss"), "{said}");
                        if evicts && policy.is_some() && maxmemory.is_some() {
                            assert!(said.contains("maxmemory-policy noeviction"), "{said}");
                        }
                        if forgets && aof.is_some() {
                            assert!(said.contains("appendonly yes"), "{said}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn an_answer_is_kept_for_a_while_then_asked_again() {
        let d = Durability::default();
        #[allow(clippy::disallowed_methods, reason = "an anchor for offsets in a test")]
        let t0 = Instant::now();
        assert_eq!(d.fresh(t0), None);
        d.keep(t0, Ok(()));
        assert_eq!(d.fresh(t0 + RECHECK / 2), Some(Ok(())));
        assert_eq!(d.fresh(t0 + RECHECK), None);
    }
}
