//! Which host owns an action. The journal stays per host: the host that runs a task owns
//! its writes, records them, and settles them after a crash. A second host given the same
//! action (an agent that resubmits to another replica) must not perform it a second time,
//! nor settle it from a journal that never saw it: the claim in the shared store refuses it,
//! naming the owner.

use super::Gate;
use super::answers::{Claimed, StoreError};

/// An action that cannot be claimed by this host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// Another host claimed it first; its journal holds it.
    #[error(
        "action {action:?} belongs to host {owner:?}, whose journal holds it: send it there, or use a new action name"
    )]
    Elsewhere {
        /// The action.
        action: String,
        /// The host that owns it.
        owner: String,
    },
    /// Another live process uses this host's id: two processes with one id would both
    /// own every action.
    #[error(
        "action {action:?} was not claimed: another live process uses this host's id {host:?} in the shared store (give each host its own [store] host_id; a host restarted within lease_ttl_ms waits for its previous run's mark to expire)"
    )]
    HostIdInUse {
        /// The action.
        action: String,
        /// The host id.
        host: String,
    },
    /// The shared store lost its state since this host joined it (a restart without
    /// persistence, a flush): who owns an action this host's journal does not hold can no
    /// longer be told, so it is refused until an operator recovers the store's ownership.
    #[error(
        "action {action:?} was not claimed: the shared store lost its state (its ownership epoch is gone or replaced), so whether another host already did this action cannot be told; nothing was sent. Once every host is running again, an operator runs `sluice store recover` (docs/shared-state.md)"
    )]
    StoreLostState {
        /// The action.
        action: String,
    },
    /// The store has no ownership epoch, and this host joined none: a new group's store an
    /// operator has not initialised, or one that lost its state met by a host that never
    /// joined it (a new host, a wiped state directory). Either way whether another host did
    /// the action cannot be told, so it is refused.
    #[error(
        "action {action:?} was not claimed, and nothing was sent: the shared store has no ownership epoch. For a new group, initialise its store once with `sluice store init --config F`; if the store lost its state, an operator runs `sluice store recover` once every host is running (docs/shared-state.md)"
    )]
    NotInitialized {
        /// The action.
        action: String,
    },
    /// The store holds this host's claim on an action its journal does not hold: the host
    /// lost its state since it claimed it (a state directory wiped, a pod rescheduled
    /// without its volume, with the same `[store] host_id`). Whether it was done cannot be
    /// told here, so it is refused, and never sent.
    #[error(
        "action {action:?} was refused: the shared store says this host ({host:?}) claimed it before, but this host's journal does not hold it, so the host lost its record of it (a wiped state directory?) and whether it was done cannot be told; nothing was sent. Check with the provider; if it was not done, send it under a new action name (docs/writes.md)"
    )]
    LostLocally {
        /// The action.
        action: String,
        /// The host id.
        host: String,
    },
    /// The store can lose a claim (it evicts keys, or keeps no append-only file), so a
    /// claim made there could vanish and let a second host send the action again: writes
    /// are refused until it cannot, or the operator accepts the risk.
    #[error("action {action:?} was not claimed, and nothing was sent: {why}")]
    MayVanish {
        /// The action.
        action: String,
        /// What lets the store lose a claim.
        why: super::Vanishing,
    },
    /// The store did not answer, so the claim could not be made: nothing was sent.
    #[error(
        "action {action:?} could not be claimed in the shared store ({error}); nothing was sent, try again"
    )]
    Unreachable {
        /// The action.
        action: String,
        /// What the store said.
        error: String,
    },
}

impl Gate {
    /// Claims `action` for this host, or finds it already this host's: `Ok(true)` when an
    /// earlier claim of this host's held it.
    ///
    /// # Errors
    /// [`ClaimError::Elsewhere`] when another host owns it; [`ClaimError::HostIdInUse`]
    /// when another live process uses this host's id; [`ClaimError::StoreLostState`] when
    /// the store lost its state since this host joined it (see [`super::ownership`]);
    /// [`ClaimError::Unreachable`] when the store does not answer (a write is never sent
    /// unclaimed: that is how one would be done twice).
    pub async fn claim(&self, action: &str) -> Result<bool, ClaimError> {
        if self.host_id_in_use() {
            return Err(ClaimError::HostIdInUse {
                action: action.into(),
                host: self.host_id().into(),
            });
        }
        let ttl = self.config().claim_ttl;
        let ownership = self.ownership();
        if ownership.is_lost() {
            // Recovered meanwhile? The upkeep checks too; a claim need not wait for it.
            ownership.check(self.store(), self.host_id(), ttl).await;
            if ownership.is_lost() {
                return Err(ClaimError::StoreLostState {
                    action: action.into(),
                });
            }
        }
        match self.claims_kept().await {
            Ok(Ok(())) => {}
            Ok(Err(why)) => {
                return Err(ClaimError::MayVanish {
                    action: action.into(),
                    why,
                });
            }
            Err(e) => return Err(self.unreachable(action, &e)),
        }
        let joined = ownership.known();
        let claimed = self
            .store()
            .claim(action, self.host_id(), ttl, joined.as_deref())
            .await;
        match claimed {
            Ok(Claimed::Ok {
                epoch,
                owner,
                ours_before,
            }) => {
                ownership.joined(&epoch);
                match owner {
                    None => Ok(ours_before),
                    Some(owner) => Err(ClaimError::Elsewhere {
                        action: action.into(),
                        owner,
                    }),
                }
            }
            Ok(Claimed::Uninitialized) => {
                ownership.saw_uninitialized();
                Err(ClaimError::NotInitialized {
                    action: action.into(),
                })
            }
            Ok(Claimed::Lost) => {
                ownership.lost(self.store(), self.host_id(), ttl).await;
                Err(ClaimError::StoreLostState {
                    action: action.into(),
                })
            }
            Err(e) => Err(self.unreachable(action, &e)),
        }
    }

    /// The store did not answer (or answered what it never answers) while claiming
    /// `action`: the gate falls back to local pacing unless the store did answer.
    fn unreachable(&self, action: &str, e: &StoreError) -> ClaimError {
        if !matches!(e, StoreError::Reply(_)) {
            self.went_away(e);
        }
        ClaimError::Unreachable {
            action: action.into(),
            error: e.to_string(),
        }
    }
}
