//! Plugins as configuration: every provider's plugin loaded under its own limits, checked
//! against its vectors before it serves, and replaced while calls run.
//!
//! # What a version must pass before it takes traffic
//!
//! The same checks at start and at each reload ([`PluginSet::reload`]): the file is read and
//! compiled as a component exporting a contract the host speaks (`sluice:policy@0.5.0`, or
//! the frozen `0.2.0` or `0.1.0`); its `describe` runs within the plugin's own limits and passes the
//! caps; at a reload, it names the same plugin as the version it replaces (a file swapped
//! for another provider's plugin is a mistake, not an upgrade); and every case of the
//! provider's vectors passes, when `vectors` is configured (the file is read again at each
//! reload, so a new version can ship new cases). At start, a plugin that fails any check
//! stops the host from starting. At a reload, the old version keeps serving; the reason is
//! logged (a warning with the provider and the reason), counted in
//! [`PLUGIN_RELOADS`](crate::observe::PLUGIN_RELOADS) `{result="refused"}`, and returned.
//!
//! # Calls in flight
//!
//! A call reads its provider's [`PolicySlot`] once, when it begins, and keeps that version
//! to its end: every attempt's plan and reading, every retry, and a stream to its last
//! chunk. An attempt therefore never plans on one version and reads on another, and a
//! reload fails no call: calls that began before it finish on the old version (dropped when
//! the last of them ends), calls that begin after it run on the new one. Settling an
//! uncertain write is a new call and reads the slot anew.
//!
//! # Quarantine
//!
//! A reloaded version starts with a guard of its own: no failures counted, no quarantine. A
//! fixed version is the way out of a quarantine; the old version's failures stay with it.
//!
//! # Cost
//!
//! A reload reads and compiles the file (or finds it in the component cache) and runs its
//! vectors on the calling thread: milliseconds to seconds. From async code, call it on a
//! blocking thread (`tokio::task::spawn_blocking`), as `sluice serve`'s admin API does.
//! Reloads of one provider run one at a time.
//!
//! # Triggers
//!
//! A library call ([`Sluice::reload_plugin`](crate::Sluice::reload_plugin)), the admin API of
//! `sluice serve` (`POST /plugins/{provider}/reload`), and, for a provider configured with
//! `reload = "watch"`, a change of its plugin file ([`watch`]).

pub mod watch;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use crate::guard::PolicySlot;

use crate::clock::Clock;
use crate::config::{PluginSource, ReloadTrigger, SluiceConfig};
use crate::guard::{GuardedPolicy, QuarantinePolicy};
use crate::plugin::{Contract, LoadError, Plugin, PluginLimits, PluginRuntime};
use crate::printable::printable;
use crate::vectors::{self, VectorError};

/// Why a plugin version was refused: it does not serve (at start, the host does not start;
/// at a reload, the old version keeps serving).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The file cannot be read, is not a usable component, or its `describe` failed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The new version's `describe` names another plugin than the one serving.
    #[error(
        "the new file is the plugin `{}`, not `{}`, which serves this provider: point the \
         provider's `plugin` at a build of `{}`",
        printable(.found),
        printable(.expected),
        printable(.expected)
    )]
    OtherPlugin {
        /// The serving version's name.
        expected: String,
        /// The new file's.
        found: String,
    },
    /// The provider's vector file cannot be read or parsed.
    #[error("its vectors: {0}")]
    VectorFile(#[from] VectorError),
    /// A case of the provider's vectors failed.
    #[error(
        "{failed} of {cases} cases of its vectors {} fail; the first, `{}`: {}",
        path.display(),
        printable(.case),
        printable(.failure)
    )]
    Vectors {
        /// The vector file.
        path: PathBuf,
        /// The first failing case's name.
        case: String,
        /// How it failed.
        failure: String,
        /// Cases that failed.
        failed: usize,
        /// Cases in the file.
        cases: usize,
    },
}

/// Why a reload did not happen. The old version keeps serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// No provider has that name.
    #[error("no provider is named `{}`; the providers are: {known}", printable(.provider))]
    UnknownProvider {
        /// The name given.
        provider: String,
        /// The configured providers, comma-separated.
        known: String,
    },
    /// The new version failed a check.
    #[error(
        "provider `{}`: the new version was refused and the old one keeps serving: {reason}",
        printable(.provider)
    )]
    Refused {
        /// The provider.
        provider: String,
        /// Why.
        reason: Refusal,
    },
}

