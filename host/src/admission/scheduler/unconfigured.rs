//! The narrower scopes the configuration does not name, bounded: each provider keeps at most
//! `max_unconfigured_scopes` of their names at once, and a scope of one is forgotten once it
//! has been at rest for `unconfigured_idle_ms`.
//!
//! Why: a narrower scope's name comes from the request — a plugin plans a chat for `gpt-4o`
//! into `model:gpt-4o` — so an agent that writes a new model into each request would
//! otherwise make a scope, a lane and a row of `/scopes` per request, kept for the host's
//! life. Past the bound, a new name is counted under its provider's overflow scope
//! ([`overflow`]: `model:other` for a model, `other` for any other name), which has the shape
//! of any unconfigured scope: the requests of every name past the bound are queued and paced
//! there together, as one quota nobody configured. A configured scope, a credential's own
//! and a tenant's are never counted, nor forgotten.
//!
//! Why a look per scope rather than a sweep: each forgettable scope (one holding a place,
//! or an overflow scope) is put on the schedule when it is made, and each look at it
//! (`Unconfigured::due`) either forgets it or puts it back for the instant it could next
//! have rested long enough. So a scope is on the schedule exactly once for its whole life:
//! none is missed, and the schedule is never longer than the scopes it watches.
//!
//! The scheduler's queue-depth gauge ([`crate::observe::QUEUE_DEPTH`]) is not kept for a
//! scope holding a place, since a series cannot be dropped when its scope is forgotten: the
//! `metrics` facade has no call for it, and the Prometheus exporter forgets a series only
//! through its idle timeout (`PrometheusBuilder::idle_timeout`), which holds for every gauge
//! alike — it would drop the gauges that rarely change too (`sluice_shared_store_up`, an
//! open breaker's), and leave a handle kept here writing to a series no longer rendered. One
//! series per name would so grow `/metrics` with every name ever forgotten. Those scopes show
//! in snapshots (`/scopes`) while they live; [`crate::observe::UNCONFIGURED_SCOPES`] counts
//! them, and an overflow scope, whose name is fixed, has its gauge.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use crate::admission::bucket::Nanos;
use crate::admission::config::{Config, MODEL_SCOPE_PREFIX};

/// The scope a model's name past the bound is counted under.
pub const MODEL_OVERFLOW: &str = "model:other";
/// The scope any other name past the bound is counted under.
pub const OVERFLOW: &str = "other";

/// The overflow scope of the narrower scope `name`: [`MODEL_OVERFLOW`] for a model's,
/// [`OVERFLOW`] for any other.
pub fn overflow(name: &str) -> &'static str {
    if name.starts_with(MODEL_SCOPE_PREFIX) {
        MODEL_OVERFLOW
    } else {
        OVERFLOW
    }
}

/// Whether `name` is an overflow scope's.
pub fn is_overflow(name: &str) -> bool {
    name == MODEL_OVERFLOW || name == OVERFLOW
}

/// The places of every provider's unconfigured names, and when to look at each scope that
/// may be forgotten; see the module docs.
#[derive(Debug)]
pub(super) struct Unconfigured {
    /// The most names a provider keeps, unless it has its own.
    max: u32,
    /// Providers' own bounds.
    own_max: HashMap<Arc<str>, u32>,
    /// How long a scope rests before it is forgotten.
    idle: Nanos,
    /// The names holding a place, by provider.
    providers: HashMap<Arc<str>, Names>,
    /// When to look at each forgettable scope, by id: one entry per scope.
    looks: BinaryHeap<Reverse<(Nanos, u32)>>,
}

/// One provider's names holding a place.
#[derive(Debug)]
struct Names {
    /// Each name, and how many of the provider's credentials have a scope of it.
    scopes: HashMap<Box<str>, u32>,
    /// Reports how many names hold a place ([`crate::observe::UNCONFIGURED_SCOPES`]).
    kept: metrics::Gauge,
}

impl Unconfigured {
    /// The bounds `config` sets.
    pub(super) fn new(config: &Config) -> Self {
        let own_max = config
            .providers
            .iter()
            .filter_map(|(name, p)| Some((name.as_str().into(), p.max_unconfigured_scopes?)))
            .collect();
        Self {
            max: config.queue.max_unconfigured_scopes,
            own_max,
            idle: config
                .queue
                .unconfigured_idle_ms
                .get()
                .saturating_mul(1_000_000),
            providers: HashMap::new(),
            looks: BinaryHeap::new(),
        }
    }

    /// How long a scope rests before it is forgotten.
    pub(super) fn idle(&self) -> Nanos {
        self.idle
    }

    fn max_of(&self, provider: &str) -> u32 {
        self.own_max.get(provider).copied().unwrap_or(self.max)
    }

    /// Whether `provider`'s `name` has a place, or would be given one now.
    pub(super) fn has_place(&self, provider: &str, name: &str) -> bool {
        let kept = self.providers.get(provider);
        kept.is_some_and(|k| k.scopes.contains_key(name))
            || kept.map_or(0, |k| k.scopes.len()) < self.max_of(provider) as usize
    }

    /// Gives a new scope of `provider`'s `name` its place: the place the name has (another
    /// credential's scope of it holds it), or a new one while the provider has room.
    /// Returns `false`, changing nothing, when the provider has no room for the name.
    pub(super) fn place(&mut self, provider: &str, name: &str) -> bool {
        if !self.has_place(provider, name) {
            return false;
        }
        let names = match self.providers.get_mut(provider) {
            Some(names) => names,
            None => self
                .providers
                .entry(provider.into())
                .or_insert_with(|| Names {
                    scopes: HashMap::new(),
                    kept: metrics::gauge!(
                        crate::observe::UNCONFIGURED_SCOPES,
                        "provider" => provider.to_owned()
                    ),
                }),
        };
        match names.scopes.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                names.scopes.insert(name.into(), 1);
            }
        }
        names.kept.set(names.scopes.len() as f64);
        true
    }

    /// A scope of `provider`'s `name` was forgotten: when it was the name's last, the place
    /// is free.
    pub(super) fn release(&mut self, provider: &str, name: &str) {
        let Some(names) = self.providers.get_mut(provider) else {
            return;
        };
        if let Some(n) = names.scopes.get_mut(name) {
            *n -= 1;
            if *n == 0 {
                names.scopes.remove(name);
            }
        }
        names.kept.set(names.scopes.len() as f64);
    }

    /// Looks at scope `id` at `at` ([`Unconfigured::due`]). Call it once when the scope is
    /// made, and again after each look that keeps it.
    pub(super) fn look_at(&mut self, at: Nanos, id: u32) {
        self.looks.push(Reverse((at, id)));
    }

    /// A scope due to be looked at by `now`, taken off the schedule.
    pub(super) fn due(&mut self, now: Nanos) -> Option<u32> {
        let &Reverse((at, id)) = self.looks.peek()?;
        (at <= now).then(|| {
            self.looks.pop();
            id
        })
    }

    /// When the next look is due.
    pub(super) fn next_look(&self) -> Option<Nanos> {
        self.looks.peek().map(|Reverse((at, _))| *at)
    }

    /// How many names of `provider` hold a place.
    #[cfg(test)]
    pub(super) fn kept(&self, provider: &str) -> usize {
        self.providers.get(provider).map_or(0, |k| k.scopes.len())
    }
}

#[cfg(test)]
mod tests;
