//! What calls met lately — the providers' 429s and the waits in the admission queue — kept
//! for an operator to look at (`sluice serve`'s console).
//!
//! A 429 the retry loop absorbs never reaches the caller: the call waits and is sent again
//! within its budget. That is the point, but it hides a storm from the people who watch
//! quotas. The counters ([`crate::observe::RESPONSES_429`],
//! [`crate::observe::ADMISSION_WAIT`]) say how many and how long in aggregate; these rings
//! say which paths and tenants, and when. Each keeps a fixed number of entries (a storm
//! costs no memory) and nothing about a request beyond its sanitized path and its tenant: no
//! query, no body, no header.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// How many 429s are kept.
pub const KEPT_429S: usize = 64;
/// How many admission waits are kept.
pub const KEPT_WAITS: usize = 4096;

/// One 429 a provider answered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Answered429 {
    /// When (wall ms).
    pub at_ms: i64,
    /// The path: `provider credential METHOD /route` (ids replaced by `{}`).
    pub path: String,
    /// The tenant the call is billed to.
    pub tenant: String,
    /// The attempt that was answered (from 1).
    pub attempt: u32,
}

/// How long one attempt of a call waited in the admission queue before it was admitted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Waited {
    /// When it was admitted (wall ms).
    pub at_ms: i64,
    /// The tenant the call is billed to.
    pub tenant: String,
    /// How long it queued.
    pub waited_ms: u64,
}

/// The last [`KEPT_429S`] 429s and [`KEPT_WAITS`] waits, oldest first.
#[derive(Debug, Default)]
pub(super) struct Recent {
    answered_429: Mutex<VecDeque<Answered429>>,
    waits: Mutex<VecDeque<Waited>>,
}

fn push<T>(mut ring: MutexGuard<'_, VecDeque<T>>, kept: usize, item: T) {
    if ring.len() >= kept {
        ring.pop_front();
    }
    ring.push_back(item);
}

impl Recent {
    pub(super) fn answered_429(&self, answered: Answered429) {
        let ring = self
            .answered_429
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        push(ring, KEPT_429S, answered);
    }

    pub(super) fn waited(&self, waited: Waited) {
        let ring = self.waits.lock().unwrap_or_else(PoisonError::into_inner);
        push(ring, KEPT_WAITS, waited);
    }

    pub(super) fn list_429s(&self) -> Vec<Answered429> {
        let ring = self
            .answered_429
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        ring.iter().cloned().collect()
    }

    pub(super) fn each_wait_since(&self, since_ms: i64, mut each: impl FnMut(&str, u64)) {
        let ring = self.waits.lock().unwrap_or_else(PoisonError::into_inner);
        for w in ring.iter().filter(|w| w.at_ms > since_ms) {
            each(&w.tenant, w.waited_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ring_keeps_the_last_ones_oldest_first() {
        let recent = Recent::default();
        for i in 0..(KEPT_429S as i64 + 3) {
            recent.answered_429(Answered429 {
                at_ms: i,
                path: "p c GET /x".into(),
                tenant: "acme".into(),
                attempt: 1,
            });
        }
        let list = recent.list_429s();
        assert_eq!(list.len(), KEPT_429S);
        assert_eq!(list[0].at_ms, 3);
        assert_eq!(list[KEPT_429S - 1].at_ms, KEPT_429S as i64 + 2);
        for i in 0..(KEPT_WAITS as u64 + 1) {
            recent.waited(Waited {
                at_ms: 0,
                tenant: "acme".into(),
                waited_ms: i,
            });
        }
        let mut waits = Vec::new();
        recent.each_wait_since(i64::MIN, |_, ms| waits.push(ms));
        assert_eq!((waits.len(), waits[0]), (KEPT_WAITS, 1));
        let mut later = 0;
        recent.each_wait_since(0, |_, _| later += 1);
        assert_eq!(later, 0, "a wait at the instant given is not after it");
    }
}
