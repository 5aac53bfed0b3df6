//! The configuration file: one TOML file for a whole host.
//!
//! It holds what the admission configuration holds (margins, the queue, providers' limits,
//! scopes and models, tiers, tenants: [`admission::Config`]), and beside it:
//!
//! ```toml
//! state_dir = "/var/lib/sluice"     # the journal, the audit log, its witness and key
//!
//! [providers.openai]
//! plugin = "openai"                 # a bundled plugin, or the path of a .wasm file
//! base_url = "https://api.openai.com"
//!
//! [providers.acme]
//! plugin = "plugins/acme.wasm"      # an external plugin, reloadable while it serves
//! vectors = "plugins/acme.json"     # cases it must pass before it takes traffic
//! reload = "watch"                  # reloaded when the file changes ("manual": on request)
//! [providers.acme.plugin_limits]    # its own limits (crate::plugin::PluginLimits)
//! call_deadline_ms = 2              # max_memory_mib, max_table_elements,
//! max_memory_mib = 8                # max_warm_instances, instance_max_calls
//! [providers.openai.credentials.team-key]
//! env = "OPENAI_API_KEY"            # or file = "/run/secrets/openai"
//! [providers.openai.limits]
//! requests_per_minute = 500
//! [providers.openai.generations."o3"] # per model (or "*"): see crate::execute::Generations
//! default_max_output = 32768        # what a generation naming no maximum is counted for
//! timeout_ms = 1800000              # a whole answer, instead of generation_timeout_ms
//!
//! [retry]                           # the keys of RetryConfig; [retry.classes.read], ...
//! max_delayed_requests = 64
//!
//! [audit]
//! checkpoint_every = 64
//!
//! [journal]
//! keep_answers_days = 7             # a write's answer, to answer its resubmission (0: none)
//! url = "postgres://sluice:PASSWORD@db:5432/sluice"  # a group's shared journal (else a file);
//!                                   # TLS as libpq: ?sslmode=verify-full&sslrootcert=/etc/ca.pem
//! lease_ttl_ms = 10000              # a host gone this long, and as long again, is taken over
//!
//! [transport]
//! connect_timeout_ms = 5000         # first_byte_timeout_ms, generation_timeout_ms, idle_timeout_ms
//! extra_roots = ["gateway-ca.pem"]  # CAs trusted besides the built-in ones
//!
//! [plugins]
//! call_deadline_ms = 5              # how long one plugin call may run
//!
//! [budgets]                         # spend budgets: see crate::budget
//! time_zone = "Europe/Berlin"
//! [tiers.free.budgets]
//! spend_micros_per_month = 5000000
//! [providers.openai.prices."gpt-4o"]
//! input_micros_per_million = 2500000
//! output_micros_per_million = 10000000
//! ```
//!
//! Every key is checked: an unknown key, a wrong type or a number out of its range is an
//! error that names the key (`providers.openai.credentials.team-key.env`). Relative paths
//! are taken from the file's directory. A provider without `plugin` uses the bundled plugin
//! of its own name. An admission-only file is a valid configuration file.

mod budgets;
mod generations;
mod parse;
mod plugin;
#[cfg(test)]
mod pool_tests;
pub mod read;
mod store;
mod tables;
mod telemetry;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::admission;
use crate::credentials::{CredentialError, CredentialSource};
use crate::printable::printable;
use crate::retry::RetryConfig;
use crate::transport::TransportConfig;

pub use budgets::{MAX_BUDGET, MAX_PRICE_MICROS};
pub(crate) use parse::group_budgets;
pub use plugin::MAX_PLUGIN_MEMORY_MIB;
pub use read::Reader;
pub use tables::MAX_TIMEOUT_MS;
pub use telemetry::{ExportHeaders, HTTP_PROTOBUF, TelemetryConfig};

/// The largest configuration file read, in bytes.
pub use crate::admission::config::MAX_FILE_BYTES;

