//! State damaged between a killed host and its restart: the damage soak of `tests/tests/never_twice/crash.rs`.
//!
//! A damage run is a crash run (`crate::crash_run`) whose state is damaged after the first
//! host dies: the journal emptied or deleted, the audit witness emptied, the compiled
//! artifact of the host's plugin replaced by another plugin's, or the shared store of a
//! group of two hosts restarted empty (`crate::store_loss`, which judges it: the other
//! host must be refused every action of the task, before and after the remedy). The
//! restarted host must
//! refuse to start (a lost journal beside an earlier run's audit log, a witness that lacks
//! the log's checkpoints) or start and say what it found (a swapped artifact, recompiled);
//! then an operator's remedy — the journal restored from the backup taken before the
//! damage, a new witness epoch — and the run goes on to be judged at the provider as any
//! other: no action done twice, none lost.

use std::path::{Path, PathBuf};

use sluice::plugin::{ComponentCache, PluginRuntime, RuntimeConfig};

use crate::TEST_DEADLINE;
use crate::crash_run::Provider;

/// What is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// The journal truncated to 0 bytes (its `-wal` and `-shm` removed).
    JournalEmptied,
    /// The journal deleted (with its `-wal` and `-shm`).
    JournalDeleted,
    /// The audit witness truncated to 0 bytes.
    WitnessEmptied,
    /// The host plugin's compiled artifact replaced by the other provider's plugin's.
    ArtifactSwapped,
    /// The Redis the host shares with another restarted without persistence.
    StoreLost,
}

/// A signed checkpoint every this many audit records in a damage run, so that a short run
/// has checkpoints for its witness to lose.
const CHECKPOINT_EVERY: u32 = 4;

/// What the host says on its standard error when it does not start.
const DID_NOT_START: &str = "the host did not start";

