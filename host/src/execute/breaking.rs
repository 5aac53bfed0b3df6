//! Which circuit breakers a call must pass, and which one a failure trips.
//!
//! A call passes two breakers: its credential's path, `provider credential METHOD /route
//! [model]`, shared by every tenant that calls with the credential; and its tenant's own
//! path, `provider credential METHOD /route tenant=NAME`. A failure the request itself explains trips only
//! its tenant's breaker: an answer 400, 404, 409, 413, 422 — any 4xx but 401, 403, 407, 408
//! and 429 — or a plugin's reading of a client error or a conflict, whatever the status. So
//! an agent looping on a context that is too long, a misspelt model or an oversized body
//! stops itself, never the other tenants of its key. A failure of the path — a 5xx, a
//! transport failure, a revoked key (401, 403) — trips the credential's breaker, since every
//! tenant would meet it. An attempt cut by its caller's own deadline (`x-sluice-deadline-ms`,
//! `Call::deadline`) is the caller's failure too, and trips only its tenant's breaker: only
//! the transport's own timeouts count on the path. A 429 or a spent quota trips none: it
//! holds the scope it is about. Nor does a call its caller abandons (an agent hanging up,
//! a dropped future): no answer was read, and a probe it held goes back (`run`).
//!
//! The model is part of the credential's path: one model failing leaves the key's other
//! models alone. It is not part of the tenant's: the model is the caller's to choose, and a
//! tenant looping on failures must not dodge its own breaker by naming a new model each time.
//!
//! Each path is kept under its owner — the credential's under `provider credential`, the
//! tenant's own under the tenant — so a tenant inventing paths (routes, model names) only
//! ever crowds out paths of its own credential or its own tenant, never another's open
//! breaker ([`crate::retry::breaker`]).

use std::time::{Duration, Instant};

use crate::contract::Verdict;
use crate::retry::{BreakerKind, BreakerState, Breakers, Open};

/// The longest model name a breaker path keeps; a longer one is cut (and marked).
const MAX_MODEL: usize = 64;

/// Room kept in a tenant's path for ` tenant=` and a name of usual length.
const TENANT_ROOM: usize = 40;

/// A call's two breaker paths, each with its owner: the credential (`provider credential`,
/// the shared path's first words) and the tenant (its own path's last).
#[derive(Debug, Clone)]
pub(super) struct BreakerPaths {
    /// The credential's, shared by its tenants.
    pub(super) shared: String,
    /// The call's tenant's own.
    pub(super) tenant: String,
    /// Where the credential ends in `shared` (`u32`: a waiting call holds the paths inline,
    /// `benches/call_memory.rs`; an owner past 4 GiB would be the whole path).
    credential_end: u32,
    /// Where the tenant's name begins in `tenant`.
    tenant_start: u32,
}

impl BreakerPaths {
    /// The paths of a call to `route` (`METHOD /template`) of `provider` with
    /// `credential`, for `model` if the body names one (the credential's path only), by
    /// `tenant`.
    #[cfg(test)]
    pub(super) fn of(
        provider: &str,
        credential: &str,
        route: &str,
        model: Option<&str>,
        tenant: &str,
    ) -> Self {
        Self::before_plan(provider, credential, route, model).of_tenant(tenant)
    }

    /// The credential's path, known before the plugin plans the call; the tenant's is
    /// named by [`BreakerPaths::of_tenant`] once the plan says whose call it is.
    pub(super) fn before_plan(
        provider: &str,
        credential: &str,
        route: &str,
        model: Option<&str>,
    ) -> Self {
        // Each made once, with room for what is added later (the model; the tenant's name):
        // this runs for every call.
        let base = provider.len() + credential.len() + route.len() + 2;
        let mut tenant = String::with_capacity(base + TENANT_ROOM);
        for (i, part) in [provider, credential, route].into_iter().enumerate() {
            if i > 0 {
                tenant.push(' ');
            }
            tenant.push_str(part);
        }
        let mut shared = String::with_capacity(base + 1 + model.map_or(0, str::len) + 3);
        shared.push_str(&tenant);
        if let Some(model) = model.filter(|m| !m.is_empty()) {
            let printable = crate::printable::printable(model);
            shared.push(' ');
            match printable.char_indices().nth(MAX_MODEL) {
                Some((cut, _)) => {
                    shared.push_str(&printable[..cut]);
                    shared.push('…');
                }
                None => shared.push_str(&printable),
            }
        }
        let credential_end = offset(provider.len() + 1 + credential.len());
        let tenant_start = offset(tenant.len());
        Self {
            shared,
            tenant,
            credential_end,
            tenant_start,
        }
    }

