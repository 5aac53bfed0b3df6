//! Forgetting what requests named and no longer use: an unconfigured scope, looked at when
//! due, is forgotten once it has been at rest for the configured time, with every lane that
//! charges it (see [`super::unconfigured`] for why, and for the schedule).

use super::Scheduler;
use crate::admission::bucket::Nanos;

impl Scheduler {
    /// Forgets every scope due to be looked at by `now` that has been at rest for the
    /// configured time, with its lanes; puts the others back on the schedule for the
    /// instant they could have. Runs at the end of a poll, when no lane is in the run queue.
    pub(super) fn forget_at_rest(&mut self, now: Nanos) {
        let idle = self.scopes.idle();
        while let Some(id) = self.scopes.due(now) {
            let Some(slot) = self.scopes.get(id) else {
                continue;
            };
            match slot.rests_since() {
                Some(since) if since.saturating_add(idle) <= now => self.forget_scope(id),
                Some(since) => self.scopes.look_at(since.saturating_add(idle), id),
                // In use: whatever ends its use touches it, so a look one idle time from now
                // finds when it came to rest.
                None => self.scopes.look_at(now.saturating_add(idle), id),
            }
        }
    }

    /// Forgets scope `id`, at rest, and every lane that charges it: nothing waits in them
    /// and none of their requests is in flight, so only the lists that name lanes are left
    /// to clear (the lanes waiting on a scope, the routes pools keep: a route kept for a
    /// name counted under an overflow scope is made again too, as the name may now have a
    /// place).
    fn forget_scope(&mut self, id: u32) {
        self.lanes.forget_through(id);
        self.pools.forget_routes();
        self.shares.forget(id);
        self.scopes.forget(id);
    }
}
