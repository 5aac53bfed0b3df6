//! What a call may spend beyond its own class budget: its task's attempts (and whether the
//! task was cancelled: [`crate::task`] keeps both), its scope's places for delayed retries
//! (its tenant's share of them: [`super::places`]), and the holds a spent quota puts on its
//! scope.

use super::Executor;
use crate::admission::{Hold, ScopeKey, TaskId};

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

    /// Calls of `provider`/`credential` waiting to retry now.
    pub fn delayed(&self, provider: &str, credential: &str) -> u32 {
        self.delayed.taken(provider, credential)
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
