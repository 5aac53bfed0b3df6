//! Tenants and their tiers: the weight of a tenant's fair share, and its own quotas.

use std::num::NonZeroU32;
use std::sync::Arc;

use super::fair::FlowId;
use super::scope::Shape;

/// A tier, as the scheduler uses it.
#[derive(Debug, Clone)]
pub struct Tier {
    /// The tier's name.
    pub name: Arc<str>,
    /// The weight of each of its tenants' shares.
    pub weight: NonZeroU32,
    /// The most requests one tenant of the tier may queue.
    pub max_queued: Option<u32>,
    /// The most requests one tenant of the tier may have in flight.
    pub max_in_flight: Option<u32>,
    /// Each tenant's own rate quotas, if the tier sets any.
    pub quota: Option<Arc<Shape>>,
}

impl Tier {
    /// A tier with the given weight and no quotas.
    pub fn weighted(name: &str, weight: NonZeroU32) -> Self {
        Self {
            name: name.into(),
            weight,
            max_queued: None,
            max_in_flight: None,
            quota: None,
        }
    }
}

/// One tenant, as the scheduler keeps it.
#[derive(Debug)]
pub(crate) struct Tenant {
    pub name: Arc<str>,
    pub tier: u32,
    pub weight: u64,
    pub queued: u32,
    pub in_flight: u32,
    /// The tenant's quota scope, when its tier has quotas.
    pub quota: Option<u32>,
    /// Flows set aside until one of the tenant's requests in flight finishes.
    pub parked: Vec<FlowId>,
}
