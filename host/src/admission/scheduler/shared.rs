//! What the shared store needs to know of a grant or a scope: the quotas it charges, as
//! plain figures (pace, burst, cost), so a store shared by several hosts can apply the same
//! GCRA arithmetic to one state (see [`crate::admission::shared`]).

use super::Scheduler;
use crate::admission::bucket::Nanos;
use crate::admission::outcome::GrantId;
use crate::admission::scope::{Origin, Scope, ScopeKey};
use crate::admission::shared::{QuotaFigures, ScopeFigures};
use crate::admission::usage::Usage;

impl Scheduler {
    /// Every scope `grant` charges (its lane's, then its tenant's own quota), with each
    /// quota's pace and the grant's cost in it. `None` for a grant already completed.
    pub fn charges(&self, grant: GrantId) -> Option<Vec<ScopeFigures>> {
        let g = self.grants.get(grant)?;
        let lane = &self.lanes[g.lane];
        let tenant_scope = self.tenants[g.tenant].quota;
        let ids = lane.scopes.iter().copied().chain(tenant_scope);
        Some(
            ids.map(|id| {
                let slot = &self.scopes[id];
                figures(&slot.key, &slot.scope, self.now, Some(&g.usage))
            })
            .collect(),
        )
    }

    /// The scope named `key` as it stands at `now`: its quotas (learned ones marked) and its
    /// hold. What a response taught this host, to share with the others.
    pub fn figures(&mut self, now: Nanos, key: &ScopeKey) -> ScopeFigures {
        let now = self.now.max(now);
        let id = self.scope_id(key);
        let slot = &self.scopes[id];
        figures(&slot.key, &slot.scope, now, None)
    }
}

fn figures(key: &ScopeKey, scope: &Scope, now: Nanos, usage: Option<&Usage>) -> ScopeFigures {
    ScopeFigures {
        scope: key.clone(),
        quotas: scope
            .quotas()
            .map(|(q, _)| QuotaFigures {
                dimension: q.dimension,
                window: q.window,
                interval: q.rate.interval(),
                tolerance: q.rate.tolerance(),
                limit: q.rate.limit(),
                cost: usage.map_or(0, |u| u.get(q.dimension)),
                available: None,
                learned: matches!(q.origin, Origin::Observed(_)),
            })
            .collect(),
        concurrency: scope.slots().map(|(limit, _)| limit),
        held_for: scope
            .held(now)
            .map(|h| (h.until.saturating_sub(now), h.reason.clone())),
    }
}
