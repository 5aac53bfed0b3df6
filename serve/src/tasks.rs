//! The tasks agents named (`x-sluice-task`) and what this sidecar did for each: the admin
//! API lists them and cancels them by name.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

/// The most tasks remembered; the longest idle ones are forgotten first.
const MAX_TASKS: usize = 10_000;

/// One task as the sidecar saw it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TaskRow {
    /// Its name.
    pub task: String,
    /// The agent whose calls named it first.
    pub agent: String,
    /// Its tenant.
    pub tenant: String,
    /// Its calls being served now.
    pub in_flight: u32,
    /// Its calls served in all.
    pub calls: u64,
    /// When it was last named, in milliseconds since the Unix epoch.
    pub last_seen_ms: i64,
    /// Whether it was cancelled.
    pub cancelled: bool,
}

/// The tasks, by name.
#[derive(Debug, Default)]
pub struct TaskBoard {
    rows: Mutex<HashMap<String, TaskRow>>,
}

impl TaskBoard {
    fn rows(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRow>> {
        self.rows.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call of `task` begins. Returns the task forgotten to make room for it, if one was:
    /// its other state (its attempts spent) is to be forgotten too.
    pub fn begin(&self, task: &str, agent: &str, tenant: &str, now_ms: i64) -> Option<String> {
        let mut rows = self.rows();
        let mut evicted = None;
        if rows.len() >= MAX_TASKS && !rows.contains_key(task) {
            let idle = rows
                .values()
                .filter(|r| r.in_flight == 0 && !r.cancelled)
                .min_by_key(|r| r.last_seen_ms)
                .map(|r| r.task.clone());
            if let Some(idle) = idle {
                rows.remove(&idle);
                evicted = Some(idle);
            }
        }
        let row = rows.entry(task.to_owned()).or_insert_with(|| TaskRow {
            task: task.to_owned(),
            agent: agent.to_owned(),
            tenant: tenant.to_owned(),
            in_flight: 0,
            calls: 0,
            last_seen_ms: now_ms,
            cancelled: false,
        });
        row.in_flight += 1;
        row.calls += 1;
        row.last_seen_ms = now_ms;
        evicted
    }

    /// Forgets `task` if none of its calls is being served and it was not cancelled;
    /// whether it was forgotten.
    pub fn forget_idle(&self, task: &str) -> bool {
        let mut rows = self.rows();
        let idle = rows
            .get(task)
            .is_some_and(|r| r.in_flight == 0 && !r.cancelled);
        if idle {
            rows.remove(task);
        }
        idle
    }

    /// A call of `task` ended.
    pub fn end(&self, task: &str) {
        if let Some(row) = self.rows().get_mut(task) {
            row.in_flight = row.in_flight.saturating_sub(1);
        }
    }

    /// Marks `task` cancelled; `false` when no call ever named it here.
    pub fn cancelled(&self, task: &str) -> bool {
        self.rows()
            .get_mut(task)
            .map(|row| row.cancelled = true)
            .is_some()
    }

    /// Every task, most recently seen first.
    pub fn list(&self) -> Vec<TaskRow> {
        let mut rows: Vec<TaskRow> = self.rows().values().cloned().collect();
        rows.sort_by(|a, b| {
            b.last_seen_ms
                .cmp(&a.last_seen_ms)
                .then(a.task.cmp(&b.task))
        });
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_counts_its_calls_and_remembers_its_cancellation() {
        let board = TaskBoard::default();
        board.begin("t1", "bot", "acme", 10);
        board.begin("t1", "bot", "acme", 20);
        board.end("t1");
        board.begin("t2", "bot", "acme", 30);
        let rows = board.list();
        assert_eq!(rows[0].task, "t2");
        assert_eq!((rows[1].calls, rows[1].in_flight), (2, 1));
        assert!(board.cancelled("t1"));
        assert!(!board.cancelled("nope"));
        assert!(board.list()[1].cancelled);
    }
}
