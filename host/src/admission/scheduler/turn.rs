//! One turn of a lane: which request goes next, and admitting it.
//!
//! The class queues say whose turn it is ([`crate::admission::fair`]); a request whose
//! deadline cannot wait for that turn goes ahead of it, within its tenant's share (see the
//! `fair` module docs for why, and for the bound).

use std::cmp::Reverse;

use super::{Grant, Scheduler, Timer};
use crate::admission::bucket::Nanos;
use crate::admission::fair::{BANDS, Class, FlowId, RequestId};
use crate::admission::outcome::QueueEvent;
use crate::admission::scope::Block;
use crate::admission::usage::Usage;

/// What one turn of a lane did.
pub(super) enum Turn {
    Admitted,
    /// The lane's next request waits on this scope, until the instant if it is a time.
    Blocked(u32, Option<Nanos>),
    Empty,
}

/// The request a turn serves.
#[derive(Debug, Clone, Copy)]
struct Pick {
    flow: FlowId,
    id: RequestId,
    /// The class it is queued in: it leaves the flow from the head of that class.
    class: Class,
    usage: Usage,
    /// The start tag of the flow's entry when it is served in its turn; `None` when it goes
    /// ahead of the turn for its deadline.
    turn: Option<u64>,
}

impl Scheduler {
    /// The head request of `flow`, dropping cancelled ids before it.
    fn head(&mut self, flow: FlowId) -> Option<RequestId> {
        let requests = &self.requests;
        self.flows[flow].head(|id| requests.contains_key(id))
    }

    /// One turn of a lane: admits its next request, or finds what it waits on.
    pub(super) fn turn(&mut self, now: Nanos, lane: u32, events: &mut Vec<QueueEvent>) -> Turn {
        for band in 0..BANDS {
            while let Some((tag, flow)) = self.lanes[lane].bands[band].peek() {
                let live = self.flows.get(flow).is_some_and(|f| !f.parked);
                let Some(id) = live.then(|| self.head(flow)).flatten() else {
                    let removed = !self.flows.contains_key(flow);
                    self.lanes.band(lane, band).drop_head(removed);
                    continue;
                };
                let (usage, class) = (self.requests[id].usage, self.requests[id].class);
                let tenant = self.flows[flow].tenant;
                if let Some(block) = self.tenant_block(now, tenant, &usage) {
                    self.lanes.band(lane, band).pop();
                    self.flows[flow].parked = true;
                    match block.until() {
                        Some(at) => self.timers.push(Reverse((at, Timer::Unpark(flow)))),
                        None => self.tenants.park(tenant, flow),
                    }
                    continue;
                }
                // A class that never held a request with a deadline has no candidates.
                let candidates = self.lanes[lane].bands[band].has_deadlines();
                let ahead = candidates
                    .then(|| self.ahead_of_turn(now, lane, band, (id, tag), &usage))
                    .flatten();
                let pick = ahead.unwrap_or(Pick {
                    flow,
                    id,
                    class,
                    usage,
                    turn: Some(tag),
                });
                let usage = pick.usage;
                let scopes = &self.lanes[lane].scopes;
                if let Some(&s) = scopes
                    .iter()
                    .find(|&&s| !self.scopes[s].scope.admits(now, &usage))
                {
                    let block = self.scopes[s].scope.blocked(now, &usage);
                    let until = block.as_ref().and_then(Block::until);
                    if until == Some(Nanos::MAX) {
                        // A quota learned since submit is smaller than the request.
                        self.expire(now, pick.id, events);
                        continue;
                    }
                    return Turn::Blocked(s, until);
                }
                if let Some(s) = self.queued_behind(lane) {
                    let armed = self.scopes[s].timer;
                    return Turn::Blocked(s, (armed != super::NO_TIMER).then_some(armed));
                }
                self.admit(now, lane, band, pick, events);
                return Turn::Admitted;
            }
        }
        Turn::Empty
    }

