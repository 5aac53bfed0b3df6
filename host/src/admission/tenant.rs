//! Tenants and their tiers: the weight of a tenant's fair share, and its own quotas.

use std::num::NonZeroU32;
use std::sync::Arc;

use super::fair::{Class, FlowId};
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
    /// Its precedence over other tiers (0 to [`super::fair::MAX_PRECEDENCE`]): while a tier
    /// of higher precedence has requests that may go, a lower tier's wait. 0 for every tier
    /// unless the operator grants more.
    pub precedence: u8,
    /// The classes its tenants' requests may be queued in; a request of another class is
    /// queued in the nearest allowed one, less urgent first.
    pub classes: ClassSet,
}

/// A set of queue classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassSet(u8);

impl ClassSet {
    /// Every class.
    pub const ALL: Self = Self(0b111);

    /// The set of `classes`.
    pub fn of(classes: &[Class]) -> Self {
        Self(classes.iter().fold(0, |m, c| m | 1 << c.index()))
    }

    /// Its classes, most urgent first.
    pub fn classes(self) -> impl Iterator<Item = Class> {
        Class::ALL.into_iter().filter(move |c| self.contains(*c))
    }

    /// Whether `class` is in the set.
    pub fn contains(self, class: Class) -> bool {
        self.0 & (1 << class.index()) != 0
    }

    /// `class` if the set holds it, else the nearest class it holds, less urgent first;
    /// `class` when the set is empty.
    pub fn allowed(self, class: Class) -> Class {
        if self.contains(class) {
            return class;
        }
        let i = class.index();
        let below = Class::ALL[i..].iter().find(|c| self.contains(**c));
        let above = Class::ALL[..i].iter().rev().find(|c| self.contains(**c));
        below.or(above).copied().unwrap_or(class)
    }
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
            precedence: 0,
            classes: ClassSet::ALL,
        }
    }
}

/// One tenant, as the scheduler keeps it.
#[derive(Debug)]
pub(crate) struct Tenant {
    pub name: Arc<str>,
    pub tier: u32,
    pub weight: u64,
    /// The band its flows queue in: its tier's precedence ([`super::fair::band_of`]).
    pub band: u8,
    pub queued: u32,
    pub in_flight: u32,
    /// The tenant's quota scope, when its tier has quotas.
    pub quota: Option<u32>,
    /// Flows set aside until one of the tenant's requests in flight finishes.
    pub parked: Vec<FlowId>,
}
