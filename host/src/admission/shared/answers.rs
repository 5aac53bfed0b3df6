//! What the shared store answers: its verdicts, refusals, claims, epochs and errors — the
//! same whatever client speaks to it, and with none built in.

use std::time::Duration;

/// The store could not answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Redis did not answer within the configured timeout.
    #[error("the shared store did not answer within {0:?}")]
    Timeout(Duration),
    /// Redis answered with an error, or could not be reached.
    #[error("the shared store failed: {0}")]
    Redis(String),
    /// A script answered what it never answers.
    #[error("the shared store's script answered {0}")]
    Reply(String),
}

/// What the store decided for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Charged: send it. Each quota's schedule end (µs on the store's clock), in the order
    /// of the figures' quotas, for [`super::RedisStore::settle`].
    Admitted {
        /// The schedule ends.
        ends: Vec<u64>,
    },
    /// Not now: a quota is spent, the scope is held, or every slot is taken.
    Wait {
        /// The scope that refused, by its index in the figures.
        scope: usize,
        /// How long until it may take the call.
        wait: Duration,
        /// Why, in words.
        why: Refusal,
    },
}

/// One quota a host asks a slice of, or settles an earlier slice of (see
/// [`super::RedisStore::slice`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceAsk {
    /// The quota's key in the store.
    pub key: String,
    /// Nanoseconds per unit at the paced rate.
    pub interval: u64,
    /// The burst's worth of time, in nanoseconds.
    pub tolerance: u64,
    /// The limit was learned from a response, not configured.
    pub learned: bool,
    /// The least the slice must hold (0: settle only, ask nothing).
    pub need: u64,
    /// The most it should hold.
    pub want: u64,
    /// To settle: used above the estimates (positive), or left unused (negative).
    pub change: i128,
    /// The earlier slice's schedule end (µs on the store's clock), bounding what is given
    /// back.
    pub ends: u64,
}

/// What the store answered a host asking for slices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sliced {
    /// Per quota asked, in order: what it granted (0 where nothing was asked) and the
    /// slice's schedule end (µs on the store's clock); and how long from the store's
    /// answer until the slices may be used.
    Granted(Vec<(u64, u64)>, Duration),
    /// The quota at this index cannot fit its need yet: ask again in this long.
    Short(usize, Duration),
    /// The scope whose hold is at this index is held for this long, for this reason.
    Held(usize, Duration, String),
}

/// Why the store refused a call for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A quota is spent: its index in the scope's quotas.
    Spent(usize),
    /// A host put the scope on hold, for this reason.
    Held(String),
    /// Every concurrency slot is leased.
    Full,
}

/// What a claim found (see [`super::ownership`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The store's epoch, and the host that owned the action before (`None`: this claim is
    /// new, or the action was the host's already).
    Ok {
        /// The store's epoch.
        epoch: String,
        /// Another host that owns the action.
        owner: Option<String>,
        /// The action was this host's already: claimed by an earlier run of it.
        ours_before: bool,
    },
    /// The store lost its state since the host joined its epoch.
    Lost,
    /// The store has no epoch, and the host joined none: an operator initialises a new
    /// group's store (see [`super::ownership`]).
    Uninitialized,
}

/// The store's epoch against the one a host joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EpochCheck {
    /// The same.
    Same,
    /// Another one, set by an operator (`sluice store recover`): the host adopts it.
    Recovered(String),
    /// Missing, or another one no operator set.
    Lost,
}
