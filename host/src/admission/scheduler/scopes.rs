//! The scheduler's scopes: each provider scope's shape as the configuration gives it, built
//! once, and every scope in use with its bookkeeping, by compact id. A scope is created on
//! first use: a configured one gets its limits, any other starts unbounded and learns its
//! limits from responses. The narrower scopes the configuration does not name are bounded
//! per provider and forgotten once at rest ([`super::unconfigured`]); the id of a forgotten
//! scope is given to the next one made.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::slot::Slot;
use super::unconfigured::{Unconfigured, is_overflow, overflow};
use super::{NO_TIMER, index, ms_to_nanos};
use crate::admission::bucket::Nanos;
use crate::admission::config::{self, Config, ConfigError};
use crate::admission::limits::Limits;
use crate::admission::scope::{Scope, ScopeKey, ScopeName, Shape};

/// A provider, a credential whose own limits differ from the provider's (`None`: any
/// other), and one of its named scopes (`None`: the credential's own).
type ShapeKey = (Arc<str>, Option<Arc<str>>, Option<Arc<str>>);

/// Whether a scope may be forgotten, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Configured, a credential's own or a tenant's: kept for the host's life.
    Kept,
    /// An unconfigured narrower scope, holding a place of its provider's names.
    Placed,
    /// An overflow scope (`model:other`, `other`): forgotten at rest, holding no place.
    Overflow,
}

