//! The slot a provider's policy is read from, once per call.

use std::sync::{Arc, RwLock};

use super::GuardedPolicy;

/// Where the executor finds a provider's guarded policy: read once when a call begins, and
/// replaced whole by a reload. A call keeps the [`Arc`] it read, so it plans, reads and
/// retries every attempt on one version, however many reloads happen meanwhile; the old
/// version is dropped when its last call ends.
///
/// The lock is held only to clone or replace the pointer, never across a plugin call.
#[derive(Debug)]
pub struct PolicySlot {
    current: RwLock<Arc<GuardedPolicy>>,
}

impl PolicySlot {
    /// A slot holding `policy`.
    pub fn new(policy: Arc<GuardedPolicy>) -> Self {
        Self {
            current: RwLock::new(policy),
        }
    }

    /// The policy new calls run on.
    pub fn current(&self) -> Arc<GuardedPolicy> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Puts `policy` in place for the calls that begin from now on; returns the one it
    /// replaces (calls already running keep it).
    pub fn replace(&self, policy: Arc<GuardedPolicy>) -> Arc<GuardedPolicy> {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *current, policy)
    }
}