/// A reload that took effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloaded {
    /// The provider.
    pub provider: String,
    /// The plugin's name (the same before and after).
    pub plugin: String,
    /// The version that serves now, from its `describe`.
    pub version: String,
    /// The version it replaced.
    pub previous_version: String,
    /// The contract the new version speaks.
    pub contract: Contract,
    /// Vector cases it passed before it took traffic (0 when none are configured).
    pub vectors_passed: usize,
}

/// Where a provider's plugin comes from, its own limits, its vectors and what reloads it.
#[derive(Debug)]
struct Origin {
    source: PluginSource,
    limits: PluginLimits,
    vectors: Option<PathBuf>,
    reload: ReloadTrigger,
}

/// One provider's plugin: its origin, and the slot its current version is in.
#[derive(Debug)]
struct Provider {
    origin: Origin,
    slot: Arc<PolicySlot>,
    /// Held through a reload: one at a time per provider.
    reloading: Mutex<()>,
}

/// Every provider's plugin, each in the slot the executor reads, and what reloading one
/// takes: the runtime that compiles it, and the guard each new version starts with.
#[derive(Debug)]
pub struct PluginSet {
    runtime: PluginRuntime,
    providers: BTreeMap<String, Provider>,
    quarantine: QuarantinePolicy,
    clock: Arc<dyn Clock>,
}