    /// The request with the nearest deadline of the class, when it must go before `turn`,
    /// the request whose turn it is: serving `turn` first would make it late, it can make its
    /// deadline if it goes now, its tenant may send, and its flow is at most one request
    /// ahead of the class's virtual time. Kept out of the turn's own path, which requests
    /// without a deadline take alone.
    #[inline(never)]
    fn ahead_of_turn(
        &mut self,
        now: Nanos,
        lane: u32,
        band: usize,
        (turn, turn_tag): (RequestId, u64),
        first: &Usage,
    ) -> Option<Pick> {
        let requests = &self.requests;
        let q = self.lanes.band(lane, band);
        let vtime = q.vtime();
        let (deadline, id) = q.nearest_deadline(|id| requests.contains_key(id))?;
        if id == turn {
            return None;
        }
        let p = &self.requests[id];
        let f = &self.flows[p.flow];
        // Never ahead of a tenant served less than it: not of a flow whose request starts
        // before this flow's finish, nor of a tenant behind it in its share of the lane's
        // credential scope — which remembers a tenant whose requests never wait long
        // enough to keep a flow, where a flow that empties starts afresh.
        if f.parked || f.finish > vtime.saturating_add(p.size) || f.finish > turn_tag {
            return None;
        }
        let turn_tenant = self.flows[self.requests[turn].flow].tenant;
        if let Some(&credential) = self.lanes[lane].scopes.first()
            && self.shares.start(credential, f.tenant) > self.shares.start(credential, turn_tenant)
        {
            return None;
        }
        if self.tenant_block(now, f.tenant, &p.usage).is_some() {
            return None;
        }
        let (mut alone, mut behind) = (now, now);
        for &s in &self.lanes[lane].scopes {
            let scope = &self.scopes[s].scope;
            alone = alone.max(scope.estimate(now, &Usage::default(), &p.usage));
            behind = behind.max(scope.estimate(now, first, &p.usage));
        }
        if alone > deadline || behind <= deadline {
            return None;
        }
        let (flow, class, usage) = (p.flow, p.class, p.usage);
        // Its class serves its nearest deadline first, so it is the head of its class,
        // whatever the flow's more urgent classes hold.
        let requests = &self.requests;
        let head = self.flows[flow].head_of(class, |id| requests.contains_key(id));
        (head == Some(id)).then_some(Pick {
            flow,
            id,
            class,
            usage,
            turn: None,
        })
    }

    /// A scope of `lane` that another lane waits on ahead of it: the lane queues behind
    /// rather than take what that lane waits for. Without this, a large request waiting for
    /// its scope to be idle long enough would starve while another lane's small requests
    /// kept taking every gap.
    fn queued_behind(&self, lane: u32) -> Option<u32> {
        let lanes = &self.lanes;
        lanes[lane]
            .scopes
            .iter()
            .copied()
            .find(|&s| lanes.waits_ahead_on(s, lane))
    }

    /// Admits `pick`: charges every scope of its lane (and its tenant's quota), moves its
    /// flow's tag on by its size, and hands out its grant.
    fn admit(
        &mut self,
        now: Nanos,
        lane: u32,
        band: usize,
        pick: Pick,
        events: &mut Vec<QueueEvent>,
    ) {
        let q = self.lanes.band(lane, band);
        if let Some(tag) = pick.turn {
            q.served(tag);
        }
        let vtime = q.vtime();
        self.flows[pick.flow].pop(pick.class);
        let Some(p) = self.requests.remove(pick.id) else {
            return;
        };
        let f = &mut self.flows[pick.flow];
        // In its turn, from its start tag, or from where a jump left the flow; ahead of its
        // turn, from where the flow is, without moving the virtual time: the flow keeps its
        // place, and what it serves there comes that much later.
        let start = match pick.turn {
            Some(tag) => tag.max(f.finish),
            None => f.finish.max(vtime),
        };
        f.finish = start.saturating_add(p.size);
        let (tenant, finish, live) = (f.tenant, f.finish, f.live);
        let mut ends = super::Ends::new();
        for &s in &self.lanes[lane].scopes {
            let slot = &mut self.scopes[s];
            slot.scope.take(now, &p.usage, &mut ends);
            slot.fly(1, now);
            self.shares.served(s, tenant, p.size);
        }
        if let Some(qs) = self.tenants.admitted(tenant) {
            self.scopes[qs].scope.take(now, &p.usage, &mut ends);
        }
        let q = self.lanes.band(lane, band);
        match pick.turn {
            Some(_) if live > 1 => q.push(pick.flow, finish),
            Some(_) => {}
            // The flow's entry stays in the heap; with nothing left to serve it is stale.
            None if live > 1 => {}
            None => {
                let flows = &self.flows;
                q.stale(|f| f.ne(&pick.flow) && flows.get(f).is_some_and(|f| !f.parked));
            }
        }
        self.forget(&p, false);
        let grant = self.grants.insert(Grant {
            lane,
            tenant,
            class: p.class,
            usage: p.usage,
            ends,
        });
        events.push(QueueEvent::Admitted {
            request: pick.id,
            grant,
        });
    }
}
