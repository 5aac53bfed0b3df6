//! A read-only view of admission at one instant, for operators: every scope's limits, pace,
//! what its buckets have left, what the provider last reported and why it is waiting; and
//! the queue by tenant and class. [`super::Admission::snapshot`] takes one.
//!
//! # Read-only
//!
//! A snapshot changes nothing: GCRA keeps one theoretical arrival time per quota and needs
//! no refill, so what a bucket has available at `now` is computed from it
//! ([`super::Rate::available`]) without writing it back, and a snapshot taken between two
//! decisions cannot change either.
//!
//! # The contract
//!
//! Every type here serializes (serde) to the JSON an admin API serves as it stands: field
//! names are the contract, durations are whole milliseconds in `*_ms` fields (`None` when
//! unknown), and times still to come are rounded up, so `0` means now and never "in a
//! fraction of a millisecond". Instants are relative to the snapshot: the scheduler's clock
//! has an arbitrary origin, which would mean nothing to a reader.
//!
//! # Cost
//!
//! A snapshot walks the scopes, the lanes, the requests in flight and the tenants' queues
//! once each; it allocates its own rows and one count per scope and lane, nothing per request.
//! It is meant for an operator's request, not for every call.

use std::time::Duration;

use serde::Serialize;

use super::bucket::Nanos;
use super::fair::Class;
use super::limits::Limits;
use super::scope::{Block, Origin, Scope, ScopeKey};
use super::usage::Dimension;

/// Admission at one instant: every scope, and the queue.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Every scope the scheduler knows (those some request has charged, or a response or an
    /// operator has named), ordered by provider, credential, then narrower name; tenants'
    /// own quotas last.
    pub scopes: Vec<ScopeStatus>,
    /// One row per tenant and class with requests waiting or in flight, by tenant name then
    /// class (most urgent first).
    pub queue: Vec<QueueRow>,
    /// Requests waiting, in all.
    pub queued: u64,
    /// Requests admitted and not yet completed or released, in all.
    pub in_flight: u64,
    /// Every configured pool and how its members are used, by provider then pool name.
    pub pools: Vec<PoolStatus>,
}

/// One pool: its members and how they are used. Each member's quotas, holds and queue are
/// those of its credential's scope in [`Snapshot::scopes`] (`member.scope`).
#[derive(Debug, Clone, Serialize)]
pub struct PoolStatus {
    /// The provider.
    pub provider: String,
    /// The pool's name.
    pub pool: String,
    /// Its members, in the configuration's order.
    pub members: Vec<PoolMemberStatus>,
}

/// One member of a pool.
#[derive(Debug, Clone, Serialize)]
pub struct PoolMemberStatus {
    /// Its credential's label.
    pub credential: String,
    /// The key of its credential's scope (`openai/east`), in [`Snapshot::scopes`] once used.
    pub scope: String,
    /// Its weight between members that would admit a call equally soon.
    pub weight: u64,
    /// Calls admitted on it through the pool since the host started.
    pub chosen: u64,
    /// The hold on its credential's scope in force, if any (a 429, a spent quota): it
    /// takes a call only when no other member would admit it sooner.
    pub held: Option<HoldStatus>,
}

/// What kind of scope a [`ScopeStatus`] describes (see `ScopeKey`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    /// The credential's own quota: every request sent with it charges it.
    Credential,
    /// A narrower quota of a credential, named by the configuration or a response (a model
    /// as `model:<name>`, an endpoint family, GitHub's `search`).
    Named,
    /// A tenant's own quota, from its tier.
    Tenant,
}

