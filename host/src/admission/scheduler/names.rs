//! Names to ids, resolved once: scopes (created on first use, with the shape the
//! configuration gives them), routes (the set of scopes a request charges), and tenants (in
//! the tier the configuration assigns them).

use std::hash::BuildHasher;
use std::sync::Arc;

use super::{NO_TIMER, Route, Scheduler, ShapeKey, Slot, TenantId, index};
use crate::admission::fair::Lane;
use crate::admission::limits::Limits;
use crate::admission::scope::{Scope, ScopeKey, Shape};
use crate::admission::tenant::Tenant;

impl Scheduler {
    /// The scope named `key`, created on first use: a configured provider scope gets its
    /// limits; any other starts unbounded and learns its limits from responses.
    pub fn scope_id(&mut self, key: &ScopeKey) -> u32 {
        let hash = self.hasher.hash_one(key);
        let slots = &self.slots;
        if let Some(&id) = self
            .scope_index
            .find(hash, |&id| slots[id as usize].key == *key)
        {
            return id;
        }
        let shape = match key {
            ScopeKey::Provider { provider, name, .. } => self
                .shapes
                .get(&(provider.clone(), name.clone()))
                .cloned()
                .unwrap_or_else(|| self.unconfigured()),
            ScopeKey::Tenant(t) => {
                let tier = self.tier_of(t);
                self.tiers[tier as usize]
                    .quota
                    .clone()
                    .unwrap_or_else(|| self.unconfigured())
            }
        };
        let id = index(self.slots.len());
        let depth = metrics::gauge!(crate::observe::QUEUE_DEPTH, "scope" => key.to_string());
        self.slots.push(Slot {
            key: key.clone(),
            scope: Scope::new(shape),
            timer: NO_TIMER,
            queued: 0,
            depth,
        });
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.scope_index
            .insert_unique(hash, id, |&i| hasher.hash_one(&slots[i as usize].key));
        id
    }

    fn unconfigured(&mut self) -> Arc<Shape> {
        let key: ShapeKey = ("".into(), None);
        let d = &self.defaults;
        let (margin, queued, wait) = (d.margin, d.max_queued_per_scope, d.max_wait);
        self.shapes
            .entry(key)
            .or_insert_with(|| {
                // Validated with the configuration: an empty shape cannot fail.
                let shape = Shape::new(&Limits::default(), margin).unwrap_or_else(|_| {
                    unreachable!("an empty set of limits with a validated margin")
                });
                Arc::new(shape.bounded(queued, wait))
            })
            .clone()
    }

    /// A scope by id.
    pub fn scope(&self, id: u32) -> Option<(&ScopeKey, &Scope)> {
        self.slots.get(id as usize).map(|s| (&s.key, &s.scope))
    }

    /// The route of requests sent with `credential` to `provider` that also charge the
    /// narrower scopes `names` (a model, an endpoint family). Every request charges its
    /// credential's own scope: with no names, all of the credential's workers share it.
    pub fn route(&mut self, provider: &str, credential: &str, names: &[&str]) -> Route {
        let provider: Arc<str> = provider.into();
        let credential: Arc<str> = credential.into();
        let mut scopes = vec![self.scope_id(&ScopeKey::Provider {
            provider: provider.clone(),
            credential: credential.clone(),
            name: None,
        })];
        for name in names {
            let id = self.scope_id(&ScopeKey::Provider {
                provider: provider.clone(),
                credential: credential.clone(),
                name: Some((*name).into()),
            });
            if !scopes.contains(&id) {
                scopes.push(id);
            }
        }
        scopes[1..].sort_unstable();
        let scopes = scopes.into_boxed_slice();
        if let Some(&lane) = self.lane_index.get(&scopes) {
            return Route(lane);
        }
        let lane = index(self.lanes.len());
        self.lanes.push(Lane::new(scopes.clone()));
        self.lane_index.insert(scopes, lane);
        Route(lane)
    }

    pub(super) fn tier_of(&self, tenant: &str) -> u32 {
        self.config
            .tenants
            .assign
            .get(tenant)
            .and_then(|t| self.tier_index.get(t))
            .copied()
            .unwrap_or(self.defaults.default_tier)
    }

    /// The tenant named `name`, in the tier the configuration assigns it.
    pub fn tenant(&mut self, name: &str) -> TenantId {
        if let Some(&id) = self.tenant_index.get(name) {
            return TenantId(id);
        }
        let name: Arc<str> = name.into();
        let tier = self.tier_of(&name);
        let quota = self.tiers[tier as usize]
            .quota
            .is_some()
            .then(|| self.scope_id(&ScopeKey::Tenant(name.clone())));
        let id = index(self.tenants.len());
        self.tenants.push(Tenant {
            name: name.clone(),
            tier,
            weight: u64::from(self.tiers[tier as usize].weight.get()),
            band: crate::admission::fair::band_of(self.tiers[tier as usize].precedence),
            queued: 0,
            in_flight: 0,
            quota,
            parked: Vec::new(),
        });
        self.tenant_index.insert(name, id);
        TenantId(id)
    }
}
