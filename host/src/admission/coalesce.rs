//! Coalescing identical immutable reads: while one read is in flight, callers that ask for
//! the same thing wait for its answer instead of queueing a second call.
//!
//! Only the caller knows whether a read may be shared: a model list or a file's content may,
//! a balance or an approval state may not (freshness changes their meaning). So nothing is
//! coalesced unless the caller names a key for it, and the key is the caller's statement
//! that two reads are interchangeable. Followers take no quota and no queue place; only the
//! leader is admitted and sent.
//!
#![cfg_attr(feature = "internals", doc = "```")]
#![cfg_attr(not(feature = "internals"), doc = "```ignore")]
//! use sluice::admission::coalesce::{Coalescer, Joined};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let reads: Coalescer<String, String> = Coalescer::new();
//! let Joined::Leader(lead) = reads.join("GET /v1/models".into()) else { unreachable!() };
//! let Joined::Follower(follow) = reads.join("GET /v1/models".into()) else { unreachable!() };
//! lead.finish("gpt-4o, gpt-4o-mini".into()); // the leader sent the call and got this
//! assert_eq!(follow.wait().await.unwrap(), "gpt-4o, gpt-4o-mini");
//! # });
//! ```

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

/// The reads in flight, by the caller's key.
pub struct Coalescer<K, V> {
    in_flight: Arc<Mutex<HashMap<K, watch::Receiver<Option<V>>>>>,
}

impl<K, V> fmt::Debug for Coalescer<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Coalescer").field("in_flight", &n).finish()
    }
}

impl<K, V> Clone for Coalescer<K, V> {
    fn clone(&self) -> Self {
        Self {
            in_flight: self.in_flight.clone(),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Default for Coalescer<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

/// What [`Coalescer::join`] makes of a read.
#[derive(Debug)]
pub enum Joined<K: Hash + Eq + Clone, V: Clone> {
    /// No identical read is in flight: this caller sends it and shares the answer.
    Leader(Lead<K, V>),
    /// An identical read is in flight: wait for its answer.
    Follower(Follow<V>),
}

/// The read that is sent. Dropping it without [`Lead::finish`] (an error, a cancellation)
/// releases the followers with [`LeaderGone`], so each can send its own read.
pub struct Lead<K: Hash + Eq + Clone, V: Clone> {
    key: Option<K>,
    tx: watch::Sender<Option<V>>,
    in_flight: Arc<Mutex<HashMap<K, watch::Receiver<Option<V>>>>>,
}

impl<K: Hash + Eq + Clone, V: Clone> fmt::Debug for Lead<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lead")
            .field("followers", &self.tx.receiver_count().saturating_sub(1))
            .finish()
    }
}

/// A read waiting on an identical one in flight.
#[derive(Debug)]
pub struct Follow<V> {
    rx: watch::Receiver<Option<V>>,
}

/// The leading read ended without an answer to share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the identical read this one waited on ended without an answer; send it again")]
pub struct LeaderGone;

impl<K: Hash + Eq + Clone, V: Clone> Coalescer<K, V> {
    /// No reads in flight.
    pub fn new() -> Self {
        Self {
            in_flight: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Leads the read named `key`, or follows the identical one in flight.
    pub fn join(&self, key: K) -> Joined<K, V> {
        let mut map = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(rx) = map.get(&key) {
            return Joined::Follower(Follow { rx: rx.clone() });
        }
        let (tx, rx) = watch::channel(None);
        map.insert(key.clone(), rx);
        Joined::Leader(Lead {
            key: Some(key),
            tx,
            in_flight: self.in_flight.clone(),
        })
    }

    /// Reads in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Lead<K, V> {
    /// Shares the answer with every follower. Reads joining after this lead their own.
    pub fn finish(mut self, value: V) {
        self.forget();
        // No receivers is fine: nobody followed.
        let _ = self.tx.send(Some(value));
    }

    /// How many callers wait on this read.
    pub fn followers(&self) -> usize {
        self.tx.receiver_count().saturating_sub(1)
    }

    fn forget(&mut self) {
        if let Some(key) = self.key.take() {
            self.in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Drop for Lead<K, V> {
    fn drop(&mut self) {
        self.forget();
    }
}

impl<V: Clone> Follow<V> {
    /// The leader's answer.
    ///
    /// # Errors
    /// [`LeaderGone`] when the leading read ended without one.
    pub async fn wait(mut self) -> Result<V, LeaderGone> {
        match self.rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().ok_or(LeaderGone),
            Err(_) => Err(LeaderGone),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn followers_share_the_leaders_answer_and_later_reads_lead_again() {
        rt().block_on(async {
            let c: Coalescer<&str, u32> = Coalescer::new();
            let Joined::Leader(lead) = c.join("a") else {
                panic!()
            };
            let followers: Vec<_> = (0..3)
                .map(|_| match c.join("a") {
                    Joined::Follower(f) => f,
                    Joined::Leader(_) => panic!("a second leader"),
                })
                .collect();
            assert!(matches!(c.join("b"), Joined::Leader(_)), "other keys lead");
            assert_eq!(lead.followers(), 3);
            lead.finish(7);
            for f in followers {
                assert_eq!(f.wait().await, Ok(7));
            }
            assert_eq!(c.in_flight(), 0);
            assert!(matches!(c.join("a"), Joined::Leader(_)));
        });
    }

    #[test]
    fn a_leader_dropped_without_an_answer_releases_its_followers() {
        rt().block_on(async {
            let c: Coalescer<&str, u32> = Coalescer::new();
            let lead = c.join("a");
            let Joined::Follower(f) = c.join("a") else {
                panic!()
            };
            drop(lead);
            assert_eq!(f.wait().await, Err(LeaderGone));
            assert_eq!(c.in_flight(), 0);
        });
    }
}