/// One quota scope, as it stands.
#[derive(Debug, Clone, Serialize)]
pub struct ScopeStatus {
    /// The scope's name as messages print it (`openai/team-key`,
    /// `openai/team-key/model:gpt-4o`, `tenant acme`).
    pub key: String,
    /// What kind of scope it is.
    pub kind: ScopeKind,
    /// The provider, as configured; `None` for a tenant's quota.
    pub provider: Option<String>,
    /// The credential label; `None` for a tenant's quota.
    pub credential: Option<String>,
    /// The narrower scope's name; `None` for the credential's own and for a tenant's quota.
    pub scope: Option<String>,
    /// The tenant; set for a tenant's quota only.
    pub tenant: Option<String>,
    /// Whether the configuration gives this scope its limits (a provider's `limits`, a
    /// named scope's section, a tier's `limits`). An unconfigured scope starts unbounded
    /// and has only the quotas responses taught it.
    pub configured: bool,
    /// Its rate quotas, configured or learned, in the order the scope checks them.
    pub quotas: Vec<QuotaStatus>,
    /// Its concurrency limit and the slots taken, when it has one.
    pub concurrency: Option<ConcurrencyStatus>,
    /// What responses last said about it, one entry per dimension (empty until one did).
    pub remaining: Vec<ReportedQuota>,
    /// The hold in force, if any: nothing charged to the scope is admitted before it ends.
    pub held: Option<HoldStatus>,
    /// How long until a request of one unit of every quota could be admitted (`0`: now):
    /// past the hold, and once every quota has a unit. `None` while every concurrency slot
    /// is taken: one frees when a call ends, which no clock says.
    pub next_allowed_ms: Option<u64>,
    /// Why such a request cannot be admitted now, in a few words, or `None` when it can.
    pub waiting_because: Option<String>,
    /// Requests waiting that charge this scope.
    pub queued: u64,
    /// Requests in flight that charged this scope.
    pub in_flight: u64,
}

/// One rate quota of a scope.
#[derive(Debug, Clone, Serialize)]
pub struct QuotaStatus {
    /// The quota as a configuration key (`requests_per_minute`, `tokens_per_day`; a learned
    /// quota of another window is `<dimension>_per_<n>ms`).
    pub key: String,
    /// What it counts.
    pub dimension: Dimension,
    /// Its window.
    pub window_ms: u64,
    /// The provider's limit per window.
    pub limit: u64,
    /// The paced rate per window: the limit times the margin (`paced` units go one interval
    /// apart; the rest of the limit is the burst).
    pub paced: u64,
    /// The burst: the most units admitted at once by a quota that has been idle.
    pub burst: u64,
    /// The units the bucket would admit at once now.
    pub available: u64,
    /// Where the limit comes from: `configured`, or `observed` from a response.
    pub origin: QuotaOrigin,
    /// For an observed limit, the header names (or `body`) it was read from.
    pub observed_from: Option<String>,
}

/// Where a quota's limit comes from (see `Origin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuotaOrigin {
    /// The configuration.
    Configured,
    /// A response's figures, smaller than the configuration's or where it had none.
    Observed,
}

/// A scope's concurrency slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConcurrencyStatus {
    /// The number of slots.
    pub limit: u32,
    /// The slots taken by requests in flight.
    pub taken: u32,
}

/// What a response last said about one dimension of a scope (see
/// `super::Learned`).
#[derive(Debug, Clone, Serialize)]
pub struct ReportedQuota {
    /// What the figures count.
    pub dimension: Dimension,
    /// The quota's size, if stated.
    pub limit: Option<u64>,
    /// What was left, if stated: the provider's count, which the host believes when it is
    /// lower than its own.
    pub remaining: Option<u64>,
    /// How long until the window resets, if stated (`0`: it has reset since).
    pub reset_in_ms: Option<u64>,
    /// How long ago the response was read.
    pub age_ms: u64,
    /// The header names (or `body`) the figures came from.
    pub source: String,
}

/// A hold on a scope.
#[derive(Debug, Clone, Serialize)]
pub struct HoldStatus {
    /// What set it (a 429's `Retry-After`, a spent quota with its reset, an operator).
    pub reason: String,
    /// How long until it ends.
    pub left_ms: u64,
}

/// The requests of one tenant in one class.
#[derive(Debug, Clone, Serialize)]
pub struct QueueRow {
    /// The tenant.
    pub tenant: String,
    /// Its tier.
    pub tier: String,
    /// The class (`interactive`, `standard`, `background`).
    pub class: Class,
    /// Its requests of the class waiting.
    pub queued: u64,
    /// Its requests of the class admitted and not yet completed or released.
    pub in_flight: u64,
}

/// What the scheduler knows about a scope beyond the scope itself.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub configured: bool,
    pub queued: u64,
    pub in_flight: u64,
}

