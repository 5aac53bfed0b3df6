//! Queue or refuse: the bounds and estimates a request is checked against when it is
//! submitted, before it takes a queue place.

use std::time::Duration;

use super::{Ask, Scheduler};
use crate::admission::bucket::Nanos;
use crate::admission::fair::RequestId;
use crate::admission::outcome::{Bound, Rejection};

impl Scheduler {
    /// Queues a request, or refuses it at once: a queue bound is full, its deadline cannot
    /// be met, or it is larger than a quota admits. A queued request is admitted or expired
    /// by a later [`Scheduler::poll`], which may be at the same `now`.
    ///
    /// # Errors
    /// [`Rejection`] with the reason and the figures behind it.
    pub fn submit(&mut self, now: Nanos, mut ask: Ask) -> Result<RequestId, Rejection> {
        let now = self.now.max(now);
        let lane_id = ask.route.0;
        let lane = &self.lanes[lane_id];
        let tenant = &self.tenants[ask.tenant.0];
        let tier = &self.tenants.tier(tenant.tier);
        // A class the tier does not allow is queued in the nearest one it does.
        ask.class = tier.classes.allowed(ask.class);
        if self.queued >= self.config.queue.max_queued.get() {
            return Err(Rejection::Backpressure(Bound::Global {
                max_queued: self.config.queue.max_queued.get(),
            }));
        }
        if let Some(max) = tier.max_queued.filter(|m| tenant.queued >= *m) {
            return Err(Rejection::Backpressure(Bound::Tenant {
                tenant: tenant.name.clone(),
                max_queued: max,
            }));
        }
        let ahead = lane.ahead(tenant.band);
        let mut size = 0;
        for &s in &lane.scopes {
            let slot = &self.scopes[s];
            if let Some(oversized) = slot.scope.oversized(&ask.usage) {
                return Err(Rejection::Oversized {
                    scope: slot.key.clone(),
                    oversized,
                });
            }
            let shape = slot.scope.shape();
            if slot.queued >= shape.max_queued {
                return Err(Rejection::Backpressure(Bound::Scope {
                    scope: slot.key.clone(),
                    max_queued: shape.max_queued,
                }));
            }
            let at = slot.scope.estimate(now, &ahead, &ask.usage);
            if at - now > shape.max_wait {
                return Err(Rejection::Backpressure(Bound::Wait {
                    scope: slot.key.clone(),
                    estimated: Duration::from_nanos(at - now),
                    max_wait: Duration::from_nanos(shape.max_wait),
                }));
            }
            size = size.max(slot.scope.occupancy(&ask.usage));
        }
        if let Some(q) = tenant.quota {
            let slot = &self.scopes[q];
            if let Some(oversized) = slot.scope.oversized(&ask.usage) {
                return Err(Rejection::Oversized {
                    scope: slot.key.clone(),
                    oversized,
                });
            }
        }
        if let Some(deadline) = ask.deadline {
            self.reachable(now, &ask, tenant.band, deadline)?;
        }
        // A lane with no quota shares by request count.
        let size = size.max(1_000).div_ceil(tenant.weight);
        Ok(self.enqueue(now, ask, size))
    }

    /// Refuses a request whose deadline cannot be met. It waits for what is queued in bands
    /// served before its tenant's `band` and for the requests of its band with a deadline,
    /// which the nearest-deadline order may put first; the rest of its band it overtakes
    /// when its deadline needs it to (see [`super::fair`]). Kept apart from
    /// [`Scheduler::submit`] so that requests without a deadline do not pay for it.
    #[inline(never)]
    fn reachable(&self, now: Nanos, ask: &Ask, band: u8, deadline: Nanos) -> Result<(), Rejection> {
        let lane = &self.lanes[ask.route.0];
        let ahead = lane.ahead_of_deadline(band);
        for &s in &lane.scopes {
            let slot = &self.scopes[s];
            let at = slot.scope.estimate(now, &ahead, &ask.usage);
            if at > deadline {
                return Err(Rejection::DeadlineUnreachable {
                    scope: slot.key.clone(),
                    estimated_wait: Duration::from_nanos(at - now),
                    late_by: Duration::from_nanos(at - deadline),
                });
            }
        }
        Ok(())
    }
}
