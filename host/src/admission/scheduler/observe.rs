//! What responses say about scopes: holds after a 429, and the figures a plugin's
//! `parse-quota` read, landed in the scopes they are about.

use std::time::Duration;

use super::Scheduler;
use crate::admission::bucket::Nanos;
use crate::admission::outcome::GrantId;
use crate::admission::scope::{Learned, ScopeKey};
use crate::admission::usage::Dimension;
use crate::contract::Observation;

impl Scheduler {
    /// Holds the scope named `key` until `until`: nothing charged to it is admitted before.
    /// Call it on a 429 *before* scheduling any retry, so every worker of the scope waits.
    pub fn hold(&mut self, now: Nanos, key: &ScopeKey, until: Nanos, reason: &str) {
        let id = self.scope_id(key);
        self.scopes[id].scope.hold(now, until, reason);
    }

    /// Pauses the scope named `key` until `until` (see [`crate::admission::Scope::pause`]):
    /// the shared store's gate said other hosts have used it until then.
    pub fn pause(&mut self, key: &ScopeKey, until: Nanos, reason: &str) {
        let id = self.scope_id(key);
        self.scopes[id].scope.pause(until, reason);
    }

    /// A call of this host admitted here waits at the shared store's gate for the scope
    /// named `key` (see [`crate::admission::shared`]).
    pub fn gate_enter(&mut self, key: &ScopeKey) {
        let id = self.scope_id(key);
        self.scopes[id].scope.gate_enter();
    }

    /// A call left the gate of the scope named `key`: it `passed`, or gave up. When the last
    /// one passed, the scope's pause is lifted and what waits on it may go; after one that
    /// gave up, the pause runs to the end the store named.
    pub fn gate_leave(&mut self, key: &ScopeKey, passed: bool) {
        let id = self.scope_id(key);
        if self.scopes[id].scope.gate_leave(passed) {
            self.wake(id);
            // A tenant's own quota: its flows were set aside until the pause's end.
            let parked: Vec<_> = self
                .flows
                .iter()
                .filter(|(_, f)| f.parked && self.tenants[f.tenant].quota == Some(id))
                .map(|(flow, _)| flow)
                .collect();
            for flow in parked {
                self.unpark(flow);
            }
        }
    }

    /// Lifts the hold on the scope named `key` (see [`crate::admission::Scope::lift`]).
    pub fn lift(&mut self, now: Nanos, key: &ScopeKey) {
        let id = self.scope_id(key);
        self.scopes[id].scope.lift(now);
    }

    /// The hold in force on the scope named `key` at `now`, if any.
    pub fn hold_of(&mut self, now: Nanos, key: &ScopeKey) -> Option<crate::admission::Hold> {
        let id = self.scope_id(key);
        self.scopes[id].scope.held(now).cloned()
    }

    /// Records what a response said about the scope named `key` (see [`crate::admission::Scope::learn`]).
    pub fn learn(
        &mut self,
        now: Nanos,
        key: &ScopeKey,
        learned: Learned,
        window: Option<Duration>,
    ) {
        let now = self.now.max(now);
        let id = self.scope_id(key);
        self.scopes[id].scope.learn(now, learned, window);
    }

    /// Records what a plugin's `parse-quota` read from the response to `grant`: each
    /// observation lands in the grant's credential scope, or in the narrower scope it names.
    /// Returns how many were recorded; observations of concurrency or of provider-specific
    /// dimensions are not rate quotas and are skipped.
    pub fn observe(&mut self, now: Nanos, grant: GrantId, observations: &[Observation]) -> usize {
        let mut recorded = 0;
        for o in observations {
            let Some(dimension) = Dimension::from_policy(&o.dimension) else {
                continue;
            };
            let Some(key) = self.observed_scope(grant, o.scope.as_deref()) else {
                continue;
            };
            let ms = |v: u64| v.saturating_mul(1_000_000);
            let learned = Learned {
                dimension,
                limit: o.limit,
                remaining: o.remaining,
                reset_at: o.reset_after_ms.map(|r| now.saturating_add(ms(r))),
                seen_at: now,
                source: o.source.as_str().into(),
            };
            let window = o.window_ms.map(Duration::from_millis);
            self.learn(now, &key, learned, window);
            recorded += 1;
        }
        recorded
    }

    /// The scope key of `grant`'s credential, and of a narrower scope `name` of the same
    /// credential: where a plugin's observation about a response lands. An unconfigured
    /// name with no scope of its own that the grant was counted under its overflow scope
    /// for, or that its provider has no place for, lands in the overflow scope (see
    /// [`super::unconfigured`]).
    pub fn observed_scope(&self, grant: GrantId, name: Option<&str>) -> Option<ScopeKey> {
        let g = self.grants.get(grant)?;
        let charged = &self.lanes[g.lane].scopes;
        let first = charged[0];
        match (&self.scopes[first].key, name) {
            (key, None) => Some(key.clone()),
            (
                ScopeKey::Provider {
                    provider,
                    credential,
                    ..
                },
                Some(name),
            ) => {
                let key = ScopeKey::Provider {
                    provider: provider.clone(),
                    credential: credential.clone(),
                    name: Some(name.into()),
                };
                Some(self.scopes.resolved(key, charged))
            }
            (ScopeKey::Tenant(_), Some(_)) => None,
        }
    }
}