impl ScopeStatus {
    /// The status of `scope`, named `key`, at `now`. Reads the scope only.
    pub(crate) fn of(key: &ScopeKey, scope: &Scope, now: Nanos, counts: Counts) -> Self {
        let (kind, provider, credential, name, tenant) = match key {
            ScopeKey::Provider {
                provider,
                credential,
                name,
            } => (
                if name.is_some() {
                    ScopeKind::Named
                } else {
                    ScopeKind::Credential
                },
                Some(provider.to_string()),
                Some(credential.to_string()),
                name.as_deref().map(str::to_owned),
                None,
            ),
            ScopeKey::Tenant(t) => (ScopeKind::Tenant, None, None, None, Some(t.to_string())),
        };
        let quotas = scope
            .quotas()
            .map(|(q, tat)| {
                let (origin, observed_from) = match &q.origin {
                    Origin::Configured => (QuotaOrigin::Configured, None),
                    Origin::Observed(from) => (QuotaOrigin::Observed, Some(from.to_string())),
                };
                QuotaStatus {
                    key: Limits::key(q.dimension, q.window),
                    dimension: q.dimension,
                    window_ms: millis(q.window),
                    limit: q.rate.limit(),
                    paced: q.rate.paced(),
                    burst: q.rate.capacity(),
                    available: q.rate.available(tat, now),
                    origin,
                    observed_from,
                }
            })
            .collect();
        let remaining = scope
            .learned()
            .iter()
            .map(|l| ReportedQuota {
                dimension: l.dimension,
                limit: l.limit,
                remaining: l.remaining,
                reset_in_ms: l.reset_at.map(|at| ms_until(now, at)),
                age_ms: now.saturating_sub(l.seen_at) / 1_000_000,
                source: l.source.to_string(),
            })
            .collect();
        let held = scope.held(now).map(|h| HoldStatus {
            reason: h.reason.to_string(),
            left_ms: ms_until(now, h.until),
        });
        Self {
            key: key.to_string(),
            kind,
            provider,
            credential,
            scope: name,
            tenant,
            configured: counts.configured,
            quotas,
            concurrency: scope
                .slots()
                .map(|(limit, taken)| ConcurrencyStatus { limit, taken }),
            remaining,
            held,
            next_allowed_ms: unit_ready_at(scope, now).map(|at| ms_until(now, at)),
            waiting_because: unit_block(scope, now).as_ref().map(describe),
            queued: counts.queued,
            in_flight: counts.in_flight,
        }
    }
}

/// What keeps a request of one unit of every quota out of `scope` at `now`, as
/// [`Scope::blocked`] reports it: the hold first, then the quota that lifts last, then
/// concurrency. Asked per quota rather than with a [`super::Usage`], which cannot be one
/// token of each token dimension at once.
fn unit_block(scope: &Scope, now: Nanos) -> Option<Block> {
    if let Some(hold) = scope.held(now) {
        return Some(Block::Held(hold.clone()));
    }
    let worst = scope
        .quotas()
        .filter_map(|(q, tat)| {
            // A unit is never larger than a limit, which is at least one.
            let at = q.rate.ready_at(tat, now, 1).unwrap_or(Nanos::MAX);
            (at > now).then_some((q, at))
        })
        .max_by_key(|(_, at)| *at);
    if let Some((q, until)) = worst {
        return Some(Block::Quota {
            dimension: q.dimension,
            window: q.window,
            limit: q.limit.get(),
            origin: q.origin.clone(),
            until,
        });
    }
    scope
        .slots()
        .filter(|(limit, taken)| taken >= limit)
        .map(|(limit, _)| Block::Concurrency { limit })
}

/// When a request of one unit of every quota could be admitted: after the hold and once
/// every quota has a unit (a quota debited past the hold's end counts too); `None` while
/// every concurrency slot is taken.
fn unit_ready_at(scope: &Scope, now: Nanos) -> Option<Nanos> {
    if scope.slots().is_some_and(|(limit, taken)| taken >= limit) {
        return None;
    }
    let held = scope.held(now).map_or(now, |h| h.until);
    let quotas = scope.quotas().map(|(q, tat)| {
        // A unit is never larger than a limit, which is at least one.
        q.rate.ready_at(tat, now, 1).unwrap_or(Nanos::MAX)
    });
    Some(quotas.fold(held, Nanos::max))
}

/// A block in a few words, for an operator.
fn describe(block: &Block) -> String {
    match block {
        Block::Held(h) => format!("held: {}", h.reason),
        Block::Quota {
            dimension,
            window,
            limit,
            origin,
            ..
        } => {
            let origin = match origin {
                Origin::Configured => "configured",
                Origin::Observed(_) => "observed",
            };
            let per = Limits::key(*dimension, *window);
            format!("{dimension} quota spent ({per} = {limit}, {origin})")
        }
        Block::Concurrency { limit } => format!("all {limit} concurrency slots taken"),
    }
}

/// Whole milliseconds from `now` until `at`, rounded up; 0 once `at` has passed.
fn ms_until(now: Nanos, at: Nanos) -> u64 {
    at.saturating_sub(now).div_ceil(1_000_000)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
