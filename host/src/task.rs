//! A task: the unit of an agent's work that is cancelled, budgeted and decided on as one.
//!
//! Its state lives in four places, and this is the map:
//!
//! - its identity: a [`TaskId`], derived from the task's name by [`TaskId::named`], so the
//!   same name is the same task in every host and after every restart;
//! - in this host's memory, [`Tasks`]: the tasks cancelled here (a call of one is refused,
//!   and a retry of one asleep sends nothing when it wakes), and the attempts each has
//!   spent against [`RetryConfig::task_max_attempts`](crate::retry::RetryConfig);
//! - in admission: its requests waiting in the queue, which
//!   [`Admission::cancel`](crate::admission::Admission::cancel) removes at once;
//! - in the journal, durably: the cancelled tasks (`Journal::cancel_task`), and a task whose
//!   time budget is spent and waits for a person (`Journal::awaits_decision`): such a task
//!   sends nothing, in this host or after a restart, until the decision is applied.
//!
//! [`Executor::cancel_task`](crate::execute::Executor::cancel_task) cancels in memory and in
//! admission; [`Writes::cancel_task`](crate::writes::Writes::cancel_task) also in the
//! journal, so that a restarted host never wakes the task's writes.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

/// A task's identity: cancelling it removes all its waiting requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskId(pub u64);

impl TaskId {
    /// The id of the task named `name`: one per name, stable across builds, processes and
    /// restarts (FNV-1a, unlike the std hasher).
    pub fn named(name: &str) -> Self {
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Self(hash)
    }
}

/// What this host knows of its tasks: which are cancelled, and the attempts each spent.
#[derive(Debug, Default)]
pub struct Tasks {
    cancelled: Mutex<HashSet<TaskId>>,
    attempts: Mutex<HashMap<TaskId, u32>>,
    /// The most attempts one task may send over all its calls; 0: no bound.
    max_attempts: u32,
}

impl Tasks {
    /// No task cancelled yet; each may send `max_attempts` attempts (0: any number).
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts,
            ..Self::default()
        }
    }

    /// Cancels `task` here: none of its calls sends again.
    pub fn cancel(&self, task: TaskId) {
        lock(&self.cancelled).insert(task);
    }

    /// Lets a cancelled `task` send again (a person approved its continued access).
    pub fn resume(&self, task: TaskId) {
        lock(&self.cancelled).remove(&task);
    }

    /// Whether `task` was cancelled here.
    pub fn is_cancelled(&self, task: TaskId) -> bool {
        lock(&self.cancelled).contains(&task)
    }

    /// Counts one attempt of `task`; `false` when its budget is spent (and nothing is
    /// counted). A call of no task is not counted.
    pub fn count_attempt(&self, task: Option<TaskId>) -> bool {
        let Some(task) = task else {
            return true;
        };
        if self.max_attempts == 0 {
            return true;
        }
        let mut attempts = lock(&self.attempts);
        let n = attempts.entry(task).or_default();
        if *n >= self.max_attempts {
            return false;
        }
        *n += 1;
        true
    }

    /// The attempt budget of one task (0: no bound).
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Forgets what `task` spent: when the task ends.
    pub fn forget(&self, task: TaskId) {
        lock(&self.attempts).remove(&task);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_the_same_task_in_every_process() {
        assert_eq!(TaskId::named("report-42"), TaskId::named("report-42"));
        assert_ne!(TaskId::named("report-42"), TaskId::named("report-43"));
        // FNV-1a of the empty name is its offset basis: the hash is the published one.
        assert_eq!(TaskId::named(""), TaskId(0xcbf2_9ce4_8422_2325));
    }

    #[test]
    fn a_task_budget_counts_attempts_until_it_is_spent_and_a_task_less_call_is_free() {
        let tasks = Tasks::new(2);
        let t = Some(TaskId(1));
        assert!(tasks.count_attempt(t));
        assert!(tasks.count_attempt(t));
        assert!(!tasks.count_attempt(t));
        assert!(tasks.count_attempt(Some(TaskId(2))));
        assert!(tasks.count_attempt(None));
        tasks.forget(TaskId(1));
        assert!(tasks.count_attempt(t));
        assert!(Tasks::new(0).count_attempt(t), "0 is no bound");
    }

    #[test]
    fn a_cancelled_task_can_be_resumed() {
        let tasks = Tasks::new(0);
        tasks.cancel(TaskId(7));
        assert!(tasks.is_cancelled(TaskId(7)));
        assert!(!tasks.is_cancelled(TaskId(8)));
        tasks.resume(TaskId(7));
        assert!(!tasks.is_cancelled(TaskId(7)));
    }
}
