//! One scope in the scheduler's table ([`super::scopes`]): the scope, and what the scheduler
//! counts of it — requests waiting and in flight, its timer, its last use — from which it
//! knows when the scope is at rest.

use super::NO_TIMER;
use crate::admission::bucket::Nanos;
use crate::admission::scope::{Scope, ScopeKey};

/// A scope and the scheduler's bookkeeping for it.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) key: ScopeKey,
    pub(super) scope: Scope,
    /// The instant this scope's timer is armed for, or [`NO_TIMER`].
    pub(super) timer: Nanos,
    pub(super) queued: u32,
    /// Requests admitted through it and not yet completed.
    pub(super) in_flight: u32,
    /// When it was last named, queued on, admitted through or completed.
    pub(super) touched: Nanos,
    /// Reports `queued` ([`crate::observe::QUEUE_DEPTH`]); registered once, with the slot.
    /// A no-op for a scope holding a place: see [`super::unconfigured`].
    pub(super) depth: metrics::Gauge,
}

impl Slot {
    /// One more (`+1`) or one fewer (`-1`) request waiting on the scope, at `now`.
    pub(super) fn count(&mut self, change: i32, now: Nanos) {
        self.queued = self.queued.saturating_add_signed(change);
        self.touch(now);
        self.depth.set(f64::from(self.queued));
    }

    /// One more (`+1`) or one fewer (`-1`) request admitted through the scope, at `now`.
    pub(super) fn fly(&mut self, change: i32, now: Nanos) {
        self.in_flight = self.in_flight.saturating_add_signed(change);
        self.touch(now);
    }

    /// The scope was used (named, queued on, admitted through) at `now`.
    pub(super) fn touch(&mut self, now: Nanos) {
        self.touched = self.touched.max(now);
    }

    /// The instant from which the scope has been at rest, if it is: nothing waiting on it,
    /// admitted through it or at the shared store's gate for it, and since its last use,
    /// timer, hold, pause, and the instant its buckets were full again. Forgetting a scope
    /// at rest forgets nothing it owes; only what responses taught it, which the next
    /// response teaches again.
    pub(super) fn rests_since(&self) -> Option<Nanos> {
        if self.queued > 0 || self.in_flight > 0 {
            return None;
        }
        let timer = if self.timer == NO_TIMER {
            0
        } else {
            self.timer
        };
        Some(self.scope.rests_since()?.max(self.touched).max(timer))
    }
}
