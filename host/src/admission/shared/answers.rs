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