impl PluginSet {
    /// Loads and checks every provider's plugin of `config` with `runtime`, each guarded
    /// under `quarantine` on `clock`.
    ///
    /// # Errors
    /// The first provider whose plugin is refused, and why.
    pub fn load(
        config: &SluiceConfig,
        runtime: PluginRuntime,
        quarantine: QuarantinePolicy,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, (String, Refusal)> {
        let mut set = Self {
            runtime,
            providers: BTreeMap::new(),
            quarantine,
            clock,
        };
        for (name, setup) in &config.providers {
            let origin = Origin {
                source: setup.plugin.clone(),
                limits: setup.plugin_limits.clone(),
                vectors: setup.vectors.clone(),
                reload: setup.reload,
            };
            let (plugin, _) = set
                .admit(&origin, None)
                .map_err(|reason| (name.clone(), reason))?;
            let provider = Provider {
                origin,
                slot: Arc::new(PolicySlot::new(set.guard(plugin))),
                reloading: Mutex::new(()),
            };
            set.providers.insert(name.clone(), provider);
        }
        Ok(set)
    }

    /// Starts watching the plugin file of every provider configured with `reload = "watch"`
    /// on the current tokio runtime (see [`watch`]); the watcher stops once the set is
    /// dropped.
    pub fn watch(self: &Arc<Self>) {
        let files = self
            .providers
            .iter()
            .filter(|(_, p)| p.origin.reload == ReloadTrigger::Watch)
            .filter_map(|(name, p)| match &p.origin.source {
                PluginSource::File(path) => Some((name.clone(), path.clone())),
                PluginSource::Bundled(_) => None,
            })
            .collect();
        watch::spawn(self, files);
    }

    /// Each provider's slot, for the executor.
    pub fn slots(&self) -> HashMap<String, Arc<PolicySlot>> {
        self.providers
            .iter()
            .map(|(name, p)| (name.clone(), p.slot.clone()))
            .collect()
    }

    /// The runtime plugins are compiled and run by.
    pub fn runtime(&self) -> &PluginRuntime {
        &self.runtime
    }

    /// Loads `provider`'s plugin again from its source, checks it (see the module
    /// documentation) and, when it passes, puts it in place for every call that begins
    /// from now on; calls already running finish on the version they began with. Blocks
    /// while it compiles and runs the vectors.
    ///
    /// # Errors
    /// [`ReloadError::UnknownProvider`], or [`ReloadError::Refused`] with the check that
    /// failed; either way the old version keeps serving.
    pub fn reload(&self, provider: &str) -> Result<Reloaded, ReloadError> {
        let Some(p) = self.providers.get(provider) else {
            return Err(ReloadError::UnknownProvider {
                provider: provider.to_owned(),
                known: self
                    .providers
                    .keys()
                    .map(|k| printable(k).into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let _one_at_a_time = p.reloading.lock().unwrap_or_else(|e| e.into_inner());
        let old = p.slot.current();
        let serving = old.plugin().name().to_owned();
        let (plugin, vectors_passed) = self
            .admit(&p.origin, Some(&serving))
            .map_err(|reason| ReloadError::Refused {
                provider: provider.to_owned(),
                reason,
            })
            .inspect_err(|e| refused(provider, e))?;
        let reloaded = Reloaded {
            provider: provider.to_owned(),
            plugin: serving,
            version: plugin.description().version.clone(),
            previous_version: old.plugin().description().version.clone(),
            contract: plugin.contract(),
            vectors_passed,
        };
        p.slot.replace(self.guard(plugin));
        took(&reloaded, &old);
        Ok(reloaded)
    }

    /// Loads the plugin of `p` and runs every check; `serving` is the name of the version it
    /// would replace. The plugin, and the vector cases it passed.
    fn admit(&self, p: &Origin, serving: Option<&str>) -> Result<(Plugin, usize), Refusal> {
        let plugin = load(&self.runtime, &p.source, &p.limits)?;
        if let Some(expected) = serving
            && plugin.name() != expected
        {
            return Err(Refusal::OtherPlugin {
                expected: expected.to_owned(),
                found: plugin.name().to_owned(),
            });
        }
        let Some(path) = &p.vectors else {
            return Ok((plugin, 0));
        };
        let file = vectors::load(path)?;
        let report = vectors::run(&plugin, &file);
        if let Some(first) = report.results.iter().find(|r| r.failure.is_some()) {
            return Err(Refusal::Vectors {
                path: path.clone(),
                case: first.name.clone(),
                failure: first.failure.clone().unwrap_or_default(),
                failed: report.failed(),
                cases: report.results.len(),
            });
        }
        Ok((plugin, report.passed()))
    }

    /// `plugin` behind a fresh guard.
    fn guard(&self, plugin: Plugin) -> Arc<GuardedPolicy> {
        Arc::new(GuardedPolicy::new(
            Arc::new(plugin),
            self.quarantine.clone(),
            self.clock.clone(),
        ))
    }
}

/// Reports a reload that took effect: a quarantine of the old version no longer holds.
/// Loads the plugin `source` names under `limits`, as a host does at its start and at each
/// reload (`sluice config check` loads each provider's the same way).
///
/// # Errors
/// [`LoadError`]: no such bundled plugin, an unreadable file, not a plugin component.
pub fn load(
    runtime: &PluginRuntime,
    source: &PluginSource,
    limits: &PluginLimits,
) -> Result<Plugin, LoadError> {
    match source {
        PluginSource::Bundled(name) => runtime.load_bundled_with(name, limits),
        PluginSource::File(path) => runtime.load_file_with(path, limits),
    }
}

fn took(r: &Reloaded, old: &GuardedPolicy) {
    use crate::observe::{PLUGIN_QUARANTINED, PLUGIN_RELOADS};
    if old.health().quarantined_until.is_some() {
        metrics::gauge!(PLUGIN_QUARANTINED, "plugin" => r.plugin.clone()).set(0.0);
    }
    let provider = r.provider.clone();
    metrics::counter!(PLUGIN_RELOADS, "provider" => provider, "result" => "reloaded").increment(1);
    tracing::info!(
        provider = %printable(&r.provider),
        plugin = %printable(&r.plugin),
        version = %printable(&r.version),
        previous = %printable(&r.previous_version),
        "plugin reloaded; new calls run on the new version"
    );
}

/// Reports a refused reload: the old version keeps serving.
fn refused(provider: &str, e: &ReloadError) {
    let ReloadError::Refused { reason, .. } = e else {
        return;
    };
    let label = provider.to_owned();
    metrics::counter!(crate::observe::PLUGIN_RELOADS, "provider" => label, "result" => "refused")
        .increment(1);
    tracing::warn!(
        provider = %printable(provider),
        reason = %reason,
        "plugin reload refused; the old version keeps serving"
    );
}