/// Every scope in use, by id; see the module docs.
#[derive(Debug)]
pub(super) struct Scopes {
    /// The shape of each provider's credential scope and named scopes, built once.
    shapes: HashMap<ShapeKey, Arc<Shape>>,
    /// The shape of a scope the configuration does not name.
    unconfigured: Arc<Shape>,
    /// The same, for a provider whose plugin declares its refill.
    unconfigured_of: HashMap<Arc<str>, Arc<Shape>>,
    /// The places of unconfigured names, and when to look at the scopes that may go.
    places: Unconfigured,
    /// By id; `None`: forgotten, its id in `free`.
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    /// Scope ids by their slot's key (the key is kept once, in the slot).
    ids: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl Scopes {
    /// The shapes of every scope `config` names, bounded by its queue's limits.
    pub(super) fn new(config: &Config) -> Result<Self, ConfigError> {
        let max_wait = ms_to_nanos(config.queue.max_wait_ms.get());
        let per_scope = config.queue.max_queued_per_scope.get();
        let mut shapes = HashMap::new();
        let mut unconfigured_of = HashMap::new();
        for (name, p) in &config.providers {
            let margin = p.margin.unwrap_or(config.margin);
            let max_queued = p.max_queued.map_or(per_scope, |n| n.get());
            let wait = p.max_wait_ms.map_or(max_wait, |w| ms_to_nanos(w.get()));
            let provider: Arc<str> = name.as_str().into();
            // A quota that sets no refill refills as the provider's plugin declares.
            let declared = |limits: &Limits| Limits {
                refill: limits.refill.or(p.declared_refill),
                ..limits.clone()
            };
            let shape = |key: &str, limits: &Limits| config::shape(key, &declared(limits), margin);
            if p.declared_refill.is_some() {
                let s = shape("margin", &Limits::default())?.bounded(per_scope, max_wait);
                unconfigured_of.insert(provider.clone(), Arc::new(s));
            }
            let own = shape(name, &p.limits)?.bounded(max_queued, wait);
            shapes.insert((provider.clone(), None, None), Arc::new(own));
            for named in p.named_scopes() {
                let key = format!("providers.{name}.{}", named.key);
                let s = shape(&key, named.limits)?.bounded(max_queued, wait);
                shapes.insert(
                    (provider.clone(), None, Some(named.name.into())),
                    Arc::new(s),
                );
            }
            for (label, c) in &p.credentials {
                let at = format!("providers.{name}.credentials.{label}");
                let credential: Option<Arc<str>> = Some(label.as_str().into());
                if let Some(limits) = &c.limits {
                    let s = shape(&at, limits)?.bounded(max_queued, wait);
                    shapes.insert((provider.clone(), credential.clone(), None), Arc::new(s));
                }
                for (scope, key, limits) in c.named() {
                    let key = format!("{at}.{key}");
                    let s = shape(&key, limits)?.bounded(max_queued, wait);
                    let k = (provider.clone(), credential.clone(), Some(scope.into()));
                    shapes.insert(k, Arc::new(s));
                }
            }
        }
        let unconfigured = config::shape("margin", &Limits::default(), config.margin)?
            .bounded(per_scope, max_wait);
        Ok(Self {
            shapes,
            unconfigured: Arc::new(unconfigured),
            unconfigured_of,
            places: Unconfigured::new(config),
            slots: Vec::new(),
            free: Vec::new(),
            ids: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
        })
    }

    /// The id of the scope `key`, if it exists.
    pub(super) fn find(&self, key: &ScopeKey) -> Option<u32> {
        self.find_name(key.name(), self.hasher.hash_one(key))
    }

    fn find_name(&self, name: ScopeName<'_>, hash: u64) -> Option<u32> {
        let slots = &self.slots;
        self.ids
            .find(hash, |&id| {
                slots[id as usize]
                    .as_ref()
                    .is_some_and(|s| s.key.name() == name)
            })
            .copied()
    }

    /// The id of the scope `key`, created on first use at `now`. A provider scope takes its
    /// configured shape; a tenant's takes `tier_quota`, its tier's. Either way a scope the
    /// configuration does not bound starts unbounded. An unconfigured narrower scope whose
    /// provider has no place left for its name is its overflow scope (see
    /// [`super::unconfigured`]).
    pub(super) fn id(&mut self, key: &ScopeKey, tier_quota: Option<Arc<Shape>>, now: Nanos) -> u32 {
        self.id_of(key.name(), tier_quota, now)
    }

    /// [`Scopes::id`] by a borrowed name: nothing is made for a scope that exists.
    pub(super) fn id_of(
        &mut self,
        name: ScopeName<'_>,
        tier_quota: Option<Arc<Shape>>,
        now: Nanos,
    ) -> u32 {
        let hash = self.hasher.hash_one(name);
        if let Some(id) = self.find_name(name, hash) {
            self[id].touch(now);
            return id;
        }
        let key = name.key();
        let (shape, kind) = match &key {
            ScopeKey::Provider {
                provider,
                name: Some(n),
                ..
            } if !self.configured(&key) => {
                if is_overflow(n) {
                    (None, Kind::Overflow)
                } else if self.places.place(provider, n) {
                    (None, Kind::Placed)
                } else {
                    return self.id_of(overflowed(name), None, now);
                }
            }
            ScopeKey::Provider { .. } => (self.shape_of(&key).cloned(), Kind::Kept),
            ScopeKey::Tenant(_) => (tier_quota, Kind::Kept),
        };
        let shape = shape.unwrap_or_else(|| match &key {
            ScopeKey::Provider { provider, .. } => self
                .unconfigured_of
                .get(provider)
                .unwrap_or(&self.unconfigured)
                .clone(),
            ScopeKey::Tenant(_) => self.unconfigured.clone(),
        });
        let depth = if kind == Kind::Placed {
            metrics::Gauge::noop()
        } else {
            metrics::gauge!(crate::observe::QUEUE_DEPTH, "scope" => key.to_string())
        };
        let slot = Slot {
            key,
            scope: Scope::new(shape),
            timer: NO_TIMER,
            queued: 0,
            in_flight: 0,
            touched: now,
            depth,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(slot);
                id
            }
            None => {
                self.slots.push(Some(slot));
                index(self.slots.len() - 1)
            }
        };
        if kind != Kind::Kept {
            self.places
                .look_at(now.saturating_add(self.places.idle()), id);
        }
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.ids.insert_unique(hash, id, |&i| {
            slots[i as usize]
                .as_ref()
                .map_or(0, |s| hasher.hash_one(&s.key))
        });
        id
    }

    /// The key a scope named `key` is counted under, for a request charging the scopes
    /// `charged`: its own while it has a scope (or is configured); else the overflow scope
    /// the request was counted under instead, or would be if the scope were made now.
    pub(super) fn resolved(&self, key: ScopeKey, charged: &[u32]) -> ScopeKey {
        let ScopeKey::Provider {
            provider,
            name: Some(n),
            ..
        } = &key
        else {
            return key;
        };
        if self.find(&key).is_some() || self.configured(&key) || is_overflow(n) {
            return key;
        }
        let over = overflowed(key.name());
        let counted_over = charged
            .iter()
            .any(|&s| self.get(s).is_some_and(|slot| slot.key.name() == over));
        if counted_over || !self.places.has_place(provider, n) {
            over.key()
        } else {
            key
        }
    }

