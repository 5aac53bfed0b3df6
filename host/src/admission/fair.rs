//! The fair queue of one lane, hierarchical: start-time fair queuing (SFQ) between tenants,
//! whatever the classes of their requests; within a tenant, its classes in priority order
//! (interactive, then standard, then background) and, within a class, the nearest deadline
//! first — with a bounded exception for a request that would otherwise miss its deadline.
//! A tenant's interactive requests come out of its own weighted share, ahead of its own
//! standard ones: declaring every request interactive gains a tenant nothing over the
//! others. Only the operator puts one tenant ahead of another: a lane has a few *bands*,
//! served in order, and a tier granted precedence queues its tenants in an earlier band
//! ([`band_of`]); every tier is in the same band unless so granted.
//!
//! Why SFQ: each tenant's backlog is a *flow*; the flow whose head request has the smallest
//! virtual start tag goes next, and serving a request of size `s` moves its flow's tag on by
//! `s / weight`. Over any busy period each backlogged tenant receives service in proportion to
//! its weight, within one request's size, however many requests it queues: a tenant sending
//! a hundred times more only lengthens its own flow. Sizes are the time a request occupies its
//! scarcest quota, so a 4 000-token call counts for forty 100-token calls. Choosing costs
//! O(log flows), with no per-round scan, so 100 000 tenants cost what 10 do, nearly.
//!
//! # Deadlines
//!
//! The design says "nearest deadline first". Plain earliest-deadline-first across tenants
//! would let a tenant stamp a near deadline on everything and take the whole scope, so
//! deadlines order requests in two places only, and fairness bounds both:
//!
//! - **Within a class of a tenant's flow**, requests with a deadline go first, nearest
//!   first, and those without one follow in arrival order (FIFO among equal deadlines).
//!   Reordering a flow does not touch its tags: a tenant only chooses which of its own
//!   requests spends its share.
//! - **Across the flows of a band**, the request with the band's nearest deadline goes
//!   ahead of the request whose turn it is (of its own flow's more urgent classes too) when
//!   waiting for that turn would make it late: its
//!   slack (deadline − now) is below its estimated wait behind the request whose turn it is,
//!   and it can still make its deadline if it goes first. It goes as late as that, not
//!   sooner, so the fair order is left alone whenever it meets the deadline anyway.
//! - **A jump is charged, and bounded.** The jumping flow's finish tag moves on by the
//!   request's size, as if it had been served in its turn, and the virtual time does not
//!   move: the flow keeps its place in the order, and the request it serves there starts
//!   from the moved tag, so its later requests come that much later. A flow may jump only
//!   while its finish tag is at most one request (of the jumping size) ahead of the virtual
//!   time, so a tenant gets at most about one request ahead of its weighted share by
//!   jumping, however many near deadlines it stamps; past that its requests wait their turn,
//!   and those that cannot wait expire. Nor does it jump a flow served less than it (whose
//!   request's start tag is below the jumping flow's finish tag): a tenant below its share
//!   never waits for another's deadlines.
//!
//! Requests without a deadline pay (nearly) nothing for this: they go through the same FIFO
//! as before, and a band that never held a request with a deadline skips the check on one
//! test (`docs/benchmarks/scheduler.md` has the figures). A request with a deadline is
//! refused at submit only if it cannot be met even ahead of its band's requests without one.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::bucket::Nanos;
use super::usage::Usage;

slotmap::new_key_type! {
    /// One queued request.
    pub struct RequestId;
    /// One tenant's backlog in one band of one lane.
    pub(crate) struct FlowId;
}

/// The queue class of a request, most urgent first. Serializes as `interactive`,
/// `standard` or `background`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
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

    /// Its name: `interactive`, `standard` or `background`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interactive => "interactive",
            Self::Standard => "standard",
            Self::Background => "background",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl From<crate::contract::PriorityClass> for Class {
    fn from(c: crate::contract::PriorityClass) -> Self {
        use crate::contract::PriorityClass as P;
        match c {
            P::Interactive => Self::Interactive,
            P::Standard => Self::Standard,
            P::Background => Self::Background,
        }
    }
}

/// Requests with a deadline, nearest first; among equal deadlines, in arrival order.
pub(crate) type ByDeadline = BinaryHeap<Reverse<(Nanos, u64, RequestId)>>;

/// One class of a tenant's backlog: requests with a deadline first, nearest first, then
/// the others in arrival order.
#[derive(Debug, Default)]
pub(crate) struct Sub {
    /// Queued requests without a deadline, oldest first; cancelled ones are skipped when they
    /// reach the head.
    pub queue: VecDeque<RequestId>,
    /// Queued requests with a deadline, served before `queue`. Boxed: most flows never hold
    /// one.
    pub urgent: Option<Box<ByDeadline>>,
    /// Live requests in `queue` and `urgent`.
    pub live: u32,
}

