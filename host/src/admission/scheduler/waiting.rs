//! What the scheduler keeps about waiting requests beside their flows: each task's requests,
//! for a cancel to find them, and every deadline, for expiry in deadline order. Both hold
//! ids that may have left the queue since; those are skipped, and swept before they
//! outnumber the live ones.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::TaskId;
use crate::admission::bucket::Nanos;
use crate::admission::fair::RequestId;

/// One task's waiting requests.
#[derive(Debug, Default)]
struct TaskEntry {
    requests: Vec<RequestId>,
    live: u32,
}

/// Each task's waiting requests.
#[derive(Debug, Default)]
pub(super) struct TaskRequests(HashMap<TaskId, TaskEntry>);

impl TaskRequests {
    /// `id` of `task` is waiting.
    pub(super) fn add(&mut self, task: TaskId, id: RequestId) {
        let entry = self.0.entry(task).or_default();
        entry.requests.push(id);
        entry.live += 1;
    }

    /// A request of `task` left the queue; `alive` says which of its ids still wait.
    pub(super) fn left(&mut self, task: TaskId, alive: impl Fn(RequestId) -> bool) {
        let Some(entry) = self.0.get_mut(&task) else {
            return;
        };
        entry.live -= 1;
        if entry.live == 0 {
            self.0.remove(&task);
        } else if entry.requests.len() > 2 * entry.live as usize + 16 {
            entry.requests.retain(|id| alive(*id));
        }
    }

    /// Takes every id `task` queued (some may have left the queue since).
    pub(super) fn take(&mut self, task: TaskId) -> Vec<RequestId> {
        self.0.remove(&task).map(|e| e.requests).unwrap_or_default()
    }
}

/// Every waiting request's deadline, nearest first.
#[derive(Debug, Default)]
pub(super) struct Deadlines {
    heap: BinaryHeap<Reverse<(Nanos, RequestId)>>,
    /// Numbers requests with a deadline in arrival order, for ties between equal deadlines.
    seq: u64,
}

impl Deadlines {
    /// `id` must be admitted by `deadline`; returns its place in arrival order.
    pub(super) fn push(&mut self, deadline: Nanos, id: RequestId) -> u64 {
        self.seq += 1;
        self.heap.push(Reverse((deadline, id)));
        self.seq
    }

    /// Sweeps the ids that left the queue when they outnumber the `live` ones.
    pub(super) fn sweep(&mut self, live: usize, alive: impl Fn(RequestId) -> bool) {
        if self.heap.len() > 2 * live + 64 {
            self.heap.retain(|Reverse((_, id))| alive(*id));
        }
    }

    /// The next waiting request whose deadline passed before `now`, taken off.
    pub(super) fn pop_expired(
        &mut self,
        now: Nanos,
        alive: impl Fn(RequestId) -> bool,
    ) -> Option<RequestId> {
        self.drop_stale(&alive);
        match self.heap.peek() {
            Some(&Reverse((deadline, id))) if deadline < now => {
                self.heap.pop();
                Some(id)
            }
            _ => None,
        }
    }

    /// Drops the ids at the top that left the queue, so that [`Deadlines::next`] is a live
    /// request's.
    pub(super) fn drop_stale(&mut self, alive: impl Fn(RequestId) -> bool) {
        while let Some(&Reverse((_, id))) = self.heap.peek() {
            if alive(id) {
                break;
            }
            self.heap.pop();
        }
    }

    /// The entries kept, live or not.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// The nearest deadline.
    pub(super) fn next(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }
}
