//! The builder: a configuration, overrides, and the parts wired in one place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Sluice;
use super::error::BuildError;
use crate::admission::Admission;
use crate::admission::shared::{Gate, SharedConfig};
use crate::audit::{self, AuditKey, AuditLog, AuditSettings};
use crate::budget::Budgets;
use crate::clock::{Clock, TokioClock};
use crate::config::{ConfigFileError, SluiceConfig};
use crate::credentials::{Credentials, Keyring};
use crate::execute::Executor;
use crate::guard::QuarantinePolicy;
use crate::journal::{Journal, KeySecret};
use crate::plugin::{ComponentCache, PluginRuntime, RuntimeConfig};
use crate::printable::printable;
use crate::private_fs;
use crate::reload::PluginSet;
use crate::transport::Transport;
use crate::writes::{Step, Writes};

/// Builds a [`Sluice`]: a configuration (a file, TOML text or a [`SluiceConfig`]), then
/// whatever should differ from the defaults.
///
/// Defaults: tokio's clock ([`TokioClock`], which follows a paused test clock), the user's
/// component cache ([`ComponentCache::user_default`]), a jitter seed from the OS, the
/// state directory the configuration names (else the user's), the audit key found there
/// (created on the first start), and the credentials the configuration names.
#[derive(Default)]
pub struct SluiceBuilder {
    config: Option<Result<SluiceConfig, ConfigFileError>>,
    origin: Option<String>,
    clock: Option<Arc<dyn Clock>>,
    seed: Option<u64>,
    cache: Option<ComponentCache>,
    runtime: Option<RuntimeConfig>,
    transport: Option<Transport>,
    state_dir: Option<PathBuf>,
    audit_key: Option<AuditKey>,
    audit_log: Option<Arc<AuditLog>>,
    credentials: Option<Arc<dyn Credentials>>,
    provider_timeout: Option<Duration>,
    on_write_step: Option<Box<dyn Fn(Step) + Send + Sync>>,
    store: Option<SharedConfig>,
    fresh_journal: bool,
    new_witness_epoch: bool,
}

impl std::fmt::Debug for SluiceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SluiceBuilder")
            .field("origin", &self.origin)
            .field("seed", &self.seed)
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

impl SluiceBuilder {
    /// Reads the configuration file at `path` (when [`SluiceBuilder::build`] runs).
    #[must_use]
    pub fn config_file(mut self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        self.origin = Some(path.display().to_string());
        self.config = Some(SluiceConfig::from_file(path));
        self
    }

    /// Takes the configuration from TOML `text`; relative paths in it are taken from the
    /// current directory.
    #[must_use]
    pub fn config_toml(mut self, text: &str) -> Self {
        self.origin = Some("configuration".into());
        self.config = Some(SluiceConfig::from_toml(text, Path::new(".")));
        self
    }

    /// Takes the configuration as it is.
    #[must_use]
    pub fn config(mut self, config: SluiceConfig) -> Self {
        self.origin = Some("configuration".into());
        self.config = Some(Ok(config));
        self
    }

