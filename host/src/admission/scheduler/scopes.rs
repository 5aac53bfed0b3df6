//! The scheduler's scopes: each provider scope's shape as the configuration gives it, built
//! once, and every scope in use with its bookkeeping, by compact id. A scope is created on
//! first use: a configured one gets its limits, any other starts unbounded and learns its
//! limits from responses.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::{NO_TIMER, index, ms_to_nanos};
use crate::admission::bucket::Nanos;
use crate::admission::config::{self, Config, ConfigError};
use crate::admission::limits::Limits;
use crate::admission::scope::{Scope, ScopeKey, ScopeName, Shape};

/// A provider, a credential whose own limits differ from the provider's (`None`: any
/// other), and one of its named scopes (`None`: the credential's own).
type ShapeKey = (Arc<str>, Option<Arc<str>>, Option<Arc<str>>);

/// A scope and the scheduler's bookkeeping for it.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) key: ScopeKey,
    pub(super) scope: Scope,
    /// The instant this scope's timer is armed for, or [`NO_TIMER`].
    pub(super) timer: Nanos,
    pub(super) queued: u32,
    /// Reports `queued` ([`crate::observe::QUEUE_DEPTH`]); registered once, with the slot.
    depth: metrics::Gauge,
}

impl Slot {
    /// One more (`+1`) or one fewer (`-1`) request waiting on the scope.
    pub(super) fn count(&mut self, change: i32) {
        self.queued = self.queued.saturating_add_signed(change);
        self.depth.set(f64::from(self.queued));
    }
}

/// Every scope in use, by id; see the module docs.
#[derive(Debug)]
pub(super) struct Scopes {
    /// The shape of each provider's credential scope and named scopes, built once.
    shapes: HashMap<ShapeKey, Arc<Shape>>,
    /// The shape of a scope the configuration does not name.
    unconfigured: Arc<Shape>,
    slots: Vec<Slot>,
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
        for (name, p) in &config.providers {
            let margin = p.margin.unwrap_or(config.margin);
            let max_queued = p.max_queued.map_or(per_scope, |n| n.get());
            let wait = p.max_wait_ms.map_or(max_wait, |w| ms_to_nanos(w.get()));
            let provider: Arc<str> = name.as_str().into();
            let own = config::shape(name, &p.limits, margin)?.bounded(max_queued, wait);
            shapes.insert((provider.clone(), None, None), Arc::new(own));
            for named in p.named_scopes() {
                let key = format!("providers.{name}.{}", named.key);
                let s = config::shape(&key, named.limits, margin)?.bounded(max_queued, wait);
                shapes.insert(
                    (provider.clone(), None, Some(named.name.into())),
                    Arc::new(s),
                );
            }
            for (label, c) in &p.credentials {
                let at = format!("providers.{name}.credentials.{label}");
                let credential: Option<Arc<str>> = Some(label.as_str().into());
                if let Some(limits) = &c.limits {
                    let s = config::shape(&at, limits, margin)?.bounded(max_queued, wait);
                    shapes.insert((provider.clone(), credential.clone(), None), Arc::new(s));
                }
                for (scope, key, limits) in c.named() {
                    let key = format!("{at}.{key}");
                    let s = config::shape(&key, limits, margin)?.bounded(max_queued, wait);
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
            slots: Vec::new(),
            ids: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
        })
    }

    /// The id of the scope `key`, if it exists.
    pub(super) fn find(&self, key: &ScopeKey) -> Option<u32> {
        let hash = self.hasher.hash_one(key);
        let slots = &self.slots;
        self.ids
            .find(hash, |&id| slots[id as usize].key == *key)
            .copied()
    }

    /// The id of the scope `key`, created on first use. A provider scope takes its
    /// configured shape; a tenant's takes `tier_quota`, its tier's. Either way a scope the
    /// configuration does not bound starts unbounded.
    pub(super) fn id(&mut self, key: &ScopeKey, tier_quota: Option<Arc<Shape>>) -> u32 {
        self.id_of(key.name(), tier_quota)
    }

    /// [`Scopes::id`] by a borrowed name: nothing is made for a scope that exists.
    pub(super) fn id_of(&mut self, name: ScopeName<'_>, tier_quota: Option<Arc<Shape>>) -> u32 {
        let hash = self.hasher.hash_one(name);
        let slots = &self.slots;
        if let Some(&id) = self
            .ids
            .find(hash, |&id| slots[id as usize].key.name() == name)
        {
            return id;
        }
        let key = name.key();
        let shape = match &key {
            ScopeKey::Provider { .. } => self.shape_of(&key).cloned(),
            ScopeKey::Tenant(_) => tier_quota,
        }
        .unwrap_or_else(|| self.unconfigured.clone());
        let id = index(self.slots.len());
        let depth = metrics::gauge!(crate::observe::QUEUE_DEPTH, "scope" => key.to_string());
        self.slots.push(Slot {
            key,
            scope: Scope::new(shape),
            timer: NO_TIMER,
            queued: 0,
            depth,
        });
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.ids
            .insert_unique(hash, id, |&i| hasher.hash_one(&slots[i as usize].key));
        id
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
        self.slots.get(id as usize)
    }

    /// How many scopes are in use.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Every scope, by id.
    pub(super) fn iter(&self) -> std::slice::Iter<'_, Slot> {
        self.slots.iter()
    }
}

impl Index<u32> for Scopes {
    type Output = Slot;

    fn index(&self, id: u32) -> &Slot {
        &self.slots[id as usize]
    }
}

impl IndexMut<u32> for Scopes {
    fn index_mut(&mut self, id: u32) -> &mut Slot {
        &mut self.slots[id as usize]
    }
}
