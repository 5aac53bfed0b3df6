//! The scheduler's tenants and their tiers, by compact id: the tiers as the configuration
//! defines them, and each tenant, in the tier the configuration assigns it, from the first
//! request that names it.

use std::collections::{BTreeMap, HashMap};
use std::ops::Index;
use std::sync::Arc;

use super::index;
use crate::admission::config::{self, Config, ConfigError, DEFAULT_TIER};
use crate::admission::fair::{FlowId, band_of};
use crate::admission::scope::Shape;
use crate::admission::tenant::{ClassSet, Tenant, Tier};

/// Every tier, and every tenant seen; see the module docs.
#[derive(Debug)]
pub(super) struct Tenants {
    tiers: Vec<Tier>,
    tier_ids: HashMap<String, u32>,
    /// Tiers of named tenants, by tier name (`tenants.assign`).
    assign: BTreeMap<String, String>,
    /// The tier of a tenant `assign` does not name.
    default_tier: u32,
    all: Vec<Tenant>,
    ids: HashMap<Arc<str>, u32>,
}

impl Tenants {
    /// The tiers `config` defines, and no tenant yet.
    pub(super) fn new(config: &Config) -> Result<Self, ConfigError> {
        let mut tiers = vec![Tier::weighted(DEFAULT_TIER, std::num::NonZeroU32::MIN)];
        let mut tier_ids = HashMap::from([(DEFAULT_TIER.to_owned(), 0)]);
        for (name, t) in &config.tiers {
            let quota = if t.limits.is_empty() {
                None
            } else {
                Some(Arc::new(config::shape(name, &t.limits, config.margin)?))
            };
            let tier = Tier {
                name: name.as_str().into(),
                weight: t.weight,
                max_queued: t.max_queued.map(|n| n.get()),
                max_in_flight: t.max_in_flight.map(|n| n.get()),
                quota,
                precedence: t.precedence,
                classes: t.classes.as_deref().map_or(ClassSet::ALL, ClassSet::of),
            };
            if let Some(&i) = tier_ids.get(name) {
                tiers[i as usize] = tier;
            } else {
                tier_ids.insert(name.clone(), index(tiers.len()));
                tiers.push(tier);
            }
        }
        let default_tier = tier_ids[&config.tenants.default_tier];
        Ok(Self {
            tiers,
            tier_ids,
            assign: config.tenants.assign.clone(),
            default_tier,
            all: Vec::new(),
            ids: HashMap::new(),
        })
    }

    /// The id of the tier the tenant `name` is in.
    pub(super) fn tier_of(&self, name: &str) -> u32 {
        self.assign
            .get(name)
            .and_then(|t| self.tier_ids.get(t))
            .copied()
            .unwrap_or(self.default_tier)
    }

    /// The tier `id`.
    pub(super) fn tier(&self, id: u32) -> &Tier {
        &self.tiers[id as usize]
    }

    /// The quota of the tier the tenant `name` is in: what the tenant's own scope is shaped
    /// by, if its tier has one.
    pub(super) fn quota_of(&self, name: &str) -> Option<Arc<Shape>> {
        self.tier(self.tier_of(name)).quota.clone()
    }

    /// The id of the tenant `name`, if a request named it before.
    pub(super) fn find(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// Adds the tenant `name`, whose own quota is the scope `quota` (when its tier has one).
    pub(super) fn insert(&mut self, name: Arc<str>, quota: Option<u32>) -> u32 {
        let tier = self.tier_of(&name);
        let t = &self.tiers[tier as usize];
        let id = index(self.all.len());
        self.all.push(Tenant {
            name: name.clone(),
            tier,
            weight: u64::from(t.weight.get()),
            band: band_of(t.precedence),
            queued: 0,
            in_flight: 0,
            quota,
            parked: Vec::new(),
        });
        self.ids.insert(name, id);
        id
    }

    /// Tenant `id` has one more request queued.
    pub(super) fn enqueued(&mut self, id: u32) {
        self.all[id as usize].queued += 1;
    }

    /// A queued request of tenant `id` left the queue (admitted, withdrawn or expired).
    pub(super) fn left(&mut self, id: u32) {
        self.all[id as usize].queued -= 1;
    }

    /// Sets `flow` of tenant `id` aside until one of the tenant's requests in flight is
    /// settled ([`Tenants::settled`]): the tenant's limits block it with no time to wait for.
    pub(super) fn park(&mut self, id: u32, flow: FlowId) {
        self.all[id as usize].parked.push(flow);
    }

    /// Tenant `id` has one more request in flight; returns the scope of its own quota, which
    /// the request charges too, if it has one.
    pub(super) fn admitted(&mut self, id: u32) -> Option<u32> {
        let t = &mut self.all[id as usize];
        t.in_flight += 1;
        t.quota
    }

    /// A request of tenant `id` in flight is settled: returns the scope of its own quota, if
    /// any, and the flows set aside for it, to queue again.
    pub(super) fn settled(&mut self, id: u32) -> (Option<u32>, Vec<FlowId>) {
        let t = &mut self.all[id as usize];
        t.in_flight = t.in_flight.saturating_sub(1);
        (t.quota, std::mem::take(&mut t.parked))
    }

    /// Every tenant, by id.
    pub(super) fn iter(&self) -> std::slice::Iter<'_, Tenant> {
        self.all.iter()
    }
}

impl Index<u32> for Tenants {
    type Output = Tenant;

    fn index(&self, id: u32) -> &Tenant {
        &self.all[id as usize]
    }
}
