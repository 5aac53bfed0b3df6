//! The scheduler's loop: queueing and removing requests, timers, and waking lanes. What one
//! lane does in its turn is in `turn`.

use std::cmp::Reverse;

use super::turn::Turn;
use super::{Ask, Pending, Scheduler, Timer};
use crate::admission::bucket::Nanos;
use crate::admission::fair::{Flow, FlowId, RequestId};
use crate::admission::outcome::{QueueEvent, Waiting};
use crate::admission::scope::Block;

impl Scheduler {
    /// Queues a checked request.
    pub(super) fn enqueue(&mut self, now: Nanos, ask: Ask, size: u64) -> RequestId {
        let (lane, tenant, class) = (ask.route.0, ask.tenant.0, ask.class);
        let band = self.tenants[tenant].band;
        let flow = *self
            .flow_index
            .entry((lane, band, tenant))
            .or_insert_with(|| {
                let id = self.flows.insert(Flow::new(lane, band, tenant));
                self.lanes.band(lane, usize::from(band)).push(id, 0);
                id
            });
        let id = self.requests.insert(Pending {
            flow,
            class,
            usage: ask.usage,
            size,
            submitted: now,
            deadline: ask.deadline,
            task: ask.task,
        });
        match ask.deadline {
            Some(deadline) => self.enqueue_deadline(id, &ask, flow, band, deadline),
            None => self.flows[flow].push(id, class),
        }
        self.lanes.enqueued(lane, band, &ask.usage);
        for &s in &self.lanes[lane].scopes {
            self.scopes[s].count(1, now);
        }
        self.tenants.enqueued(tenant);
        self.queued += 1;
        if let Some(task) = ask.task {
            self.tasks.add(task, id);
        }
        id
    }

    /// Queues request `id` of `flow` by its deadline: in the flow's order, among its class's
    /// candidates to go ahead of their turn, and for expiry. Kept apart from
    /// [`Scheduler::enqueue`] so that requests without a deadline do not pay for it.
    #[inline(never)]
    fn enqueue_deadline(
        &mut self,
        id: RequestId,
        ask: &Ask,
        flow: FlowId,
        band: u8,
        deadline: Nanos,
    ) {
        // Among equal deadlines, in arrival order.
        let seq = self.deadlines.push(deadline, id);
        self.flows[flow].push_by_deadline(id, ask.class, deadline, seq);
        self.lanes
            .band(ask.route.0, usize::from(band))
            .enqueued_by_deadline(id, &ask.usage, deadline, seq);
    }

    /// Takes a waiting request out of every count. Its id stays in its flow's queue and is
    /// skipped when it reaches the head.
    pub(super) fn remove(&mut self, id: RequestId) -> Option<Pending> {
        let p = self.requests.remove(id)?;
        let lane = self.flows[p.flow].lane;
        self.forget(&p, true);
        self.lanes.removed(lane);
        Some(p)
    }

    /// Takes a request that left the queue out of every count: `withdrawn` (cancelled,
    /// expired) or admitted. Entries a withdrawal leaves behind in heaps and lists are
    /// skipped lazily, and swept when they outnumber the live ones, so a blocked scope under
    /// submit-and-cancel churn does not grow without bound.
    pub(super) fn forget(&mut self, p: &Pending, withdrawn: bool) {
        let requests = &self.requests;
        let alive = |id: RequestId| requests.contains_key(id);
        let f = &mut self.flows[p.flow];
        f.left(p.class);
        if withdrawn {
            f.sweep(alive);
        }
        let (lane, band, tenant, live, parked) = (f.lane, f.band, f.tenant, f.live, f.parked);
        self.lanes
            .band(lane, usize::from(band))
            .left(&p.usage, p.deadline.is_some(), alive);
        for &s in &self.lanes[lane].scopes {
            self.scopes[s].count(-1, self.now);
        }
        self.tenants.left(tenant);
        self.queued -= 1;
        if let Some(task) = p.task {
            self.tasks.left(task, alive);
        }
        if live == 0 {
            // Its heap entry, timer or parking spot, if any, is skipped as stale.
            self.flows.remove(p.flow);
            self.flow_index.remove(&(lane, band, tenant));
            if withdrawn && !parked {
                let flows = &self.flows;
                self.lanes
                    .band(lane, usize::from(band))
                    .stale(|f| flows.get(f).is_some_and(|f| !f.parked));
            }
        }
    }

