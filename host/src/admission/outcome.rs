//! What the scheduler tells its caller: a refusal at submit, an admission or an expiry later,
//! and why a request is still waiting.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::bucket::Nanos;
use super::fair::{Class, RequestId};
use super::scope::{Block, Oversized, ScopeKey};
use super::usage::Dimension;

slotmap::new_key_type! {
    /// An admitted request: what it holds until it is completed or released.
    pub struct GrantId;
}

/// Which bound of the queue is full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// Requests waiting, all scopes together.
    Global {
        /// The bound.
        max_queued: u32,
    },
    /// Requests waiting on one scope.
    Scope {
        /// The scope.
        scope: ScopeKey,
        /// The bound.
        max_queued: u32,
    },
    /// Requests one tenant has waiting.
    Tenant {
        /// The tenant.
        tenant: Arc<str>,
        /// The bound, from its tier.
        max_queued: u32,
    },
    /// The estimated wait is longer than the queue keeps a request.
    Wait {
        /// The scope whose queue is that long.
        scope: ScopeKey,
        /// The estimated wait.
        estimated: Duration,
        /// The bound.
        max_wait: Duration,
    },
}

/// Why a request was refused at submit, before it queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The queue is full: back off and submit later, or shed the work.
    #[error("backpressure: {}", describe_bound(.0))]
    Backpressure(Bound),
    /// The request could not be admitted before its deadline.
    #[error(
        "the deadline cannot be met: {scope} admits it in {} at the earliest, {} after the deadline",
        ms(*.estimated_wait), ms(*.late_by)
    )]
    DeadlineUnreachable {
        /// The scope that decides the wait.
        scope: ScopeKey,
        /// The estimated wait from now.
        estimated_wait: Duration,
        /// How far past the deadline that is.
        late_by: Duration,
    },
    /// The request is larger than a quota's whole limit: split it, or raise the limit.
    #[error(
        "the request needs {} {} but {scope} allows {} per window: split it or raise the limit",
        .oversized.amount, .oversized.dimension, .oversized.limit
    )]
    Oversized {
        /// The scope.
        scope: ScopeKey,
        /// The quota it exceeds.
        oversized: Oversized,
    },
    /// The request names a pool the configuration does not define.
    #[error(
        "the provider {provider} has no pool `{pool}`: define [providers.{provider}.pools.{pool}] \
         or name a credential"
    )]
    UnknownPool {
        /// The provider.
        provider: String,
        /// The pool it named.
        pool: String,
    },
}

fn describe_bound(b: &Bound) -> String {
    match b {
        Bound::Global { max_queued } => {
            format!("{max_queued} requests are already waiting (queue.max_queued)")
        }
        Bound::Scope { scope, max_queued } => {
            format!("{max_queued} requests are already waiting on {scope}")
        }
        Bound::Tenant { tenant, max_queued } => format!(
            "tenant {tenant} already has {max_queued} requests waiting (its tier's max_queued)"
        ),
        Bound::Wait {
            scope,
            estimated,
            max_wait,
        } => format!(
            "{scope} would admit it in {}, longer than the {} a request may wait",
            ms(*estimated),
            ms(*max_wait)
        ),
    }
}

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

/// Something that happened to a queued request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueEvent {
    /// The request may be sent now; it holds `grant` until completed or released.
    Admitted {
        /// The request.
        request: RequestId,
        /// What it holds.
        grant: GrantId,
    },
    /// The request's deadline passed while it waited; it was removed.
    Expired {
        /// The request.
        request: RequestId,
        /// How long it waited, and on what.
        why: Box<Why>,
    },
}

/// What a waiting request waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    /// A scope it charges cannot take it yet.
    Scope {
        /// The scope.
        scope: ScopeKey,
        /// What holds it back.
        block: Block,
    },
    /// Its tenant's own quota or in-flight limit.
    Tenant {
        /// The tenant.
        tenant: Arc<str>,
        /// What holds it back.
        block: Block,
    },
    /// Its scopes would take it, but other requests are ahead of it.
    Turn {
        /// Requests in its lane queued in classes as urgent as its own or more.
        ahead: u32,
    },
}

/// Why a request is waiting (or waited, when it expired).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Why {
    /// The request's class.
    pub class: Class,
    /// Its tenant.
    pub tenant: Arc<str>,
    /// How long it has waited.
    pub waited: Duration,
    /// Its deadline, on the scheduler's clock.
    pub deadline: Option<Nanos>,
    /// What it waits for.
    pub waiting: Waiting,
}

impl Rejection {
    /// The `reason` label of `sluice_calls_refused_total` for a refusal at submit:
    /// `queue-full`, `scope-queue-full`, `tenant-queue-full`, `wait-too-long`,
    /// `deadline-unreachable` or `oversized`. A request that left the queue unadmitted is
    /// `expired` or `cancelled`.
    pub fn label(&self) -> &'static str {
        match self {
            Rejection::Backpressure(Bound::Global { .. }) => "queue-full",
            Rejection::Backpressure(Bound::Scope { .. }) => "scope-queue-full",
            Rejection::Backpressure(Bound::Tenant { .. }) => "tenant-queue-full",
            Rejection::Backpressure(Bound::Wait { .. }) => "wait-too-long",
            Rejection::DeadlineUnreachable { .. } => "deadline-unreachable",
            Rejection::Oversized { .. } => "oversized",
            Rejection::UnknownPool { .. } => "unknown_pool",
        }
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} request of tenant {} waiting {}: ",
            self.class,
            self.tenant,
            ms(self.waited)
        )?;
        match &self.waiting {
            Waiting::Scope { scope, block } => write!(f, "{scope} {}", describe_block(block)),
            Waiting::Tenant { tenant, block } => {
                write!(f, "tenant {tenant}'s own quota {}", describe_block(block))
            }
            Waiting::Turn { ahead } => write!(f, "its turn, behind {ahead} requests"),
        }
    }
}

fn describe_block(b: &Block) -> String {
    match b {
        Block::Quota {
            dimension,
            window,
            limit,
            until,
            ..
        } => format!(
            "has spent its {} quota ({limit} per {}) until t={}",
            dimension_name(*dimension),
            window_name(*window),
            ms(Duration::from_nanos(*until))
        ),
        Block::Held(h) => format!(
            "is on hold until t={}: {}",
            ms(Duration::from_nanos(h.until)),
            h.reason
        ),
        Block::Concurrency { limit } => format!("has all {limit} concurrency slots taken"),
    }
}

fn dimension_name(d: Dimension) -> &'static str {
    d.name()
}

fn window_name(w: Duration) -> String {
    match w.as_secs() {
        60 => "minute".into(),
        86_400 => "day".into(),
        _ => ms(w),
    }
}