    /// A forgettable scope due to be looked at by `now` ([`Slot::rests_since`]), taken off
    /// the schedule: it must be forgotten ([`Scopes::forget`]) or looked at again
    /// ([`Scopes::look_at`]).
    pub(super) fn due(&mut self, now: Nanos) -> Option<u32> {
        self.places.due(now)
    }

    /// Looks at scope `id` again at `at`.
    pub(super) fn look_at(&mut self, at: Nanos, id: u32) {
        self.places.look_at(at, id);
    }

    /// When the next look at a forgettable scope is due.
    pub(super) fn next_look(&self) -> Option<Nanos> {
        self.places.next_look()
    }

    /// How long a forgettable scope rests before it is forgotten.
    pub(super) fn idle(&self) -> Nanos {
        self.places.idle()
    }

    /// Forgets scope `id`: its name's place is freed, and its id given to the next scope
    /// made. Nothing may refer to it any more (no lane, timer or grant).
    pub(super) fn forget(&mut self, id: u32) {
        let Some(slot) = self.slots.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        let hash = self.hasher.hash_one(&slot.key);
        if let Ok(entry) = self.ids.find_entry(hash, |&i| i == id) {
            entry.remove();
        }
        if let ScopeKey::Provider {
            provider,
            name: Some(n),
            ..
        } = &slot.key
            && !is_overflow(n)
            && !self.configured(&slot.key)
        {
            self.places.release(provider, n);
        }
        self.free.push(id);
    }

    /// Whether the configuration names the provider scope `key` (a tenant's scope: never
    /// here, its tier's quota says).
    pub(super) fn configured(&self, key: &ScopeKey) -> bool {
        self.shape_of(key).is_some()
    }

    /// The configured shape of the provider scope `key`: its credential's own, else its
    /// provider's (a tenant's scope: none here, its tier's quota says).
    fn shape_of(&self, key: &ScopeKey) -> Option<&Arc<Shape>> {
        let ScopeKey::Provider {
            provider,
            credential,
            name,
        } = key
        else {
            return None;
        };
        let own = (provider.clone(), Some(credential.clone()), name.clone());
        self.shapes
            .get(&own)
            .or_else(|| self.shapes.get(&(provider.clone(), None, name.clone())))
    }

    /// The scope `id`, if it exists.
    pub(super) fn get(&self, id: u32) -> Option<&Slot> {
        self.slots.get(id as usize)?.as_ref()
    }

    /// The scope `id`, if it exists, to change.
    pub(super) fn get_mut(&mut self, id: u32) -> Option<&mut Slot> {
        self.slots.get_mut(id as usize)?.as_mut()
    }

    /// One past the largest id in use: a table indexed by scope id has this many rows.
    pub(super) fn ids_len(&self) -> usize {
        self.slots.len()
    }

    /// Every scope in use, with its id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &Slot)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, s)| Some((index(id), s.as_ref()?)))
    }

    /// How many names of `provider`'s unconfigured scopes hold a place.
    #[cfg(test)]
    pub(super) fn placed(&self, provider: &str) -> usize {
        self.places.kept(provider)
    }
}

/// The overflow scope of `name`, an unconfigured narrower scope.
fn overflowed(name: ScopeName<'_>) -> ScopeName<'_> {
    match name {
        ScopeName::Provider {
            provider,
            credential,
            name: Some(n),
        } => ScopeName::Provider {
            provider,
            credential,
            name: Some(overflow(n)),
        },
        other => other,
    }
}

impl Index<u32> for Scopes {
    type Output = Slot;

    fn index(&self, id: u32) -> &Slot {
        self.get(id)
            .unwrap_or_else(|| panic!("scope {id} was forgotten while in use"))
    }
}

impl IndexMut<u32> for Scopes {
    fn index_mut(&mut self, id: u32) -> &mut Slot {
        self.get_mut(id)
            .unwrap_or_else(|| panic!("scope {id} was forgotten while in use"))
    }
}