    /// The credential that owns the shared path: `provider credential`.
    pub(super) fn credential(&self) -> &str {
        let end = usize::try_from(self.credential_end).unwrap_or(usize::MAX);
        self.shared.get(..end).unwrap_or(&self.shared)
    }

    /// The tenant that owns its own path, as the path names it.
    pub(super) fn tenant_name(&self) -> &str {
        let start = usize::try_from(self.tenant_start).unwrap_or(usize::MAX);
        self.tenant.get(start..).unwrap_or(&self.tenant)
    }

    /// The paths with the tenant's named: `provider credential METHOD /route tenant=NAME`.
    pub(super) fn of_tenant(mut self, tenant: &str) -> Self {
        self.name_tenant(tenant);
        self
    }

    /// Names the tenant in the tenant's path, as [`BreakerPaths::of_tenant`] does.
    pub(super) fn name_tenant(&mut self, tenant: &str) {
        self.tenant.push_str(" tenant=");
        self.tenant_start = offset(self.tenant.len());
        self.tenant.push_str(&crate::printable::printable(tenant));
    }
}

/// An offset in a path, as kept (`u32::MAX` past it: see `BreakerPaths::credential_end`).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// Whose failure an answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blame {
    /// The path's (the provider, the credential): every tenant would meet it.
    Path,
    /// The request's: its tenant's alone.
    Request,
    /// Nobody's: a scheduling signal (a 429, a spent quota) that holds a scope.
    Scope,
}

/// Whose failure an attempt read as `verdict`, answered `status` (`None`: no answer), is.
pub(super) fn blame(verdict: Verdict, status: Option<u16>) -> Blame {
    if matches!(verdict, Verdict::RateLimited | Verdict::QuotaExhausted) || status == Some(429) {
        return Blame::Scope;
    }
    let client_status =
        status.is_some_and(|s| (400..500).contains(&s) && !matches!(s, 401 | 403 | 407 | 408));
    if client_status || matches!(verdict, Verdict::ClientError | Verdict::Conflict) {
        Blame::Request
    } else {
        Blame::Path
    }
}

/// The breakers a call passes: its credential's paths, shared by the credential's tenants,
/// and each tenant's own.
#[derive(Debug)]
pub(super) struct CallBreakers {
    shared: Breakers,
    tenants: Breakers,
}

impl CallBreakers {
    /// Breakers that open after `threshold` identical failures in a row, for `open_for`.
    pub(super) fn new(threshold: u32, open_for: Duration) -> Self {
        Self {
            shared: Breakers::new(threshold, open_for),
            tenants: Breakers::of(BreakerKind::Tenant, threshold, open_for),
        }
    }

    /// Whether a call on the credential's path of `paths` may be planned at `now`: a path
    /// that is open costs no plugin call.
    pub(super) fn allow_path(&self, paths: &BreakerPaths, now: Instant) -> Result<(), Open> {
        self.shared.check(paths.credential(), &paths.shared, now)
    }

    /// Whether the tenant's own path of `paths`, named after the plan, lets the call go at
    /// `now`. A refusal gives back the probe of the credential's path the call took.
    pub(super) fn allow_tenant(&self, paths: &BreakerPaths, now: Instant) -> Result<(), Open> {
        self.tenants
            .check(paths.tenant_name(), &paths.tenant, now)
            .inspect_err(|_| self.shared.release(paths.credential(), &paths.shared))
    }

    /// Whether a call on `paths` may go at `now` (a retry): its tenant's breaker, then its
    /// credential's.
    pub(super) fn allow(&self, paths: &BreakerPaths, now: Instant) -> Result<(), Open> {
        self.tenants
            .check(paths.tenant_name(), &paths.tenant, now)?;
        self.shared
            .check(paths.credential(), &paths.shared, now)
            .inspect_err(|_| {
                // Nothing is sent: a probe of the tenant's path it took goes back.
                self.tenants.release(paths.tenant_name(), &paths.tenant);
            })
    }

