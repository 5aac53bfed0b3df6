//! Several hosts, one quota: the scopes' state shared on Redis.
//!
//! Each host keeps its own [`super::Scheduler`]: its queue, its classes, its fair order
//! between tenants. Alone, N hosts would each admit the whole limit, N times it in all. With
//! a shared store, a grant the local scheduler admits passes one more gate before it is
//! sent: one atomic Lua script ([`RedisStore::admit`]) checks and charges, in one round
//! trip, every quota the call charges — the credential's, the model's, the tenant's own —
//! against state that every host shares:
//!
//! - the GCRA state of each quota (its theoretical arrival time, on Redis's clock, so the
//!   hosts' clocks need not agree);
//! - holds (a 429 seen by one host holds the scope for all of them), with their reason;
//! - learned limits, when a response taught a host a limit tighter than the configured one,
//!   and what the provider said is left (`remaining`);
//! - concurrency leases that expire, so the slots of a host that dies come back by themselves;
//! - the corrections of each call's charge to its actual usage.
//!
//! When the gate refuses, it says for how long: the host holds its own scope for that long
//! (so it does not keep asking) and the grant tries again then. Order within a host is the
//! local scheduler's; between hosts it is whoever asks first once a slot is free, so fair
//! shares between tenants are exact within a host and approximate across hosts
//! (`docs/shared-state.md` gives the measurement).
//!
//! When Redis cannot be reached, the gate falls back to local conservative pacing: each
//! quota at its limit divided by the configured number of hosts, each concurrency limit
//! likewise, so that the hosts together never admit more than the limit. It says so in a
//! log line and in the `sluice_shared_store_up` gauge, and returns to the shared state as
//! soon as Redis answers again, re-registering the leases of its calls in flight first.
//! A store that lost its state (a restart without persistence) starts every quota with an
//! empty burst: pacing resumes at the paced rate, never with a fresh burst on top of what
//! the provider already counted.

mod answers;
mod claim;
mod config;
mod durability;
mod fallback;
mod gate;
mod ownership;
#[cfg(feature = "redis")]
mod redis;
mod slices;
// Without the `redis` feature, a store that says so when a configuration asks for one.
#[cfg(not(feature = "redis"))]
#[path = "unbuilt.rs"]
mod redis;
#[cfg(feature = "redis")]
mod scripts;

use std::time::Duration;

pub use answers::{Claimed, EpochCheck, Refusal, SliceAsk, Sliced, StoreError, Verdict};
pub use claim::ClaimError;
pub use config::{SharedConfig, SharedConfigError, StoreTls};
pub use durability::{RECHECK, Vanishing, judge as judge_durability};
pub use gate::{Gate, GateError, Lease, Passed};
pub use ownership::{EpochFileError, LocalActions};
pub use redis::RedisStore;

use super::bucket::Nanos;
use super::scope::ScopeKey;
use super::usage::Dimension;

/// One quota of a scope, as figures: what the shared store needs to apply the same GCRA
/// arithmetic as the local bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaFigures {
    /// What it counts.
    pub dimension: Dimension,
    /// Its window.
    pub window: Duration,
    /// Nanoseconds per unit at the paced rate.
    pub interval: Nanos,
    /// The burst's worth of time.
    pub tolerance: Nanos,
    /// The limit per window.
    pub limit: u64,
    /// What the call charges to it (0 when the figures describe the scope, not a call).
    pub cost: u64,
    /// What is left, as the provider said in a response, when known: shared as a debit
    /// (never as a refill).
    pub available: Option<u64>,
    /// The limit was learned from a response, not configured.
    pub learned: bool,
}

/// One scope, as figures: see [`super::Scheduler::charges`] and
/// [`super::Scheduler::figures`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeFigures {
    /// The scope.
    pub scope: ScopeKey,
    /// Its rate quotas.
    pub quotas: Vec<QuotaFigures>,
    /// Its concurrency limit, if any.
    pub concurrency: Option<u32>,
    /// The hold in force: how much longer, and why.
    pub held_for: Option<(Nanos, Box<str>)>,
}