impl Sub {
    /// The request to serve next, dropping ids before it that are no longer `alive`.
    fn head(&mut self, alive: &impl Fn(RequestId) -> bool) -> Option<RequestId> {
        if let Some(urgent) = self.urgent.as_deref_mut() {
            while let Some(&Reverse((_, _, id))) = urgent.peek() {
                if alive(id) {
                    return Some(id);
                }
                urgent.pop();
            }
        }
        while let Some(&id) = self.queue.front() {
            if alive(id) {
                return Some(id);
            }
            self.queue.pop_front();
        }
        None
    }

    fn len(&self) -> usize {
        self.queue.len() + self.urgent.as_deref().map_or(0, BinaryHeap::len)
    }
}

/// One tenant's backlog in one band of one lane: its classes in priority order.
#[derive(Debug)]
pub(crate) struct Flow {
    pub lane: u32,
    /// The band of the lane it queues in: its tenant's tier's precedence.
    pub band: u8,
    pub tenant: u32,
    /// Its requests by class, most urgent first: the head of the first class with a live
    /// request is the flow's head.
    pub classes: [Sub; 3],
    /// Live requests in every class.
    pub live: u32,
    /// The virtual finish tag of the flow's last served request (or of the last one served
    /// ahead of its turn).
    pub finish: u64,
    /// Set aside until its tenant's quota or in-flight limit allows it.
    pub parked: bool,
}

impl Flow {
    /// An empty flow, not yet in its band's heap.
    pub fn new(lane: u32, band: u8, tenant: u32) -> Self {
        Self {
            lane,
            band,
            tenant,
            classes: Default::default(),
            live: 0,
            finish: 0,
            parked: false,
        }
    }

    /// Queues a request of `class` without a deadline, at the back of its class.
    pub fn push(&mut self, id: RequestId, class: Class) {
        let sub = &mut self.classes[class.index()];
        sub.queue.push_back(id);
        sub.live += 1;
        self.live += 1;
    }

    /// Queues a request of `class` with a deadline, in deadline order within its class;
    /// `seq` orders equal deadlines.
    pub fn push_by_deadline(&mut self, id: RequestId, class: Class, deadline: Nanos, seq: u64) {
        let sub = &mut self.classes[class.index()];
        sub.urgent
            .get_or_insert_default()
            .push(Reverse((deadline, seq, id)));
        sub.live += 1;
        self.live += 1;
    }

    /// A request of `class` left the flow.
    pub fn left(&mut self, class: Class) {
        self.classes[class.index()].live -= 1;
        self.live -= 1;
    }

    /// The request to serve next — the first live one of its most urgent class — dropping
    /// ids before it that are no longer `alive`.
    pub fn head(&mut self, alive: impl Fn(RequestId) -> bool) -> Option<RequestId> {
        self.classes.iter_mut().find_map(|sub| sub.head(&alive))
    }

    /// The request to serve next within `class`, dropping ids before it that are no longer
    /// `alive`.
    pub fn head_of(
        &mut self,
        class: Class,
        alive: impl Fn(RequestId) -> bool,
    ) -> Option<RequestId> {
        self.classes[class.index()].head(&alive)
    }

    /// Removes the head of `class`, which [`Flow::head`] or [`Flow::head_of`] returned:
    /// the nearest deadline when the class holds one, else the oldest.
    pub fn pop(&mut self, class: Class) {
        let sub = &mut self.classes[class.index()];
        match sub.urgent.as_deref_mut().filter(|u| !u.is_empty()) {
            Some(urgent) => {
                urgent.pop();
            }
            None => {
                sub.queue.pop_front();
            }
        }
    }

    /// Drops every id that is no longer `alive`, when they outnumber the live ones: a flow
    /// under submit-and-cancel churn does not grow without bound.
    pub fn sweep(&mut self, alive: impl Fn(RequestId) -> bool) {
        let held: usize = self.classes.iter().map(Sub::len).sum();
        if held > 2 * self.live as usize + 16 {
            for sub in &mut self.classes {
                sub.queue.retain(|id| alive(*id));
                if let Some(u) = sub.urgent.as_deref_mut() {
                    u.retain(|Reverse((_, _, id))| alive(*id));
                }
            }
        }
    }
}

/// The requests with a deadline queued in one band of one lane: the candidates to go ahead
/// of their turn.
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    /// Every one of them, nearest first; ids no longer queued are skipped at the top.
    pub heap: ByDeadline,
    /// Their total usage, for estimates of the wait of a request with a deadline.
    pub queued: Usage,
}