/// A whole host's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SluiceConfig {
    /// Where the journal, the audit log, its witness and its key live; `None`: the user's
    /// state directory (`$XDG_STATE_HOME/sluice`, else `~/.local/state/sluice`).
    pub state_dir: Option<PathBuf>,
    /// Each provider's plugin, base URL and credentials, by the provider's name.
    pub providers: BTreeMap<String, ProviderSetup>,
    /// Admission: margins, the queue, every provider's limits and scopes, tiers, tenants.
    pub admission: admission::Config,
    /// Retry budgets by class, backoff and breakers.
    pub retry: RetryConfig,
    /// The audit log.
    pub audit: AuditConfig,
    /// Timeouts and trusted roots (the `[transport]` table).
    pub transport: TransportConfig,
    /// How long one plugin call may run; `None`: the runtime's default.
    pub plugin_call_deadline: Option<Duration>,
    /// Spend budgets and prices (the `[budgets]` table, `[tiers.X.budgets]`,
    /// `[tenants.budgets.X]`, `[providers.X.prices.MODEL]`).
    pub budgets: crate::budget::BudgetConfig,
    /// The store of admission state shared by several hosts (the `[store]` table); `None`:
    /// in memory, per host.
    pub store: Option<admission::shared::SharedConfig>,
    /// The `[journal]` table.
    pub journal: JournalConfig,
    /// Export over OpenTelemetry's protocol (the `[telemetry]` table); `sluice serve` reads
    /// it, the library does not.
    pub telemetry: TelemetryConfig,
}

/// The `[journal]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalConfig {
    /// How long the provider's answer to a write is kept, to answer a resubmission of the
    /// write as the provider did (`keep_answers_days`, 7 by default; 0 keeps none).
    pub keep_answers: Duration,
    /// The PostgreSQL database a group of hosts keeps its journal in (`url`): writes,
    /// escalations, decisions and budget use, each action owned by the host that recorded
    /// it. `None`: the state directory's own file (`journal.sqlite`).
    pub url: Option<DatabaseUrl>,
    /// How long a host's lease in the group's journal lasts (`lease_ttl_ms`, 10 s by
    /// default): renewed every quarter of it; a host whose lease ran out, and then as long
    /// again, is gone, and another host takes over its unfinished writes.
    pub lease_ttl: Duration,
    /// The file holding the secret new writes' idempotency keys are derived from
    /// (`key_secret_file`): kept outside the state directory, and the same file for every
    /// host of a group. `None`: derived from the audit signing key.
    pub key_secret_file: Option<PathBuf>,
}

/// A database's URL, which may hold its password: never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// A URL for the journal (`postgres://…`), as given.
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// The URL, password and all, for the client that connects with it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL as it may be printed: user, hosts, ports and database, without the password
    /// or any other option (which may hold one too).
    pub fn shown(&self) -> String {
        #[cfg(feature = "postgres")]
        {
            crate::journal::postgres::shown(&self.0)
        }
        #[cfg(not(feature = "postgres"))]
        {
            "a PostgreSQL URL (this build has no PostgreSQL client)".into()
        }
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DatabaseUrl(..)")
    }
}

/// The days a provider's answer to a write is kept by default.
pub const DEFAULT_KEEP_ANSWERS_DAYS: u64 = 7;

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            keep_answers: Duration::from_secs(DEFAULT_KEEP_ANSWERS_DAYS * 86_400),
            url: None,
            lease_ttl: crate::journal::DEFAULT_LEASE_TTL,
            key_secret_file: None,
        }
    }
}

/// One provider: who reads its answers, where it is, and the credentials it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSetup {
    /// Its plugin.
    pub plugin: PluginSource,
    /// Test vectors its plugin must pass before it serves, at start and at each reload
    /// (the format of `docs/PLUGIN-VECTORS.md`); `None`: none.
    pub vectors: Option<PathBuf>,
    /// Its plugin's own limits, where they differ from the runtime's.
    pub plugin_limits: crate::plugin::PluginLimits,
    /// What reloads its plugin besides a request (`reload`).
    pub reload: ReloadTrigger,
    /// What a call's relative URL (`/v1/models`) is resolved against.
    pub base_url: Option<String>,
    /// Its credentials, by label.
    pub credentials: BTreeMap<String, CredentialSource>,
    /// Its per-model settings of generations (`[providers.X.generations."model"]`).
    pub generations: crate::execute::Generations,
}

/// Where a provider's plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// A plugin bundled with sluice, by name.
    Bundled(String),
    /// A component file (`.wasm`).
    File(PathBuf),
}

/// What reloads a provider's plugin (`[providers.X] reload`). Either way a reload can be
/// asked for ([`Sluice::reload_plugin`](crate::Sluice::reload_plugin), the admin API).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReloadTrigger {
    /// Only a request (`"manual"`, the default).
    #[default]
    Manual,
    /// Also a change of the plugin file (`"watch"`; a `.wasm` file only): see
    /// `crate::reload::watch`.
    Watch,
}