    /// Admits every request that may go at `now` and expires every request whose deadline
    /// has passed, appending what happened to `events`.
    pub fn poll(&mut self, now: Nanos, events: &mut Vec<QueueEvent>) {
        self.now = self.now.max(now);
        let now = self.now;
        let requests = &self.requests;
        self.deadlines
            .sweep(requests.len(), |id| requests.contains_key(id));
        // An admitted or withdrawn request's deadline no longer matters.
        loop {
            let requests = &self.requests;
            let alive = |id| requests.contains_key(id);
            let Some(id) = self.deadlines.pop_expired(now, alive) else {
                break;
            };
            self.expire(now, id, events);
        }
        while let Some(&Reverse((at, timer))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            match timer {
                Timer::Scope(s) => {
                    // A scope forgotten since leaves its timers behind, skipped here.
                    if let Some(slot) = self.scopes.get_mut(s)
                        && slot.timer == at
                    {
                        slot.timer = super::NO_TIMER;
                        self.wake(s);
                    }
                }
                Timer::Unpark(flow) => self.unpark(flow),
            }
        }
        while let Some(lane) = self.lanes.next() {
            match self.turn(now, lane, events) {
                // One admission per turn: lanes that share a scope alternate on it.
                Turn::Admitted => self.lanes.admitted(lane),
                Turn::Blocked(s, until) => {
                    self.lanes.blocked(lane, s);
                    let slot = &mut self.scopes[s];
                    if let Some(at) = until
                        && at < slot.timer
                    {
                        slot.timer = at;
                        self.timers.push(Reverse((at, Timer::Scope(s))));
                    }
                }
                Turn::Empty => self.lanes.emptied(lane),
            }
        }
        // Requests admitted just now leave their deadlines behind; the top must be live for
        // `next_wake` to be true.
        let requests = &self.requests;
        self.deadlines.drop_stale(|id| requests.contains_key(id));
        self.forget_at_rest(now);
    }

    /// Moves the lanes waiting on scope `s` to the run queue.
    pub(super) fn wake(&mut self, s: u32) {
        let mut lanes = self.lanes.take_waiters(s);
        if lanes.len() > 1 {
            // The tenant served least on the scope first; among equals, in the order they
            // blocked.
            lanes.sort_by_cached_key(|&lane| {
                self.next_tenant(lane)
                    .map_or(u64::MAX, |tenant| self.shares.start(s, tenant))
            });
        }
        self.lanes.wake(lanes, s);
    }

    /// The tenant of the flow whose turn is next in `lane`, if it holds one.
    fn next_tenant(&self, lane: u32) -> Option<u32> {
        self.lanes[lane]
            .bands
            .iter()
            .find_map(|band| band.peek())
            .and_then(|(_, flow)| self.flows.get(flow))
            .map(|f| f.tenant)
    }

    /// Puts a flow set aside by its tenant's limits back in its queue.
    pub(super) fn unpark(&mut self, flow: FlowId) {
        let Some(f) = self.flows.get_mut(flow).filter(|f| f.parked) else {
            return;
        };
        f.parked = false;
        self.lanes
            .band(f.lane, usize::from(f.band))
            .push(flow, f.finish);
        self.lanes.unparked(f.lane);
    }

    /// Removes a waiting request whose deadline has passed, or that can no longer be
    /// admitted, and says why.
    pub(super) fn expire(&mut self, now: Nanos, id: RequestId, events: &mut Vec<QueueEvent>) {
        if let Some(why) = self.explain(now, id) {
            self.remove(id);
            events.push(QueueEvent::Expired {
                request: id,
                why: Box::new(why),
            });
        }
    }
}