/// The flows of one band of one lane, by start tag.
#[derive(Debug, Default)]
pub(crate) struct BandQueue {
    pub(crate) heap: BinaryHeap<Reverse<(u64, u64, FlowId)>>,
    seq: u64,
    /// The virtual time: the start tag of the request served last in its turn.
    vtime: u64,
    /// Live queued requests.
    count: u32,
    /// Their total usage, for estimates of the wait behind them.
    queued: Usage,
    /// Heap entries whose flow was removed.
    stale: u32,
    /// The queued requests with a deadline. Boxed: most classes never hold one.
    deadlines: Option<Box<Deadlines>>,
}

impl BandQueue {
    /// Queues `flow`, whose last request finished at virtual time `finish`.
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

    /// Removes the flow [`BandQueue::peek`] returned.
    pub fn pop(&mut self) {
        self.heap.pop();
    }

    /// Removes the flow [`BandQueue::peek`] returned, which has nothing to serve: it was
    /// `removed` (its entry was counted stale), or set aside.
    pub fn drop_head(&mut self, removed: bool) {
        self.heap.pop();
        if removed {
            self.stale = self.stale.saturating_sub(1);
        }
    }

    /// Removes the flow [`BandQueue::peek`] returned, served in its turn at start tag `tag`:
    /// the virtual time moves on to it.
    pub fn served(&mut self, tag: u64) {
        self.heap.pop();
        self.vtime = tag;
    }

    /// The virtual time.
    pub fn vtime(&self) -> u64 {
        self.vtime
    }

    /// Live queued requests.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether a request with a deadline was ever queued here.
    pub fn has_deadlines(&self) -> bool {
        self.deadlines.is_some()
    }

    /// Counts a request of `usage` queued.
    pub fn enqueued(&mut self, usage: &Usage) {
        self.count += 1;
        self.queued.add(usage);
    }

    /// Queues request `id` among the candidates to go ahead of their turn, by `deadline`
    /// (`seq` orders equal deadlines).
    pub fn enqueued_by_deadline(
        &mut self,
        id: RequestId,
        usage: &Usage,
        deadline: Nanos,
        seq: u64,
    ) {
        let d = self.deadlines.get_or_insert_default();
        d.heap.push(Reverse((deadline, seq, id)));
        d.queued.add(usage);
    }

    /// Takes a request of `usage` that left the queue out of the counts (and, when it had a
    /// `deadline`, out of the candidates, sweeping ids no longer `alive`).
    pub fn left(&mut self, usage: &Usage, deadline: bool, alive: impl Fn(RequestId) -> bool) {
        self.count -= 1;
        self.queued.sub(usage);
        if deadline {
            self.forget_deadline(usage, alive);
        }
    }

    /// The nearest deadline among the candidates still `alive`, and its request; entries no
    /// longer alive at the top are dropped.
    pub fn nearest_deadline(
        &mut self,
        alive: impl Fn(RequestId) -> bool,
    ) -> Option<(Nanos, RequestId)> {
        let heap = &mut self.deadlines.as_deref_mut()?.heap;
        loop {
            let &Reverse((deadline, _, id)) = heap.peek()?;
            if alive(id) {
                return Some((deadline, id));
            }
            heap.pop();
        }
    }

    /// Takes a request with a deadline that left the queue (admitted or withdrawn) out of
    /// the counts, and sweeps the ids that are no longer `alive` when they outnumber the
    /// queued requests.
    #[inline(never)]
    fn forget_deadline(&mut self, usage: &Usage, alive: impl Fn(RequestId) -> bool) {
        let count = self.count as usize;
        if let Some(d) = self.deadlines.as_deref_mut() {
            d.queued.sub(usage);
            if d.heap.len() > 2 * count + 16 {
                d.heap.retain(|Reverse((_, _, id))| alive(*id));
            }
        }
    }

    /// The usage queued.
    pub fn queued(&self) -> Usage {
        self.queued
    }

    /// The usage queued with a deadline.
    pub fn queued_with_deadlines(&self) -> Usage {
        self.deadlines
            .as_deref()
            .map_or_else(Usage::default, |d| d.queued)
    }
}

/// How many bands a lane has: one per tier precedence, 0 to [`MAX_PRECEDENCE`].
pub(crate) const BANDS: usize = 3;

/// The highest precedence a tier may be granted.
pub const MAX_PRECEDENCE: u8 = (BANDS - 1) as u8;

/// The band of a tier granted `precedence`: the highest is served first.
pub(crate) fn band_of(precedence: u8) -> u8 {
    MAX_PRECEDENCE - precedence.min(MAX_PRECEDENCE)
}