    /// Whether the credential's path of `paths` refuses calls at `now`; looking changes
    /// nothing.
    pub(super) fn refuses(&self, paths: &BreakerPaths, now: Instant) -> bool {
        self.shared.refuses(paths.credential(), &paths.shared, now)
    }

    /// Whether any credential's path is open or half-open now.
    pub(super) fn any_open(&self) -> bool {
        self.shared.any_open()
    }

    /// A call on `paths` ended with no word on them (refused before its send, or answered
    /// 429): a probe it held goes back to the next call.
    pub(super) fn release(&self, paths: &BreakerPaths) {
        self.tenants.release(paths.tenant_name(), &paths.tenant);
        self.shared.release(paths.credential(), &paths.shared);
    }

    /// A call on `paths` succeeded: both paths are well.
    pub(super) fn success(&self, paths: &BreakerPaths) {
        self.tenants.success(paths.tenant_name(), &paths.tenant);
        self.shared.success(paths.credential(), &paths.shared);
    }

    /// A call on `paths` failed with `code`, `blame`'s fault.
    pub(super) fn failure(&self, paths: &BreakerPaths, blame: Blame, code: &str, now: Instant) {
        // The other path had no word: a probe of it the call held goes back.
        match blame {
            Blame::Path => {
                self.shared
                    .failure(paths.credential(), &paths.shared, code, now);
                self.tenants.release(paths.tenant_name(), &paths.tenant);
            }
            Blame::Request => {
                self.tenants
                    .failure(paths.tenant_name(), &paths.tenant, code, now);
                self.shared.release(paths.credential(), &paths.shared);
            }
            Blame::Scope => self.release(paths),
        }
    }

    /// Every path with failures counted, at `now`: the credentials' paths, then the
    /// tenants' own.
    pub(super) fn states(&self, now: Instant) -> Vec<BreakerState> {
        let mut states = self.shared.states(now);
        states.extend(self.tenants.states(now));
        states
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_s_own_fault_is_its_tenant_s_and_a_path_s_is_everyone_s() {
        for status in [400, 404, 409, 413, 422] {
            assert_eq!(
                blame(Verdict::Transient, Some(status)),
                Blame::Request,
                "{status}"
            );
        }
        assert_eq!(blame(Verdict::ClientError, Some(500)), Blame::Request);
        for status in [401, 403, 500, 502, 503, 529] {
            assert_eq!(
                blame(Verdict::Transient, Some(status)),
                Blame::Path,
                "{status}"
            );
        }
        assert_eq!(blame(Verdict::Transient, None), Blame::Path);
        assert_eq!(blame(Verdict::ClientError, Some(429)), Blame::Scope);
        assert_eq!(blame(Verdict::QuotaExhausted, Some(403)), Blame::Scope);
    }

    #[test]
    fn paths_name_the_model_cut_short_and_the_tenant() {
        let p = BreakerPaths::of("openai", "team", "POST /v1/chat", Some("gpt-4o"), "acme");
        assert_eq!(p.shared, "openai team POST /v1/chat gpt-4o");
        assert_eq!(p.tenant, "openai team POST /v1/chat tenant=acme");
        assert_eq!((p.credential(), p.tenant_name()), ("openai team", "acme"));
        let other = BreakerPaths::of("openai", "team", "POST /v1/chat", Some("gpt-9"), "acme");
        assert_eq!(
            other.tenant, p.tenant,
            "a new model name is the same tenant path"
        );
        let long = "m".repeat(500);
        let p = BreakerPaths::of("openai", "team", "POST /v1/chat", Some(&long), "a\nb");
        assert!(p.shared.ends_with(&format!("{}…", "m".repeat(MAX_MODEL))));
        assert!(p.tenant.ends_with(r"tenant=a\nb"), "{}", p.tenant);
        assert_eq!(p.tenant_name(), r"a\nb");
        let p = BreakerPaths::of("stripe", "live", "POST /v1/charges", None, "acme");
        assert_eq!(p.shared, "stripe live POST /v1/charges");
    }
}