impl Damage {
    /// Every damage.
    pub const ALL: [Self; 5] = [
        Self::JournalEmptied,
        Self::JournalDeleted,
        Self::WitnessEmptied,
        Self::ArtifactSwapped,
        Self::StoreLost,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::JournalEmptied => "journal-emptied",
            Self::JournalDeleted => "journal-deleted",
            Self::WitnessEmptied => "witness-emptied",
            Self::ArtifactSwapped => "artifact-swapped",
            Self::StoreLost => "store-lost",
        }
    }

    /// The host's options in a damage run whose state is under `dir`.
    pub(crate) fn options(self, dir: &Path) -> Vec<String> {
        vec![
            "--checkpoint-every".into(),
            CHECKPOINT_EVERY.to_string(),
            "--cache".into(),
            cache(dir).display().to_string(),
        ]
    }

    /// Before the first host: for a swap, the other provider's plugin compiled into the
    /// run's own cache, to be copied over this one's.
    pub(crate) fn prepare(self, provider: Provider, dir: &Path) {
        if self != Self::ArtifactSwapped {
            return;
        }
        let config = RuntimeConfig {
            call_deadline: TEST_DEADLINE,
            ..RuntimeConfig::default()
        };
        let rt = PluginRuntime::new(config, ComponentCache::new(Some(cache(dir))))
            .expect("a plugin runtime");
        rt.load_bundled(other(provider).name())
            .expect("the other provider's plugin");
    }

    /// Damages the state under `dir` of a host that writes to `provider`, keeping a backup
    /// of the journal first; whether a host must now refuse to start: it must when what is
    /// damaged held something an earlier run left (a journal beside a non-empty audit log,
    /// a witness of a log with checkpoints). A store's loss is `crate::store_loss`'s.
    pub(crate) fn apply(self, provider: Provider, dir: &Path) -> bool {
        let journal = |suffix: &str| dir.join(format!("journal.sqlite{suffix}"));
        let audit = std::fs::read_to_string(dir.join("audit.log")).unwrap_or_default();
        match self {
            Self::JournalEmptied | Self::JournalDeleted => {
                let backup = dir.join("backup");
                std::fs::create_dir_all(&backup).expect("a backup directory");
                for suffix in ["", "-wal", "-shm"] {
                    if journal(suffix).exists() {
                        let to = backup.join(format!("journal.sqlite{suffix}"));
                        std::fs::copy(journal(suffix), to).expect("back up the journal");
                    }
                    let _ = std::fs::remove_file(journal(suffix));
                }
                if self == Self::JournalEmptied {
                    std::fs::write(journal(""), b"").expect("an empty journal");
                }
                !audit.is_empty()
            }
            Self::WitnessEmptied => {
                std::fs::write(dir.join("audit.witness"), b"").expect("an empty witness");
                audit.contains(r#""event":"checkpoint""#)
            }
            Self::ArtifactSwapped => {
                if let (Some(ours), Some(theirs)) = (
                    artifact(dir, provider.name()),
                    artifact(dir, other(provider).name()),
                ) {
                    std::fs::copy(theirs, ours).expect("swap the artifact");
                }
                false
            }
            Self::StoreLost => false,
        }
    }

    /// Judges the first start on damaged state under `dir` (`expected`: it must refuse),
    /// adding to `problems` what is wrong; returns how it went and the options of the next
    /// start (the operator's remedy, done here for the journal).
    pub(crate) fn judge_start(
        self,
        provider: Provider,
        dir: &Path,
        expected: bool,
        problems: &mut Vec<String>,
    ) -> (&'static str, &'static [&'static str]) {
        let stderr = std::fs::read_to_string(dir.join("host.stderr")).unwrap_or_default();
        let refused = stderr.contains(DID_NOT_START);
        let name = self.name();
        if refused != expected {
            problems.push(format!(
                "{name}: the host {} (it must {}): {stderr}",
                if refused {
                    "refused to start"
                } else {
                    "started"
                },
                if expected { "refuse" } else { "start" },
            ));
        }
        if refused {
            let (says, remedy): (&[&str], &'static [&'static str]) = match self {
                Self::JournalEmptied | Self::JournalDeleted => {
                    restore_journal(dir);
                    (&["journal", "--fresh-journal"], &[])
                }
                Self::WitnessEmptied => (
                    &["witness", "--new-witness-epoch"],
                    &["--new-witness-epoch"],
                ),
                Self::ArtifactSwapped | Self::StoreLost => (&[], &[]),
            };
            for word in says {
                if !stderr.contains(word) {
                    problems.push(format!(
                        "{name}: the refusal does not say `{word}`: {stderr}"
                    ));
                }
            }
            return ("refused", remedy);
        }
        if self == Self::ArtifactSwapped && artifact(dir, provider.name()).is_some() {
            if !stderr.contains("compiled from another component") {
                problems.push(format!(
                    "{name}: the host started without saying the artifact was another's: {stderr}"
                ));
            }
            return ("reported", &[]);
        }
        ("harmless", &[])
    }
}

/// The other provider.
fn other(provider: Provider) -> Provider {
    match provider {
        Provider::Stripe => Provider::GitHub,
        Provider::GitHub => Provider::Stripe,
    }
}

/// A damage run's own cache of compiled plugins.
fn cache(dir: &Path) -> PathBuf {
    dir.join("cache")
}

/// The cached artifact of the bundled plugin `name`, if there is one.
fn artifact(dir: &Path, name: &str) -> Option<PathBuf> {
    let bytes = sluice::plugin::bundled::get(name)?;
    crate::cached_artifacts(&cache(dir), bytes)
        .into_iter()
        .next()
}

/// Puts back the journal backed up before the damage, as an operator restores it.
fn restore_journal(dir: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let name = format!("journal.sqlite{suffix}");
        let _ = std::fs::remove_file(dir.join(&name));
        let backup = dir.join("backup").join(&name);
        if backup.exists() {
            std::fs::copy(&backup, dir.join(&name)).expect("restore the journal");
        }
    }
}
