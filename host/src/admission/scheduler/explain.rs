//! Why a request waits: the scope or tenant that holds it back, or its turn.

use std::time::Duration;

use super::Scheduler;
use crate::admission::bucket::Nanos;
use crate::admission::fair::RequestId;
use crate::admission::outcome::{Waiting, Why};
use crate::admission::scope::Block;
use crate::admission::usage::Usage;

impl Scheduler {
    /// Why `request` is still waiting at `now`, or `None` if it is not waiting.
    pub fn explain(&self, now: Nanos, request: RequestId) -> Option<Why> {
        let p = self.requests.get(request)?;
        let flow = &self.flows[p.flow];
        let lane = &self.lanes[flow.lane];
        let tenant = &self.tenants[flow.tenant];
        let now = self.now.max(now);
        let waiting = self
            .tenant_block(now, flow.tenant, &p.usage)
            .map(|block| Waiting::Tenant {
                tenant: tenant.name.clone(),
                block,
            })
            .or_else(|| {
                lane.scopes.iter().find_map(|&s| {
                    let slot = &self.scopes[s];
                    slot.scope
                        .blocked(now, &p.usage)
                        .map(|block| Waiting::Scope {
                            scope: slot.key.clone(),
                            block,
                        })
                })
            })
            .unwrap_or_else(|| Waiting::Turn {
                ahead: lane.bands[..=usize::from(flow.band)]
                    .iter()
                    .map(|c| c.count())
                    .sum::<u32>()
                    .saturating_sub(1),
            });
        Some(Why {
            class: p.class,
            tenant: tenant.name.clone(),
            waited: Duration::from_nanos(now.saturating_sub(p.submitted)),
            deadline: p.deadline,
            waiting,
        })
    }

    /// What keeps the tenant from sending `usage` now: its in-flight limit, then its quota.
    pub(super) fn tenant_block(&self, now: Nanos, tenant: u32, usage: &Usage) -> Option<Block> {
        let t = &self.tenants[tenant];
        if let Some(limit) = self
            .tenants
            .tier(t.tier)
            .max_in_flight
            .filter(|m| t.in_flight >= *m)
        {
            return Some(Block::Concurrency { limit });
        }
        t.quota
            .and_then(|q| self.scopes[q].scope.blocked(now, usage))
    }
}