    /// Runs on `clock` instead of tokio's (tests: a clock that moves with tokio's paused one).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Seeds the retry jitter with `seed` instead of a random one (tests, reproducible runs).
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Keeps compiled plugins in `cache` instead of the user's cache directory.
    #[must_use]
    pub fn component_cache(mut self, cache: ComponentCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Runs plugins under `runtime`'s limits instead of the defaults (the configuration's
    /// `plugins.call_deadline_ms` still applies, and so does each provider's
    /// `plugin_limits`).
    #[must_use]
    pub fn plugin_runtime(mut self, runtime: RuntimeConfig) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Sends through `transport` instead of one built from the `[transport]` table.
    #[must_use]
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Accepts the journal as it is found even when it lost records an earlier run's state
    /// shows it had, which is otherwise refused: missing or empty beside the audit log, its
    /// witness or the shared store's epoch ([`BuildError::JournalLost`]), or behind the
    /// audit log, or another than the one the log was written beside
    /// ([`BuildError::Witnesses`]). Every action the audit log knows and the journal does not
    /// is recorded `lost`: never sent, and a resubmit of one goes to a person. It is logged,
    /// and recorded in the audit log.
    #[must_use]
    pub fn fresh_journal(mut self, fresh: bool) -> Self {
        self.fresh_journal = fresh;
        self
    }

    /// Starts the audit witness afresh if it is missing, emptied or cut short beside a log
    /// that has checkpoints, which is otherwise refused ([`audit::AuditError::WitnessLost`]):
    /// a `witness_epoch` record in the log says so, and `verify` reports it.
    #[must_use]
    pub fn new_witness_epoch(mut self, start: bool) -> Self {
        self.new_witness_epoch = start;
        self
    }

    /// Keeps the journal and the audit log in `dir` instead of the configured one.
    #[must_use]
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// Signs the audit log with `key` instead of the key file's.
    #[must_use]
    pub fn audit_key(mut self, key: AuditKey) -> Self {
        self.audit_key = Some(key);
        self
    }

    /// Records in `log`, already open, instead of opening `audit.log` in the state directory
    /// (for a host that manages its log's key itself). No other writer may hold it.
    #[must_use]
    pub fn audit_log(mut self, log: Arc<AuditLog>) -> Self {
        self.audit_log = Some(log);
        self
    }

    /// How long a provider may still act on a request it received (see
    /// `Writes::provider_timeout`).
    #[must_use]
    pub fn provider_timeout(mut self, timeout: Duration) -> Self {
        self.provider_timeout = Some(timeout);
        self
    }

    /// Tells `listener` each step of every write (see `Writes::on_step`).
    #[must_use]
    pub fn on_write_step(mut self, listener: impl Fn(Step) + Send + Sync + 'static) -> Self {
        self.on_write_step = Some(Box::new(listener));
        self
    }

    /// Takes every credential from `credentials` instead of the sources the configuration
    /// names: still the one source of secret headers.
    #[must_use]
    pub fn credentials(mut self, credentials: Arc<dyn Credentials>) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Shares admission's quotas with other hosts through the store `store` names (as the
    /// `[store]` table does; this takes precedence over it).
    #[must_use]
    pub fn shared_store(mut self, store: SharedConfig) -> Self {
        self.store = Some(store);
        self
    }

    /// Builds the host. Must run inside a tokio runtime with timers: admission's driver is
    /// spawned on it, and a task that keeps a timer within a second while the host lives, so
    /// that arming a call's timers costs that runtime no system call (see `near_timer`).
    ///
    /// # Errors
    /// [`BuildError`], naming the part and the file or key at fault. Nothing is sent before
    /// every part is up.
    pub fn build(self) -> Result<Sluice, BuildError> {
        let config = self.config.ok_or(BuildError::NoConfig)??;
        let origin = self.origin.unwrap_or_else(|| "configuration".into());
        let clock = self.clock.unwrap_or_else(|| Arc::new(TokioClock));

        let credentials: Arc<dyn Credentials> = match self.credentials {
            Some(c) => c,
            None => {
                config.check_credentials(&origin)?;
                for (provider, setup) in &config.providers {
                    for (label, source) in &setup.credentials {
                        if source.readable_by_others() {
                            tracing::warn!(
                                provider = %printable(provider),
                                credential = %printable(label),
                                "the credential's file is readable by other users: chmod 600 it"
                            );
                        }
                    }
                }
                Arc::new(keyring(&config))
            }
        };
        let plugins = Arc::new(plugins(&config, self.cache, self.runtime, &clock)?);
        let transport = match self.transport {
            Some(t) => t,
            None => Transport::with_config(config.transport.clone())?,
        };
        let seed = match self.seed {
            Some(s) => s,
            None => os_seed()?,
        };
        let state_dir = match self.state_dir.or(config.state_dir.clone()) {
            Some(dir) => dir,
            None => user_state_dir().ok_or(BuildError::NoStateDir)?,
        };
        open_state_dir(&state_dir)?;
        let journal_path = state_dir.join("journal.sqlite");
        let witness = witness_path(&config, &state_dir);
        // The journal is checked and opened before the shared store is joined: joining
        // writes `store.epoch`, which is itself evidence of an earlier run, and the join
        // runs on a task of its own that may finish before this thread goes on.
        // What only a run leaves (a key may be made before the first run).
        let earlier = [
            state_dir.join("audit.log"),
            witness.clone(),
            state_dir.join("store.epoch"),
        ];
        let mut files: Vec<PathBuf> = ["", "-wal", "-shm"]
            .iter()
            .map(|s| state_dir.join(format!("journal.sqlite{s}")))
            .collect();
        files.extend(earlier.iter().cloned());
        files.push(state_dir.join("audit.key"));
        super::state::tighten(&files)?;
        let store = self.store.or(config.store.clone());
        crate::config::group_budgets(
            &origin,
            store.as_ref().map(|s| s.hosts),
            config.journal.url.is_some(),
            &config.budgets,
        )?;
        // This host's name in a group: its claims in the store, its actions in a shared
        // journal. Stable across restarts (the machine and the state directory).
        let host = store
            .as_ref()
            .and_then(|s| s.host_id.clone())
            .unwrap_or_else(|| default_host_id(&state_dir));
        let journal = match &config.journal.url {
            None => {
                super::state::check_journal(&journal_path, &earlier, self.fresh_journal)?;
                Journal::open_or_create(&journal_path)?
            }
            Some(url) => Journal::connect_with(url.expose(), &host, config.journal.lease_ttl)?,
        };
        // Keys derived from each action's identity, under a secret kept outside the state
        // directory: the configured file, else one derived from the audit key.
        let audit_key = match (self.audit_log.is_some(), self.audit_key) {
            (true, _) => None,
            (false, Some(k)) => Some(k),
            (false, None) => Some(audit_key_of(&config, &state_dir)?),
        };
        let secret = match &config.journal.key_secret_file {
            Some(file) => Some(KeySecret::from_file(file)?),
            None => audit_key
                .as_ref()
                .map(|k| KeySecret::from_bytes(k.derive("sluice idempotency keys v1"))),
        };
        let journal = Arc::new(match secret {
            Some(secret) => journal.with_key_secret(secret),
            None => journal,
        });
        let gate = match store {
            None => None,
            Some(store) => {
                let epoch = state_dir.join("store.epoch");
                Some(Gate::new(store, host, clock.clone(), Some(epoch))?)
            }
        };
        // Each provider's quotas refill as its plugin declares, where the configuration
        // says nothing.
        let mut admission_config = config.admission.clone();
        let slots = plugins.slots();
        for (name, p) in &mut admission_config.providers {
            p.declared_refill = slots
                .get(name)
                .and_then(|slot| slot.current().plugin().description().refill);
        }
        let admission = match &gate {
            None => Admission::new(admission_config, clock.clone())?,
            Some(gate) => Admission::with_gate(admission_config, clock.clone(), gate.clone())?,
        };
        let base_urls: BTreeMap<String, String> = config
            .providers
            .iter()
            .filter_map(|(name, p)| Some((name.clone(), p.base_url.clone()?)))
            .collect();
        let mut executor = Executor::with_policy_slots(
            admission,
            plugins.slots(),
            transport,
            config.retry.clone(),
            clock.clone(),
            seed,
        )
        .with_credentials(credentials)
        .with_base_urls(base_urls.clone().into_iter().collect())
        .with_endpoints(endpoints(&config))
        .with_generations(
            config
                .providers
                .iter()
                .filter(|(_, p)| !p.generations.is_empty())
                .map(|(name, p)| (name.clone(), p.generations.clone()))
                .collect(),
        );
        if config.budgets.is_active() {
            // Budget use is counted in the journal, so that a restart keeps it.
            executor = executor.with_budgets(Arc::new(Budgets::new(
                config.budgets.clone(),
                config.admission.tenants.clone(),
                journal.clone(),
                clock.clone(),
            )));
        }
        let executor = Arc::new(executor);
        let audit = match self.audit_log {
            Some(log) => log,
            None => {
                let key = match audit_key {
                    Some(k) => k,
                    None => audit_key_of(&config, &state_dir)?,
                };
                let epoch = self.new_witness_epoch;
                Arc::new(open_audit(
                    &config,
                    &state_dir,
                    key,
                    epoch,
                    clock.wall_ms(),
                )?)
            }
        };
        // The journal and the audit log must agree before anything is sent: a journal
        // behind the log, or another than the one the log was written beside, lost records.
        let accepted =
            crate::writes::witnesses::hold(&journal, &audit, self.fresh_journal, clock.wall_ms())?;
        if accepted.lost > 0 {
            tracing::warn!(
                lost = accepted.lost,
                "actions the audit log knows and the accepted journal did not are recorded \
                 lost: never sent, and a resubmit of one goes to a person"
            );
        }
        let mut writes = Writes::new(
            executor.clone(),
            journal.clone(),
            audit.clone(),
            clock.clone(),
        )
        .keep_answers(config.journal.keep_answers)?;
        if let Some(timeout) = self.provider_timeout {
            writes = writes.provider_timeout(timeout);
        }
        if let Some(listener) = self.on_write_step {
            writes = writes.on_step(listener);
        }
        // In a group's journal an action is claimed by its row there, which names its
        // owner and passes to another host when the owner is gone; a claim in the store
        // would name the first owner for 30 days.
        if let Some(gate) = gate.filter(|_| !journal.is_shared()) {
            writes = writes.claims(gate);
        }
        let writes = Arc::new(writes);
        let group = journal
            .is_shared()
            .then(|| super::group::take_over_the_gone(Arc::downgrade(&writes), journal.clone()));
        // Every part is up: from now on a watched plugin file's change reloads it.
        plugins.watch();
        // Calls' timers arm without a system call on this runtime while the host lives.
        let (near_timer, dropped) = tokio::sync::oneshot::channel();
        drop(tokio::spawn(crate::near_timer::keep_a_timer_near(dropped)));
        Ok(Sluice {
            executor,
            plugins,
            writes,
            group,
            _near_timer: near_timer,
            journal,
            audit,
            clock,
            base_urls,
        })
    }
}

/// This host's default name in the shared store: the machine's name and the state
/// directory, so that two hosts on one machine (each with its own journal) differ.
fn default_host_id(state_dir: &Path) -> String {
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{machine}:{}", state_dir.display())
}

/// Where calls made with each credential that has its own `base_url` or `path` go.
fn endpoints(config: &SluiceConfig) -> crate::execute::Endpoints {
    let mut all = crate::execute::Endpoints::new();
    for (provider, setup) in &config.providers {
        for (label, source) in &setup.credentials {
            if source.base_url.is_none() && source.path.is_none() {
                continue;
            }
            let endpoint = crate::execute::Endpoint {
                base_url: source.base_url.clone(),
                path: source.path.clone(),
            };
            all.entry(provider.clone())
                .or_default()
                .insert(label.clone(), endpoint);
        }
    }
    all
}

/// The credentials the configuration names.
fn keyring(config: &SluiceConfig) -> Keyring {
    let mut keyring = Keyring::new();
    for (provider, setup) in &config.providers {
        for (label, source) in &setup.credentials {
            keyring.insert(provider, label, source.clone());
        }
    }
    keyring
}

/// Each configured provider's plugin, loaded under its own limits, checked and guarded.
fn plugins(
    config: &SluiceConfig,
    cache: Option<ComponentCache>,
    runtime: Option<RuntimeConfig>,
    clock: &Arc<dyn Clock>,
) -> Result<PluginSet, BuildError> {
    let mut limits = runtime.unwrap_or_default();
    if let Some(deadline) = config.plugin_call_deadline {
        limits.call_deadline = deadline;
    }
    let cache = cache.unwrap_or_else(ComponentCache::user_default);
    let runtime = PluginRuntime::new(limits, cache).map_err(BuildError::Runtime)?;
    PluginSet::load(config, runtime, QuarantinePolicy::default(), clock.clone())
        .map_err(|(provider, error)| BuildError::Plugin { provider, error })
}

/// `$XDG_STATE_HOME/sluice`, else `~/.local/state/sluice`.
fn user_state_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(base.join("sluice"))
}

