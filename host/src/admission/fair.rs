//! The fair queue of one lane: strict priority between classes, and start-time fair queuing
//! (SFQ) between tenants within a class.
//!
//! Why SFQ: each tenant's backlog is a *flow*; the flow whose head request has the smallest
//! virtual start tag goes next, and serving a request of size `s` moves its flow's tag on by
//! `s / weight`. Over any busy period each backlogged tenant receives service in proportion to
//! its weight, within one request's size, however many requests it queues: a tenant sending
//! a hundred times more only lengthens its own flow. Sizes are the time a request occupies its
//! scarcest quota, so a 4 000-token call counts for forty 100-token calls. Choosing costs
//! O(log flows), with no per-round scan, so 100 000 tenants cost what 10 do, nearly.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::usage::Usage;

slotmap::new_key_type! {
    /// One queued request.
    pub struct RequestId;
    /// One tenant's backlog in one class of one lane.
    pub(crate) struct FlowId;
}

/// The queue class of a request, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// A person or an agent in a live conversation waits on it.
    Interactive = 0,
    /// Ordinary agent work.
    Standard = 1,
    /// Batch or maintenance work that may wait.
    Background = 2,
}

impl Class {
    /// Every class, most urgent first.
    pub const ALL: [Self; 3] = [Self::Interactive, Self::Standard, Self::Background];

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl From<crate::policy::PriorityClass> for Class {
    fn from(c: crate::policy::PriorityClass) -> Self {
        use crate::policy::PriorityClass as P;
        match c {
            P::Interactive => Self::Interactive,
            P::Standard => Self::Standard,
            P::Background => Self::Background,
        }
    }
}

/// One tenant's backlog in one class of one lane.
#[derive(Debug)]
pub(crate) struct Flow {
    pub lane: u32,
    pub class: Class,
    pub tenant: u32,
    /// Queued requests, oldest first; cancelled ones are skipped when they reach the head.
    pub queue: VecDeque<RequestId>,
    /// Live requests in `queue`.
    pub live: u32,
    /// The virtual finish tag of the flow's last served request.
    pub finish: u64,
    /// Set aside until its tenant's quota or in-flight limit allows it.
    pub parked: bool,
}

/// The flows of one class of one lane, by start tag.
#[derive(Debug, Default)]
pub(crate) struct ClassQueue {
    pub(crate) heap: BinaryHeap<Reverse<(u64, u64, FlowId)>>,
    seq: u64,
    /// The virtual time: the start tag of the request served last.
    pub vtime: u64,
    /// Live queued requests.
    pub count: u32,
    /// Their total usage, for estimates of the wait behind them.
    pub queued: Usage,
    /// Heap entries whose flow was removed by withdrawals.
    pub stale: u32,
}

impl ClassQueue {
    /// Queues `flow` with the start tag of its head request.
    pub fn push(&mut self, flow: FlowId, finish: u64) {
        let start = finish.max(self.vtime);
        self.seq += 1;
        self.heap.push(Reverse((start, self.seq, flow)));
    }

    /// The flow to serve next, and its start tag.
    pub fn peek(&self) -> Option<(u64, FlowId)> {
        self.heap.peek().map(|Reverse((tag, _, f))| (*tag, *f))
    }

    /// Counts one more stale entry, and sweeps them all when they outnumber the live ones;
    /// `live` says whether a flow still belongs in the heap.
    pub fn stale(&mut self, live: impl Fn(FlowId) -> bool) {
        self.stale += 1;
        if self.stale as usize > 16 && 2 * self.stale as usize > self.heap.len() {
            self.heap.retain(|Reverse((_, _, f))| live(*f));
            self.stale = 0;
        }
    }

    /// Removes the flow [`ClassQueue::peek`] returned.
    pub fn pop(&mut self) {
        self.heap.pop();
    }
}

/// Where a lane is in the scheduler's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LaneState {
    /// Nothing it can do: empty, or every flow parked.
    Idle,
    /// In the run queue.
    Runnable,
    /// Registered with one of its scopes, which wakes it.
    Waiting,
}

/// The requests that charge one set of scopes.
#[derive(Debug)]
pub(crate) struct Lane {
    /// The scopes every request of the lane charges (the credential's first).
    pub scopes: Box<[u32]>,
    pub classes: [ClassQueue; 3],
    pub state: LaneState,
    /// The scope whose waiters list holds this lane, while it waits.
    pub waiting_on: Option<u32>,
}

impl Lane {
    pub fn new(scopes: Box<[u32]>) -> Self {
        Self {
            scopes,
            classes: Default::default(),
            state: LaneState::Idle,
            waiting_on: None,
        }
    }

    /// The usage queued in classes as urgent as `class` or more.
    pub fn ahead(&self, class: Class) -> Usage {
        let mut sum = Usage::default();
        for q in &self.classes[..=class.index()] {
            sum.add(&q.queued);
        }
        sum
    }
}