impl Waiting {
    /// The scope or tenant block behind this wait, if it is not just a turn.
    pub fn block(&self) -> Option<&Block> {
        match self {
            Self::Scope { block, .. } | Self::Tenant { block, .. } => Some(block),
            Self::Turn { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Ask, Scheduler, TaskId};
    use crate::admission::{Class, Config, QueueEvent, ScopeKey, Usage};

    /// Regression: when the request its lane waited for was withdrawn, the next one slept
    /// until the withdrawn one's time although it fitted at once.
    #[test]
    fn withdrawing_the_blocking_request_lets_the_next_one_go() {
        let c = Config::from_toml("[providers.p.limits]\ntokens_per_minute = 6000\n").unwrap();
        let mut s = Scheduler::new(c).unwrap();
        let (route, tenant) = (s.route("p", "k", &[]), s.tenant("t"));
        let ask = |tokens| Ask {
            route,
            tenant,
            class: Class::Standard,
            usage: Usage::tokens(tokens, 0),
            deadline: None,
            task: None,
        };
        let mut events = Vec::new();
        s.submit(0, ask(601)).unwrap();
        s.poll(0, &mut events);
        events.clear();
        let big = s.submit(0, ask(600)).unwrap();
        let small = s.submit(0, ask(10)).unwrap();
        s.poll(0, &mut events);
        assert!(events.is_empty());
        assert!(s.withdraw(big));
        s.poll(1_000_000_000, &mut events);
        assert!(
            matches!(events[..], [QueueEvent::Admitted { request, .. }] if request == small),
            "{events:?}"
        );
    }

    fn scheduler() -> Scheduler {
        let config = "[providers.p.limits]\nrequests_per_minute = 60\n";
        Scheduler::new(Config::from_toml(config).unwrap()).unwrap()
    }

    /// Regression: deadlines of admitted requests stayed in the heap, so `next_wake` named
    /// instants when nothing could happen and memory grew with every request.
    #[test]
    fn deadlines_of_admitted_requests_are_forgotten() {
        let mut s = scheduler();
        let route = s.route("p", "k", &[]);
        let tenant = s.tenant("t");
        let mut events = Vec::new();
        for i in 0..200u64 {
            let ask = Ask {
                route,
                tenant,
                class: Class::Standard,
                usage: Usage::ONE_REQUEST,
                deadline: Some(i * 2_000_000_000 + 60_000_000_000),
                task: None,
            };
            s.submit(i * 2_000_000_000, ask).unwrap();
            s.poll(i * 2_000_000_000, &mut events);
        }
        assert_eq!(events.len(), 200);
        assert_eq!(s.queued(), 0);
        assert_eq!(s.next_wake(), None);
        assert!(
            s.deadlines.len() <= 64 + 1,
            "{} deadlines kept",
            s.deadlines.len()
        );
    }

    /// Regression: submitting and cancelling while a scope was held left every cancelled
    /// entry in the heaps and lists until the hold ended.
    #[test]
    fn churn_on_a_held_scope_stays_bounded() {
        let mut s = scheduler();
        let route = s.route("p", "k", &[]);
        let key = ScopeKey::Provider {
            provider: "p".into(),
            credential: "k".into(),
            name: None,
        };
        s.hold(0, &key, 60_000_000_000, "429");
        let tenants = [s.tenant("a"), s.tenant("b")];
        let waiting = s
            .submit(
                0,
                Ask {
                    route,
                    tenant: tenants[0],
                    class: Class::Standard,
                    usage: Usage::ONE_REQUEST,
                    deadline: None,
                    task: None,
                },
            )
            .unwrap();
        let mut events = Vec::new();
        for i in 0..20_000u64 {
            let ask = Ask {
                route,
                tenant: tenants[(i % 2) as usize],
                class: Class::Standard,
                usage: Usage::ONE_REQUEST,
                deadline: Some(120_000_000_000),
                task: Some(TaskId(1)),
            };
            s.submit(i, ask).unwrap();
            assert_eq!(s.cancel(TaskId(1)), 1);
            s.poll(i, &mut events);
        }
        assert!(events.is_empty());
        let heap: usize = s.lanes[0].bands.iter().map(|c| c.heap.len()).sum();
        assert!(heap <= 40, "{heap} flow entries for two tenants");
        let queued: usize = s
            .flows
            .values()
            .flat_map(|f| &f.classes)
            .map(|c| c.queue.len())
            .sum();
        assert!(
            queued <= 40,
            "{queued} request entries for one waiting request"
        );
        assert!(
            s.deadlines.len() <= 64 + 4,
            "{} deadlines",
            s.deadlines.len()
        );
        s.poll(60_000_000_000, &mut events);
        assert!(matches!(events[..], [QueueEvent::Admitted { request, .. }] if request == waiting));
    }
}
