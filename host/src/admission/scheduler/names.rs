//! Names to ids, resolved once: scopes (created on first use, with the shape the
//! configuration gives them, [`super::scopes`]), routes (the set of scopes a request
//! charges, [`super::lanes`]), and tenants (in the tier the configuration assigns them,
//! [`super::tenants`]).

use std::sync::Arc;

use smallvec::SmallVec;

use super::{Route, Scheduler, TenantId};
use crate::admission::scope::{Scope, ScopeKey, ScopeName};

impl Scheduler {
    /// The scope named `key`, created on first use: a configured provider scope gets its
    /// limits; any other starts unbounded and learns its limits from responses. An
    /// unconfigured narrower scope its provider has no place for is its overflow scope
    /// ([`super::unconfigured`]).
    pub fn scope_id(&mut self, key: &ScopeKey) -> u32 {
        let quota = match key {
            ScopeKey::Tenant(t) => self.tenants.quota_of(t),
            ScopeKey::Provider { .. } => None,
        };
        self.scopes.id(key, quota, self.now)
    }

    /// A scope by id; `None` once it was forgotten.
    pub fn scope(&self, id: u32) -> Option<(&ScopeKey, &Scope)> {
        self.scopes.get(id).map(|s| (&s.key, &s.scope))
    }

    /// The route of requests sent with `credential` to `provider` that also charge the
    /// narrower scopes `names` (a model, an endpoint family). Every request charges its
    /// credential's own scope: with no names, all of the credential's workers share it.
    ///
    /// A route holds until a poll forgets one of its scopes, an unconfigured one at rest for
    /// `queue.unconfigured_idle_ms` ([`super::unconfigured`]): resolve it for each request,
    /// as [`crate::admission::Admission`] does, rather than keep it.
    pub fn route(&mut self, provider: &str, credential: &str, names: &[&str]) -> Route {
        // Looked up by borrowed names, in an inline list: nothing is made for a route in use
        // (this runs for every request).
        let scope = |name| ScopeName::Provider {
            provider,
            credential,
            name,
        };
        let mut scopes: SmallVec<[u32; 4]> = SmallVec::new();
        scopes.push(self.scopes.id_of(scope(None), None, self.now));
        for name in names {
            let id = self.scopes.id_of(scope(Some(name)), None, self.now);
            if !scopes.contains(&id) {
                scopes.push(id);
            }
        }
        scopes[1..].sort_unstable();
        Route(self.lanes.id(&scopes))
    }

    /// The tenant named `name`, in the tier the configuration assigns it.
    pub fn tenant(&mut self, name: &str) -> TenantId {
        if let Some(id) = self.tenants.find(name) {
            return TenantId(id);
        }
        let name: Arc<str> = name.into();
        let quota = self
            .tenants
            .quota_of(&name)
            .is_some()
            .then(|| self.scope_id(&ScopeKey::Tenant(name.clone())));
        TenantId(self.tenants.insert(name, quota))
    }
}
