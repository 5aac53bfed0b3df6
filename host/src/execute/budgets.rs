//! What a call may spend beyond its own class budget: its task's attempts (and whether the
//! task was cancelled: [`crate::task`] keeps both), its scope's places for delayed retries,
//! and the holds a spent quota puts on its scope.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::{Call, Executor};
use crate::admission::{Hold, ScopeKey, TaskId};

/// A call's place among its scope's delayed retries, given back when dropped.
pub(super) struct Delayed<'a> {
    map: &'a Mutex<HashMap<(String, String), u32>>,
    key: (String, String),
}

impl Drop for Delayed<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = map.get_mut(&self.key) {
            *n = n.saturating_sub(1);
        }
    }
}

impl Executor {
    /// The hold a spent quota put on `provider`/`credential`'s scope, if one is in force.
    pub fn quota_hold(&self, provider: &str, credential: &str) -> Option<Hold> {
        let key = credential_scope(provider, credential);
        let now = self.admission.now();
        self.admission
            .with_scheduler(|s| s.hold_of(now, &key))
            .filter(|h| h.reason.starts_with(QUOTA_EXHAUSTED))
    }

    /// Lifts the hold on `provider`/`credential`'s scope: a person raised the quota.
    pub fn lift_hold(&self, provider: &str, credential: &str) {
        let key = credential_scope(provider, credential);
        let now = self.admission.now();
        self.admission.with_scheduler(|s| s.lift(now, &key));
    }

    /// Counts one attempt of `task`; `false` when its budget is spent.
    pub(super) fn count_task_attempt(&self, task: Option<TaskId>) -> bool {
        self.tasks.count_attempt(task)
    }

    /// Cancels `task`: its waiting calls are refused at once, and a retry of it that is
    /// asleep sends nothing when it wakes, nor does a call of it waiting at the shared
    /// store's gate when it passes. Returns how many calls were removed from the queue.
    /// (In this host's memory: [`Writes::cancel_task`](crate::writes::Writes::cancel_task)
    /// also cancels it in the journal; see [`crate::task`].)
    pub fn cancel_task(&self, task: TaskId) -> usize {
        self.tasks.cancel(task);
        self.admission.cancel(task)
    }

    /// Lets a cancelled `task` send again (a person approved its continued access).
    pub fn resume_task(&self, task: TaskId) {
        self.tasks.resume(task);
    }

    /// Whether `task` was cancelled.
    pub fn is_cancelled(&self, task: TaskId) -> bool {
        self.tasks.is_cancelled(task)
    }

    /// Forgets what `task` spent: call it when the task ends.
    pub fn forget_task(&self, task: TaskId) {
        self.tasks.forget(task);
    }

    /// A place among the scope's delayed retries, if one is free.
    pub(super) fn delay_place<'a>(&'a self, call: &Call) -> Option<Delayed<'a>> {
        let key = (call.provider.clone(), call.credential.clone());
        let mut map = self.delayed.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.entry(key.clone()).or_default();
        if *n >= self.retry.max_delayed_requests {
            return None;
        }
        *n += 1;
        Some(Delayed {
            map: &self.delayed,
            key,
        })
    }

    /// Calls of `provider`/`credential` waiting to retry now.
    pub fn delayed(&self, provider: &str, credential: &str) -> u32 {
        let map = self.delayed.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&(provider.to_owned(), credential.to_owned()))
            .copied()
            .unwrap_or(0)
    }
}

/// How the hold of a spent quota's scope begins its reason.
pub const QUOTA_EXHAUSTED: &str = "quota exhausted";

fn credential_scope(provider: &str, credential: &str) -> ScopeKey {
    ScopeKey::Provider {
        provider: provider.into(),
        credential: credential.into(),
        name: None,
    }
}
