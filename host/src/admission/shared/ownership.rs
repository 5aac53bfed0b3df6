//! Ownership that survives the store. Claims live in the shared store: a store that loses
//! its state (a restart without persistence, a flush, a failover to a replica that lacked
//! them) loses every claim, and a second host would then take an action the first one
//! already performed. So the store carries an **epoch**, a random token set by the first
//! host of the group, and every host keeps the epoch it joined in its state directory
//! (`store.epoch`). Each claim checks, in the same script, that the store's epoch is the one
//! the host knows:
//!
//! - the same: the claim stands or falls as always;
//! - missing, or another token that no operator set: the store lost its state. The host
//!   says so (an error, once), re-registers the claims of the actions its own journal holds
//!   (so no other host takes them), and refuses every action its journal does not know
//!   ([`super::ClaimError::StoreLostState`]) — for those, the store can no longer say who
//!   owns them;
//! - a token an operator set with `sluice store recover`, after every host re-registered
//!   its actions: the host adopts it and claims again.
//!
//! Hosts never make the epoch. An operator makes the first one, once, for a new group
//! (`sluice store init`), and a new one after a loss (`sluice store recover`). A host that
//! has never joined (no `store.epoch`: a new host, or one whose state directory was wiped)
//! adopts the store's epoch; finding none, it claims nothing
//! ([`super::ClaimError::NotInitialized`]). Were hosts to make it, a host that never joined
//! and met a store that had lost its state would make a fresh epoch and take, as new, the
//! actions other hosts did before the loss.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::answers::EpochCheck;
use super::redis::RedisStore;

/// The actions a host's journal holds, for it to re-register after the store lost them.
pub type LocalActions = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// A host's side of the epoch.
pub(super) struct Ownership {
    /// Where the epoch this host joined is kept; `None`: in memory only.
    file: Option<PathBuf>,
    known: Mutex<Option<String>>,
    /// The store lost its state since this host joined, and no operator has recovered it.
    lost: AtomicBool,
    /// The store has no epoch and this host joined none: no operator initialised it.
    uninitialized: AtomicBool,
    local: Mutex<Option<LocalActions>>,
}

impl std::fmt::Debug for Ownership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ownership")
            .field("file", &self.file)
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

/// The epoch file could not be read.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the shared store's epoch file {path}: {why}")]
pub struct EpochFileError {
    path: String,
    why: String,
}

impl Ownership {
    /// The ownership kept in `file` (read now when it exists).
    pub(super) fn new(file: Option<PathBuf>) -> Result<Self, EpochFileError> {
        let known = match &file {
            Some(f) => read(f)?,
            None => None,
        };
        Ok(Self {
            file,
            known: Mutex::new(known),
            lost: AtomicBool::new(false),
            uninitialized: AtomicBool::new(false),
            local: Mutex::new(None),
        })
    }

    /// The epoch this host joined, if it joined one.
    pub(super) fn known(&self) -> Option<String> {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the store lost its state since this host joined.
    pub(super) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Whether the store had no epoch when this host last looked, and it joined none.
    pub(super) fn is_uninitialized(&self) -> bool {
        self.uninitialized.load(Ordering::Relaxed)
    }

    /// The store has no epoch, and this host joined none.
    pub(super) fn saw_uninitialized(&self) {
        self.uninitialized.store(true, Ordering::Relaxed);
    }

    /// Says where the host's journal lists its actions.
    pub(super) fn set_local(&self, local: LocalActions) {
        *self.local.lock().unwrap_or_else(PoisonError::into_inner) = Some(local);
    }

    /// The store's epoch is `epoch` and this host may claim in it: kept (and written to the
    /// file) when it is new to the host.
    pub(super) fn joined(&self, epoch: &str) {
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if known.as_deref() != Some(epoch) {
            if let Some(f) = &self.file
                && let Err(e) = write(f, epoch)
            {
                tracing::error!(
                    file = %f.display(),
                    "could not keep the shared store's epoch ({e}): a restart of this host \
                     could not tell a store that lost its state"
                );
            }
            *known = Some(epoch.to_owned());
        }
        self.uninitialized.store(false, Ordering::Relaxed);
        if self.lost.swap(false, Ordering::Relaxed) {
            tracing::info!(
                "the shared store's ownership was recovered by an operator: actions are \
                 claimed again"
            );
        }
    }

    /// The store lost its state: say so once, and re-register the host's own actions unless
    /// the store holds this host's re-registration already (a store that lost its state
    /// again, before or after a recovery, lost that too).
    pub(super) async fn lost(&self, store: &RedisStore, host: &str, ttl: std::time::Duration) {
        if !self.lost.swap(true, Ordering::Relaxed) {
            tracing::error!(
                "the shared store lost its state (its ownership epoch is gone or replaced): \
                 actions this host's journal does not hold are refused until an operator runs \
                 `sluice store recover` once every host re-registered its own"
            );
            metrics::counter!(crate::observe::SHARED_STORE_LOST).increment(1);
        }
        match store.reclaimed(host).await {
            Ok(false) => {}
            // Done in this store's life; or the store is away, and the upkeep tries again.
            Ok(true) | Err(_) => return,
        }
        let local = self
            .local
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(local) = local else { return };
        let actions = local();
        match store.reclaim(&actions, host, ttl).await {
            Ok(taken) => {
                for (action, owner) in &taken {
                    tracing::error!(
                        action = %crate::printable::printable(action),
                        owner = %crate::printable::printable(owner),
                        "an action of this host's journal was claimed by another host after \
                         the store lost its state: check both hosts' journals"
                    );
                }
                tracing::info!(
                    actions = actions.len(),
                    "re-registered this host's actions in the shared store"
                );
            }
            Err(e) => tracing::warn!("could not re-register this host's actions yet: {e}"),
        }
    }

    /// Checks the store's epoch against the one this host joined (the upkeep's check,
    /// between claims); a host that joined none joins the store's, if it has one.
    pub(super) async fn check(&self, store: &RedisStore, host: &str, ttl: std::time::Duration) {
        let Some(known) = self.known() else {
            match store.join().await {
                Ok(Some(epoch)) => self.joined(&epoch),
                Ok(None) => self.uninitialized.store(true, Ordering::Relaxed),
                Err(_) => {}
            }
            return;
        };
        match store.epoch(&known).await {
            Ok(EpochCheck::Same) => {}
            Ok(EpochCheck::Recovered(epoch)) => self.joined(&epoch),
            Ok(EpochCheck::Lost) => self.lost(store, host, ttl).await,
            Err(_) => {} // the upkeep says the store is away
        }
    }
}

fn read(path: &Path) -> Result<Option<String>, EpochFileError> {
    match std::fs::read_to_string(path) {
        Ok(s) => {
            let token = s.trim();
            if token.is_empty()
                || token.len() > 128
                || !token.bytes().all(|b| b.is_ascii_hexdigit())
            {
                return Err(EpochFileError {
                    path: path.display().to_string(),
                    why: "it does not hold an epoch token (hex digits); restore it, or remove \
                          it only if this host never claimed an action"
                        .into(),
                });
            }
            Ok(Some(token.to_owned()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EpochFileError {
            path: path.display().to_string(),
            why: e.to_string(),
        }),
    }
}

/// Writes `epoch` to `path` through a new `0600` file and a rename.
fn write(path: &Path, epoch: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension("epoch.tmp");
    let mut f = crate::private_fs::options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)?;
    f.write_all(format!("{epoch}\n").as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}
