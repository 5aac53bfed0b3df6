//! The scheduler's side of a [`Snapshot`]: which scopes exist, what is queued on and in
//! flight through each, and the queue by tenant and class. Reads only (see
//! [`crate::admission::snapshot`]).

use std::collections::BTreeMap;

use super::Scheduler;
use crate::admission::bucket::Nanos;
use crate::admission::fair::Class;
use crate::admission::scope::ScopeKey;
use crate::admission::snapshot::{Counts, QueueRow, ScopeStatus, Snapshot};

impl Scheduler {
    /// Admission as it stands at `now`: every scope's limits, pace, availability, hold and
    /// reported figures, and the queue by tenant and class. Changes nothing.
    pub fn snapshot(&self, now: Nanos) -> Snapshot {
        let now = self.now.max(now);
        let mut counts = vec![Counts::default(); self.scopes.ids_len()];
        let mut rows: BTreeMap<(u32, Class), (u64, u64)> = BTreeMap::new();
        for g in self.grants.values() {
            rows.entry((g.tenant, g.class)).or_default().1 += 1;
        }
        for f in self.flows.values().filter(|f| f.live > 0) {
            for (class, sub) in Class::ALL.into_iter().zip(&f.classes) {
                if sub.live > 0 {
                    rows.entry((f.tenant, class)).or_default().0 += u64::from(sub.live);
                }
            }
        }
        // A tenant's quota counts what the tenant has waiting and in flight.
        for t in self.tenants.iter() {
            if let Some(q) = t.quota {
                counts[q as usize].queued = u64::from(t.queued);
                counts[q as usize].in_flight = u64::from(t.in_flight);
            }
        }
        for (id, slot) in self.scopes.iter() {
            let c = &mut counts[id as usize];
            c.configured = match &slot.key {
                ScopeKey::Provider { .. } => self.scopes.configured(&slot.key),
                ScopeKey::Tenant(t) => self.tenants.quota_of(t).is_some(),
            };
            if matches!(slot.key, ScopeKey::Provider { .. }) {
                c.queued = u64::from(slot.queued);
                c.in_flight = u64::from(slot.in_flight);
            }
        }
        let mut order: Vec<_> = self
            .scopes
            .iter()
            .map(|(id, slot)| (slot, counts[id as usize]))
            .collect();
        order.sort_unstable_by(|(a, _), (b, _)| a.key.cmp(&b.key));
        let scopes = order
            .into_iter()
            .map(|(slot, c)| ScopeStatus::of(&slot.key, &slot.scope, now, c))
            .collect();
        let mut queue: Vec<QueueRow> = rows
            .into_iter()
            .map(|((tenant, class), (queued, in_flight))| {
                let t = &self.tenants[tenant];
                QueueRow {
                    tenant: t.name.to_string(),
                    tier: self.tenants.tier(t.tier).name.to_string(),
                    class,
                    queued,
                    in_flight,
                }
            })
            .collect();
        queue.sort_unstable_by(|a, b| (&a.tenant, a.class).cmp(&(&b.tenant, b.class)));
        Snapshot {
            scopes,
            queue,
            queued: u64::from(self.queued),
            in_flight: self.grants.len() as u64,
            pools: self.pool_statuses(now),
        }
    }
}
