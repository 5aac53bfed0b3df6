//! The handle's side of pools: which members a pool has, and a member chosen for a call
//! that keeps it for its whole life (a write), outside the queue.

#[allow(clippy::wildcard_imports, reason = "the handle's own internals")]
use super::*;
use crate::admission::PoolAsk;

impl Admission {
    /// Whether `provider` has a pool named `pool`.
    pub fn has_pool(&self, provider: &str, pool: &str) -> bool {
        self.shared.lock().scheduler.has_pool(provider, pool)
    }

    /// The members of `provider`'s pool `pool`, by label; `None`: no such pool.
    pub fn pool_members(&self, provider: &str, pool: &str) -> Option<Vec<Arc<str>>> {
        self.shared.lock().scheduler.pool_members(provider, pool)
    }

    /// The member of `request`'s pool it would be queued on now (the one that would admit
    /// it soonest: see [`Scheduler::choose`]), chosen and counted as [`Admission::submit`]
    /// chooses, without queueing it: for a call that must keep one member across attempts
    /// and restarts. A request without a pool: its credential.
    ///
    /// # Errors
    /// [`Rejection::UnknownPool`] when the provider has no such pool.
    pub fn choose_member(&self, request: &Acquire) -> Result<Arc<str>, Rejection> {
        let names: Vec<&str> = request.scopes.iter().map(String::as_str).collect();
        let mut state = self.shared.lock();
        let now = self.shared.now();
        let s = &mut state.scheduler;
        let tenant = s.tenant(&request.tenant);
        let member = member_for(s, now, request, &names, tenant)?;
        Ok(member.unwrap_or_else(|| request.credential.as_str().into()))
    }
}

impl Acquire {
    /// Goes with a member of the provider's pool `pool` instead of one credential: the one
    /// that would admit it soonest (see [`crate::admission::config::pools`]).
    #[must_use]
    pub fn pool(mut self, pool: impl Into<String>) -> Self {
        self.pool = Some(pool.into());
        self
    }

    /// Goes with the pool's member `credential` only when no other member can take it.
    #[must_use]
    pub fn avoid(mut self, credential: impl Into<String>) -> Self {
        self.avoid.push(credential.into());
        self
    }
}

/// The member of `request`'s pool the scheduler chooses now (charging `names`, for
/// `tenant`); `None` for a request without a pool, which goes with its own credential.
pub(super) fn member_for(
    s: &mut Scheduler,
    now: Nanos,
    request: &Acquire,
    names: &[&str],
    tenant: crate::admission::TenantId,
) -> Result<Option<Arc<str>>, Rejection> {
    let Some(pool) = &request.pool else {
        return Ok(None);
    };
    let avoid: Vec<&str> = request.avoid.iter().map(String::as_str).collect();
    let ask = PoolAsk {
        provider: &request.provider,
        pool,
        names,
        tenant,
        usage: &request.usage,
        avoid: &avoid,
    };
    s.choose(now, &ask)
        .map(Some)
        .ok_or_else(|| Rejection::UnknownPool {
            provider: request.provider.clone(),
            pool: pool.clone(),
        })
}