/// Creates the state directory (`0700`), and refuses one that others can write.
fn open_state_dir(dir: &Path) -> Result<(), BuildError> {
    let fail = |why: String| BuildError::StateDir {
        path: dir.to_path_buf(),
        why,
    };
    private_fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create it: {e}")))?;
    private_fs::check_private_dir(dir).map_err(|exposure| fail(exposure.to_string()))
}

/// The configured key file's key, or the state directory's (`audit.key`, created with its
/// `audit.pub` on the first start).
fn audit_key_of(config: &SluiceConfig, state_dir: &Path) -> Result<AuditKey, BuildError> {
    if let Some(file) = &config.audit.key_file {
        return Ok(audit::load_signing(file)?);
    }
    let secret = state_dir.join("audit.key");
    if secret.exists() {
        Ok(audit::load_signing(&secret)?)
    } else {
        Ok(audit::generate(&secret, &state_dir.join("audit.pub"))?)
    }
}

/// The audit log `audit.log` in the state directory, with its witness.
fn open_audit(
    config: &SluiceConfig,
    state_dir: &Path,
    key: AuditKey,
    new_witness_epoch: bool,
    now_ms: i64,
) -> Result<AuditLog, BuildError> {
    let settings = AuditSettings {
        checkpoint_every: config.audit.checkpoint_every,
        retention: config.audit.retention,
        witness: Some(witness_path(config, state_dir)),
        new_witness_epoch,
    };
    Ok(AuditLog::open(
        &state_dir.join("audit.log"),
        key,
        settings,
        now_ms,
    )?)
}

/// The audit log's witness: the configured file, else `audit.witness` in the state
/// directory.
fn witness_path(config: &SluiceConfig, state_dir: &Path) -> PathBuf {
    config
        .audit
        .witness
        .clone()
        .unwrap_or_else(|| state_dir.join("audit.witness"))
}

/// A jitter seed from the OS.
fn os_seed() -> Result<u64, BuildError> {
    let mut bytes = [0; 8];
    getrandom::fill(&mut bytes).map_err(|e| BuildError::Seed(e.to_string()))?;
    Ok(u64::from_le_bytes(bytes))
}