/// The `[audit]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// A signed checkpoint every this many records.
    pub checkpoint_every: NonZeroU32,
    /// How long records are kept; `None`: all.
    pub retention: Option<Duration>,
    /// The signing key's file; `None`: `audit.key` in the state directory (created, with
    /// `audit.pub` beside it, on the first start).
    pub key_file: Option<PathBuf>,
    /// The witness; `None`: `audit.witness` in the state directory. Keep it apart from the
    /// log (another disk, another host's mount) for it to show a deleted tail.
    pub witness: Option<PathBuf>,
}

impl Default for AuditConfig {
    fn default() -> Self {
        let defaults = crate::audit::AuditSettings::default();
        Self {
            checkpoint_every: defaults.checkpoint_every,
            retention: None,
            key_file: None,
            witness: None,
        }
    }
}

/// Why a configuration file was refused. Every message names the file and the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file could not be read (missing, not a regular file, too large, not UTF-8), the
    /// TOML does not parse, or the admission part does not validate.
    #[error(transparent)]
    Admission(#[from] admission::ConfigError),
    /// A key outside admission is unknown, of the wrong type, or out of range.
    #[error("{}: `{}`: {}", printable(.origin), printable(.key), printable(.message))]
    Invalid {
        /// The file, or `configuration`.
        origin: String,
        /// The dotted key.
        key: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A credential's source cannot be read now.
    #[error(
        "{}: `providers.{}.credentials.{}`: {error}",
        printable(.origin),
        printable(.provider),
        printable(.label)
    )]
    Credential {
        /// The file, or `configuration`.
        origin: String,
        /// The provider.
        provider: String,
        /// The credential's label.
        label: String,
        /// Why.
        error: CredentialError,
    },
}

impl SluiceConfig {
    /// Parses a configuration; relative paths are taken from `base_dir`.
    ///
    /// # Errors
    /// [`ConfigFileError`] naming the key.
    pub fn from_toml(text: &str, base_dir: &Path) -> Result<Self, ConfigFileError> {
        Ok(Self::from_toml_with(text, base_dir, |_, _, _| Ok(()))?.0)
    }

    /// As [`SluiceConfig::from_toml`], with the `[serve]` table, which the library does not
    /// read, handed to `serve` with the file's reader and the configuration read so far:
    /// what the sidecar reads and checks against the rest of the file (and may add to, as an
    /// agent's tier is entered in `tenants.assign`).
    ///
    /// # Errors
    /// [`ConfigFileError`] naming the key, the library's or `serve`'s.
    pub fn from_toml_with<T>(
        text: &str,
        base_dir: &Path,
        serve: impl FnOnce(&Reader<'_>, Option<toml::Value>, &mut Self) -> Result<T, ConfigFileError>,
    ) -> Result<(Self, T), ConfigFileError> {
        parse::parse(text, "configuration", base_dir, serve)
    }

    /// Reads and parses the configuration file at `path` (a regular file of at most
    /// `MAX_FILE_BYTES`); relative paths in it are taken from its directory.
    ///
    /// # Errors
    /// [`ConfigFileError`] naming the file and the key.
    pub fn from_file(path: &Path) -> Result<Self, ConfigFileError> {
        Ok(Self::from_file_with(path, |_, _, _| Ok(()))?.0)
    }

    /// As [`SluiceConfig::from_file`], with the `[serve]` table handed to `serve` (see
    /// [`SluiceConfig::from_toml_with`]): the file is read once.
    ///
    /// # Errors
    /// [`ConfigFileError`] naming the file and the key.
    pub fn from_file_with<T>(
        path: &Path,
        serve: impl FnOnce(&Reader<'_>, Option<toml::Value>, &mut Self) -> Result<T, ConfigFileError>,
    ) -> Result<(Self, T), ConfigFileError> {
        let text = admission::config::read_text(path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        parse::parse(&text, &path.display().to_string(), base, serve)
    }

    /// Checks that every credential can be read now (the variable is set, the file is
    /// there), naming the first that cannot: what a host does before it starts.
    ///
    /// # Errors
    /// [`ConfigFileError::Credential`].
    pub fn check_credentials(&self, origin: &str) -> Result<(), ConfigFileError> {
        for (provider, setup) in &self.providers {
            for (label, source) in &setup.credentials {
                source
                    .check()
                    .map_err(|error| ConfigFileError::Credential {
                        origin: origin.to_owned(),
                        provider: provider.clone(),
                        label: label.clone(),
                        error,
                    })?;
            }
        }
        Ok(())
    }
}
