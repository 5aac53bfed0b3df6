//! Why a host could not be built: the one error of [`crate::SluiceBuilder::build`], which
//! the builder and the checks of its state directory (`state`) both return.

use std::path::PathBuf;

use crate::admission;
use crate::admission::shared::GateError;
use crate::audit;
use crate::config::ConfigFileError;
use crate::journal::JournalError;
use crate::plugin::LoadError;
use crate::printable::printable;
use crate::reload::Refusal;
use crate::transport::TransportError;

/// Why a host could not be built. Each names the part, and the file or key at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No configuration was given.
    #[error(
        "no configuration: give one with .config_file(\"sluice.toml\"), .config_toml(text) or \
         .config(SluiceConfig)"
    )]
    NoConfig,
    /// The configuration does not parse or validate.
    #[error(transparent)]
    Config(#[from] ConfigFileError),
    /// A provider's plugin did not load, or failed its checks (its vectors, ...).
    #[error("provider `{}`: {error}", printable(.provider))]
    Plugin {
        /// The provider.
        provider: String,
        /// Why.
        error: Refusal,
    },
    /// The plugin runtime did not start.
    #[error("the plugin runtime: {0}")]
    Runtime(LoadError),
    /// Admission refused its configuration.
    #[error(transparent)]
    Admission(#[from] admission::ConfigError),
    /// The transport did not start (a bad extra root, a bad proxy).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The state directory cannot be created, or others can write it.
    #[error("the state directory {}: {why}", path.display())]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong and what to do.
        why: String,
    },
    /// The shared store's settings cannot work.
    #[error(transparent)]
    Store(#[from] GateError),
    /// No state directory was named and the user has no home to keep one in.
    #[error(
        "no state directory: set `state_dir` in the configuration (neither XDG_STATE_HOME nor \
         HOME is set)"
    )]
    NoStateDir,
    /// The journal did not open.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The journal is missing or empty beside the state of an earlier run: the record of
    /// which writes were sent is gone.
    #[error(
        "the journal {} {why}, but an earlier run's state is beside it: {}. The journal is the \
         record of which writes were sent; starting a fresh one could send a write twice. \
         Restore the journal from a backup, or start a fresh journal on purpose \
         (`sluice serve --fresh-journal`, or SluiceBuilder::fresh_journal)",
        journal.display(),
        found.join(", ")
    )]
    JournalLost {
        /// The journal's path.
        journal: PathBuf,
        /// What is wrong with it.
        why: &'static str,
        /// The earlier run's files found beside it, with their sizes.
        found: Vec<String>,
    },
    /// The journal and the audit log disagree: the journal is behind the log, or not the
    /// one the log was written beside (`crate::writes::witnesses`). Or accepting it
    /// ([`SluiceBuilder::fresh_journal`](crate::SluiceBuilder::fresh_journal)) failed part way.
    #[error(transparent)]
    Witnesses(#[from] crate::writes::witnesses::WitnessError),
    /// The audit key could not be loaded or created.
    #[error(transparent)]
    AuditKey(#[from] audit::KeyError),
    /// The idempotency key secret (`[journal] key_secret_file`) cannot be read.
    #[error(transparent)]
    KeySecret(#[from] crate::journal::keys::KeySecretError),
    /// The audit log did not open.
    #[error(transparent)]
    Audit(#[from] audit::AuditError),
    /// The OS gave no random seed.
    #[error("no random seed from the operating system: {0}")]
    Seed(String),
}
