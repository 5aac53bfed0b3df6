//! The scheduler: every request waits here, not at the provider, and goes exactly when all
//! the scopes it charges can take it.
//!
//! The scheduler is a plain state machine on the caller's clock (`Nanos`): [`Scheduler::submit`]
//! queues a request or refuses it at once, [`Scheduler::poll`] admits what may go now and
//! expires what missed its deadline, and [`Scheduler::next_wake`] says when polling can next
//! change anything. Nothing sleeps per request: a blocked lane registers with the one scope
//! that blocks it, and that scope's single timer (or a freed concurrency slot) wakes it.
//! [`super::Admission`] drives it on tokio with one task.
//!
//! Requests that charge the same set of scopes form a *lane*; lanes that share a scope take
//! turns on it, one admission per turn. Within a lane, tenants share by weight whatever the
//! classes of their requests, and a tenant's own requests go in class order (interactive,
//! then standard, then background) — a tenant's interactive calls come out of its own share
//! ([`super::fair`]); only a tier the operator grants precedence goes ahead of the others.
//! Within a tenant's class the nearest deadline goes first, and a request that would miss
//! its deadline waiting for its turn goes ahead of it, within its tenant's share. A class
//! the tenant's tier does not allow is lowered to the nearest one it does.
//!
//! What responses say lands in the scopes they are about: a 429 holds a scope
//! ([`Scheduler::hold`]), and a plugin's figures ([`Scheduler::observe`]) hold it when a quota
//! is spent, teach it limits, and debit it when the provider counts less left than the host
//! believes ([`super::scope::learn`]).
//!
#![cfg_attr(feature = "internals", doc = "```")]
#![cfg_attr(not(feature = "internals"), doc = "```ignore")]
//! use sluice::admission::{Ask, Class, Config, QueueEvent, Scheduler, TaskId, Usage, Waiting};
//!
//! let config = Config::from_toml(
//!     "[providers.openai.limits]\nrequests_per_minute = 60\ntokens_per_minute = 1000000\n",
//! )?;
//! let mut s = Scheduler::new(config)?;
//! let route = s.route("openai", "org-1", &["model:gpt-4o"]); // the account and its model
//! let tenant = s.tenant("acme");
//! let ask = Ask {
//!     route,
//!     tenant,
//!     class: Class::Interactive,
//!     usage: Usage::tokens(1_200, 800), // the cost of the plugin's plan
//!     deadline: None,
//!     task: Some(TaskId(1)),
//! };
//! let mut events = Vec::new();
//!
//! // 60 per minute, paced at 54: a burst of 7, then one every 1.11 s.
//! let ids: Vec<_> = (0..8).map(|_| s.submit(0, ask)).collect::<Result<_, _>>()?;
//! s.poll(0, &mut events);
//! assert_eq!(events.len(), 7);
//!
//! // The eighth waits, and says why and until when.
//! let why = s.explain(0, ids[7]).unwrap();
//! let Waiting::Scope { scope, block } = &why.waiting else { unreachable!() };
//! assert_eq!(scope.to_string(), "openai/org-1");
//! let until = block.until().unwrap();
//! assert_eq!(s.next_wake(), Some(until));
//!
//! // The response of the first reports what it used: the estimate is corrected.
//! let QueueEvent::Admitted { grant, .. } = events[0] else { unreachable!() };
//! s.complete(1_000, grant, Some(&Usage::tokens(1_200, 150)));
//!
//! // Cancelling the task removes the eighth before it is admitted.
//! assert_eq!(s.cancel(TaskId(1)), 1);
//! events.clear();
//! s.poll(until, &mut events);
//! assert!(events.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use slotmap::SlotMap;

use super::bucket::Nanos;
use super::config::{Config, ConfigError};
use super::fair::{Class, Flow, FlowId, RequestId};
use super::outcome::GrantId;
use super::usage::Usage;
use lanes::Lanes;
use scopes::Scopes;
use tenants::Tenants;
use waiting::{Deadlines, TaskRequests};

pub use crate::task::TaskId;
pub use pools::PoolAsk;

/// The scopes one request charges, resolved once: see [`Scheduler::route`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route(u32);

/// A tenant, resolved once: see [`Scheduler::tenant`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(u32);

/// A request to admit.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    /// The scopes it charges.
    pub route: Route,
    /// The tenant it is billed to.
    pub tenant: TenantId,
    /// Its queue class.
    pub class: Class,
    /// Its estimated usage.
    pub usage: Usage,
    /// The latest instant it may be admitted.
    pub deadline: Option<Nanos>,
    /// The task it belongs to.
    pub task: Option<TaskId>,
}

#[derive(Debug)]
struct Pending {
    flow: FlowId,
    /// The class it is queued in, within its tenant's flow.
    class: Class,
    usage: Usage,
    /// Fair-share size: occupancy of the lane's scarcest quota over the tenant's weight.
    size: u64,
    submitted: Nanos,
    deadline: Option<Nanos>,
    task: Option<TaskId>,
}

#[derive(Debug)]
struct Grant {
    lane: u32,
    tenant: u32,
    /// The class it was queued in, for [`Scheduler::snapshot`].
    class: Class,
    usage: Usage,
    /// Each charged quota's state after the charge (see `Scope::take`); inline for the
    /// usual two scopes of two quotas, so an admission does not allocate for it.
    ends: Ends,
}

