//! Each credential's places for calls waiting to retry, shared fairly by its tenants.
//!
//! At most `max` calls of a scope (a provider's credential) wait to retry at once
//! (`RetryConfig::max_delayed_requests`): past it, a failed call ends instead of sleeping, so
//! a storm of failures never piles up sleeping retries. Two tenants often share one
//! credential, and with the places handed out first come, first served, one tenant's retry
//! storm took every place and the other tenants' calls that needed a delayed retry ended at
//! once.
//!
//! **Each tenant has its share.** With `n` tenants holding places (a tenant asking for its
//! first counted among them), a tenant's share is `max / n`. A tenant is given a place
//!
//! - whenever one is free, whatever it holds: a lone tenant may use every place (the places
//!   are never left idle for a tenant that may not come);
//! - when none is free but it holds fewer than its share: the newest place of the tenant
//!   holding the most is **taken back** for it, and the call that held it ends as if it had
//!   found the places full ([`Reason::ScopeRetriesFull`](super::Reason::ScopeRetriesFull),
//!   retry later), without sending again.
//!
//! Otherwise (none free, and it holds at least its share) it is refused. So a tenant holding
//! fewer than its share is never refused: were every other tenant at most at its share, a
//! place would be free (`h < max / n` and the others at most `max / n` each sum to less than
//! `max`), so the tenant holding the most holds more than its share, and gives one up — and
//! still holds at least its share after. A place is only ever taken back from a tenant over
//! its share. Shares round down: with more tenants holding places than there are places, a
//! newcomer's share is none: it is given a place only when one is free.
//!
//! Why take places back, rather than keep a reserve free for tenants holding none: with
//! places that are only given back when their retry goes, the two promises cannot both
//! hold. A lone tenant that may use every place leaves nothing for the tenant that comes
//! next, and a reserve that is always kept free is a share no one may use. A place held by a
//! tenant over its share is a retry its own failures caused; ending it early costs that
//! tenant one retry, which the limit would have cost it had the other tenant come first.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

/// Each credential scope's places for delayed retries, shared by its tenants.
#[derive(Debug)]
pub(super) struct DelayPlaces {
    max: u32,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// By provider and credential; a scope without places taken is not kept.
    scopes: HashMap<(String, String), Scope>,
    /// The next place's number: places are numbered in the order they were taken.
    next: u64,
}

#[derive(Debug, Default)]
struct Scope {
    /// Places taken, over every tenant.
    taken: u32,
    /// Each tenant's places, oldest first, each with the sender that takes it back; a tenant
    /// without places is not kept.
    tenants: HashMap<String, BTreeMap<u64, oneshot::Sender<()>>>,
}

/// A call's place among its scope's delayed retries, given back when dropped.
pub(super) struct Delayed<'a> {
    places: &'a DelayPlaces,
    key: (String, String),
    tenant: String,
    number: u64,
    /// Fires when the place is taken back for a tenant under its share.
    taken_back: oneshot::Receiver<()>,
}

impl Drop for Delayed<'_> {
    fn drop(&mut self) {
        let mut state = self.places.lock();
        let Some(scope) = state.scopes.get_mut(&self.key) else {
            return;
        };
        // A place taken back is no longer among the tenant's: nothing to give.
        if scope.give_back(&self.tenant, self.number).is_some() && scope.taken == 0 {
            state.scopes.remove(&self.key);
        }
    }
}

impl Delayed<'_> {
    /// Waits `delay` in the place: `false` when the place was taken back first, for a tenant
    /// under its share (the call ends without its retry).
    pub(super) async fn wait(&mut self, delay: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(delay) => true,
            _ = &mut self.taken_back => false,
        }
    }

    /// Whether the place was taken back for a tenant under its share.
    #[cfg(test)]
    fn was_taken_back(&mut self) -> bool {
        !matches!(
            self.taken_back.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        )
    }
}

impl Scope {
    /// Gives `tenant`'s place `number` back; `None` when it held no such place.
    fn give_back(&mut self, tenant: &str, number: u64) -> Option<oneshot::Sender<()>> {
        let held = self.tenants.get_mut(tenant)?;
        let sender = held.remove(&number)?;
        if held.is_empty() {
            self.tenants.remove(tenant);
        }
        self.taken -= 1;
        Some(sender)
    }

    /// Takes the newest place of the tenant holding the most, if it holds more than
    /// `share`; returns that tenant.
    fn take_back(&mut self, for_tenant: &str, share: u32) -> Option<String> {
        let (victim, newest) = self
            .tenants
            .iter()
            .filter(|(t, _)| t.as_str() != for_tenant)
            .max_by_key(|(_, held)| held.len())
            .filter(|(_, held)| held.len() > share as usize)
            .and_then(|(t, held)| Some((t.clone(), *held.keys().next_back()?)))?;
        let sender = self.give_back(&victim, newest)?;
        // Its call may have ended meanwhile: then no one is told, and the place is free.
        let _ = sender.send(());
        Some(victim)
    }
}

impl DelayPlaces {
    /// At most `max` places a scope.
    pub(super) fn new(max: u32) -> Self {
        Self {
            max,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place among `provider`/`credential`'s delayed retries for a call of `tenant`: a
    /// free one, else one taken back from the tenant holding the most when `tenant` holds
    /// fewer than its share; `None` when none is free and `tenant` holds its share.
    pub(super) fn take(
        &self,
        provider: &str,
        credential: &str,
        tenant: &str,
    ) -> Option<Delayed<'_>> {
        let key = (provider.to_owned(), credential.to_owned());
        let mut state = self.lock();
        let number = state.next;
        state.next += 1;
        let scope = state.scopes.entry(key.clone()).or_default();
        if scope.taken >= self.max {
            let held = scope.tenants.get(tenant).map_or(0, BTreeMap::len);
            let holders = scope.tenants.len() + usize::from(held == 0);
            let share = self.max / u32::try_from(holders).unwrap_or(u32::MAX);
            let from = if held < share as usize {
                scope.take_back(tenant, share)
            } else {
                None
            };
            let Some(from) = from else {
                if scope.taken == 0 {
                    state.scopes.remove(&key);
                }
                return None;
            };
            tracing::info!(
                provider,
                credential,
                tenant,
                from = %from,
                share,
                "a place for a delayed retry was taken back for a tenant under its share; the \
                 call that held it ends"
            );
        }
        let (sender, taken_back) = oneshot::channel();
        let held = scope.tenants.entry(tenant.to_owned()).or_default();
        held.insert(number, sender);
        scope.taken += 1;
        Some(Delayed {
            places: self,
            key,
            tenant: tenant.to_owned(),
            number,
            taken_back,
        })
    }

    /// The places of `provider`/`credential` taken now.
    pub(super) fn taken(&self, provider: &str, credential: &str) -> u32 {
        self.lock()
            .scopes
            .get(&(provider.to_owned(), credential.to_owned()))
            .map_or(0, |s| s.taken)
    }

    /// The places of `provider`/`credential` that `tenant` holds now.
    #[cfg(test)]
    fn held(&self, provider: &str, credential: &str, tenant: &str) -> usize {
        self.lock()
            .scopes
            .get(&(provider.to_owned(), credential.to_owned()))
            .and_then(|s| s.tenants.get(tenant))
            .map_or(0, BTreeMap::len)
    }
}

#[cfg(test)]
mod tests;