/// What `Scope::take` records for a grant.
type Ends = smallvec::SmallVec<[Nanos; 10]>;

/// A scope's timer that is not armed.
const NO_TIMER: Nanos = Nanos::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Scope(u32),
    Unpark(FlowId),
}

/// The admission scheduler; see the module docs.
#[derive(Debug)]
pub struct Scheduler {
    config: Config,
    scopes: Scopes,
    tenants: Tenants,
    /// The lanes, where each is in the loop, and the lists that say so: the run queue, and
    /// the lanes blocked on each scope, woken together in the order of their next tenant's
    /// share of the scope (`shares`).
    lanes: Lanes,
    /// Each scope's fair order between tenants, across the lanes that charge it.
    shares: shares::Shares,
    flows: SlotMap<FlowId, Flow>,
    /// Flows by lane, band and tenant.
    flow_index: HashMap<(u32, u8, u32), FlowId>,
    requests: SlotMap<RequestId, Pending>,
    grants: SlotMap<GrantId, Grant>,
    tasks: TaskRequests,
    timers: BinaryHeap<Reverse<(Nanos, Timer)>>,
    deadlines: Deadlines,
    queued: u32,
    now: Nanos,
    /// The configured pools, and what the scheduler remembers of their members.
    pools: pools::Pools,
}

mod explain;
mod lanes;
mod names;
mod observe;
mod pools;
mod rest;
mod run;
mod scopes;
mod shared;
mod shares;
mod slot;
mod snapshot;
mod submit;
mod tenants;
#[cfg(test)]
mod tests;
mod turn;
pub mod unconfigured;
mod waiting;

impl Scheduler {
    /// A scheduler for a validated configuration.
    ///
    /// # Errors
    /// [`ConfigError`] when the configuration does not validate.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            scopes: Scopes::new(&config)?,
            tenants: Tenants::new(&config)?,
            pools: pools::Pools::new(&config),
            config,
            lanes: Lanes::default(),
            shares: shares::Shares::default(),
            flows: SlotMap::with_key(),
            flow_index: HashMap::new(),
            requests: SlotMap::with_key(),
            grants: SlotMap::with_key(),
            tasks: TaskRequests::default(),
            timers: BinaryHeap::new(),
            deadlines: Deadlines::default(),
            queued: 0,
            now: 0,
        })
    }

    /// The configuration the scheduler was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// When [`Scheduler::poll`] can next admit or expire something, or forget a scope at
    /// rest ([`unconfigured`]), if anything is waiting on time. (It may be early: a woken
    /// request can find its scope still busy, a scope looked at can be in use again.)
    pub fn next_wake(&self) -> Option<Nanos> {
        let timer = self.timers.peek().map(|Reverse((t, _))| *t);
        // A request expires once its deadline has passed, not at the deadline itself.
        let deadline = self.deadlines.next().map(|t| t.saturating_add(1));
        [timer, deadline, self.scopes.next_look()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Requests waiting.
    pub fn queued(&self) -> u32 {
        self.queued
    }

    /// Requests admitted and not yet completed or released.
    pub fn in_flight(&self) -> usize {
        self.grants.len()
    }

    /// Removes every waiting request of `task`; none of them will be admitted. Returns how
    /// many were removed.
    pub fn cancel(&mut self, task: TaskId) -> usize {
        self.tasks
            .take(task)
            .into_iter()
            .filter(|&r| self.remove(r).is_some())
            .count()
    }

    /// Removes one waiting request. Returns `false` if it was not waiting.
    pub fn withdraw(&mut self, request: RequestId) -> bool {
        self.remove(request).is_some()
    }

    /// Completes an admitted request: corrects its charge from the estimate to `actual` (when
    /// the response said; `None` keeps the estimate) and frees its concurrency slots.
    /// Returns `false` for a grant already completed.
    pub fn complete(&mut self, now: Nanos, grant: GrantId, actual: Option<&Usage>) -> bool {
        let now = self.now.max(now);
        let Some(g) = self.grants.remove(grant) else {
            return false;
        };
        let mut ends = &g.ends[..];
        for i in 0..self.lanes[g.lane].scopes.len() {
            let s = self.lanes[g.lane].scopes[i];
            let slot = &mut self.scopes[s];
            ends = slot.scope.settle(now, &g.usage, actual, ends);
            slot.fly(-1, now);
            // A freed slot or a refund may let a waiting lane go sooner.
            self.wake(s);
        }
        let (quota, parked) = self.tenants.settled(g.tenant);
        if let Some(q) = quota {
            self.scopes[q].scope.settle(now, &g.usage, actual, ends);
        }
        for flow in parked {
            self.unpark(flow);
        }
        true
    }
}

fn ms_to_nanos(ms: u64) -> Nanos {
    ms.saturating_mul(1_000_000)
}

/// A table index as the scheduler's compact id.
fn index(len: usize) -> u32 {
    u32::try_from(len).unwrap_or_else(|_| panic!("more than 2^32 scopes, lanes or tenants"))
}
