//! The plugin runtime: one wasmtime `Engine` for the process, the linker with the host's
//! imports, the epoch ticker that enforces call deadlines ([`super::ticker`]), and the
//! compiled-component cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

use super::bindings::{ProviderPolicy, v0_1, v0_2, v0_3};
use super::cache::{self, CacheOutcome, ComponentCache, Digest};
use super::error::LoadError;
use super::instance::Plugin;
use super::limits::{MAX_PLUGIN_BYTES, RuntimeConfig};
use super::own_limits::PluginLimits;
use super::state::State;
use super::ticker::{EpochTicker, REST_AFTER_TICKS, Ticking};
use crate::input_file;

/// Loads and runs plugins. Create one per process and share it: every plugin it loads is
/// compiled once, by one engine, and every call it makes is bounded by [`RuntimeConfig`].
///
#[cfg_attr(feature = "internals", doc = "```no_run")]
#[cfg_attr(not(feature = "internals"), doc = "```ignore")]
/// use sluice::plugin::{PluginRuntime, RuntimeConfig, ComponentCache};
///
/// let runtime = PluginRuntime::new(RuntimeConfig::default(), ComponentCache::user_default())?;
/// let openai = runtime.load_bundled("openai")?;
/// println!("{} governs {:?}", openai.name(), openai.description().hosts);
/// # Ok::<(), sluice::plugin::LoadError>(())
/// ```
pub struct PluginRuntime {
    engine: Engine,
    linker: Arc<Linker<State>>,
    config: RuntimeConfig,
    cache: ComponentCache,
    /// Components this engine compiled or loaded, by digest: each is compiled once.
    compiled: Mutex<HashMap<Digest, Component>>,
    /// Whether calls run, shared with every plugin loaded here: the ticker rests without.
    ticking: Arc<Ticking>,
    _ticker: EpochTicker,
}

impl std::fmt::Debug for PluginRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginRuntime")
            .field("config", &self.config)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl PluginRuntime {
    /// Starts a runtime with `config` limits, caching compiled plugins in `cache`.
    ///
    /// # Errors
    /// [`LoadError::Runtime`] when the engine or the WASI imports cannot be set up.
    pub fn new(config: RuntimeConfig, cache: ComponentCache) -> Result<Self, LoadError> {
        let mut wasm = Config::new();
        wasm.epoch_interruption(true)
            .max_wasm_stack(config.max_wasm_stack)
            .wasm_component_model(true);
        let engine = Engine::new(&wasm).map_err(|e| LoadError::Runtime(e.to_string()))?;
        let mut linker = Linker::<State>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| LoadError::Runtime(format!("WASI imports: {e}")))?;
        // Streams and polls that never block on tokio: plugin calls run on its threads.
        super::nonblocking::add_to_linker(&mut linker)
            .map_err(|e| LoadError::Runtime(format!("WASI stream imports: {e}")))?;
        // Every version's imports: a component built against the frozen 0.1.0 imports
        // `sluice:policy/log@0.1.0`, one built against 0.2.0 `@0.2.0`, and so on to a
        // current one's `@0.5.0`.
        ProviderPolicy::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Runtime(format!("sluice imports: {e}")))?;
        v0_3::ProviderPolicy::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Runtime(format!("sluice 0.3.0 imports: {e}")))?;
        v0_2::ProviderPolicy::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Runtime(format!("sluice 0.2.0 imports: {e}")))?;
        v0_1::ProviderPolicy::add_to_linker::<_, HasSelf<State>>(&mut linker, |s| s)
            .map_err(|e| LoadError::Runtime(format!("sluice 0.1.0 imports: {e}")))?;
        let ticking = Arc::new(Ticking::new(&config));
        let ticker = EpochTicker::start(engine.clone(), REST_AFTER_TICKS, ticking.clone())
            .map_err(|e| LoadError::Runtime(format!("cannot start the epoch ticker: {e}")))?;
        Ok(Self {
            engine,
            linker: Arc::new(linker),
            config,
            cache,
            compiled: Mutex::new(HashMap::new()),
            ticking,
            _ticker: ticker,
        })
    }

    /// The limits every call runs under, unless its plugin has its own ([`PluginLimits`]).
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Loads a plugin from component bytes; `origin` names it in errors.
    ///
    /// # Errors
    /// [`LoadError::Invalid`] when the bytes are not a component implementing the contract,
    /// [`LoadError::Describe`] when its `describe` fails.
    pub fn load(&self, origin: &str, bytes: &[u8]) -> Result<Plugin, LoadError> {
        self.load_with(origin, bytes, &PluginLimits::default())
    }

    /// As [`PluginRuntime::load`], the plugin running under its own `limits` (the runtime's
    /// where they name none).
    ///
    /// # Errors
    /// As [`PluginRuntime::load`]; a plugin whose `describe` cannot run within its own
    /// limits (too little memory to instantiate, too short a deadline) is refused.
    pub fn load_with(
        &self,
        origin: &str,
        bytes: &[u8],
        limits: &PluginLimits,
    ) -> Result<Plugin, LoadError> {
        let invalid = |e: wasmtime::Error| LoadError::Invalid {
            origin: origin.to_owned(),
            message: format!("{e:#}"),
        };
        let digest = cache::digest(bytes);
        let memo = self
            .compiled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&digest)
            .cloned();
        let (component, cached) = match memo {
            Some(c) => (c, CacheOutcome::Hit),
            None => {
                let (c, outcome) = self
                    .cache
                    .load(&self.engine, &digest, bytes)
                    .map_err(invalid)?;
                self.compiled
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(digest, c.clone());
                (c, outcome)
            }
        };
        let pre = self.linker.instantiate_pre(&component).map_err(invalid)?;
        Plugin::new(
            origin,
            &self.engine,
            component,
            pre,
            limits.apply(&self.config),
            cached,
            self.ticking.clone(),
        )
    }

    /// Loads a plugin from a `.wasm` file: a regular file of at most [`MAX_PLUGIN_BYTES`] (a
    /// fifo or a device, even behind a symlink, is refused without waiting on it).
    ///
    /// # Errors
    /// As [`PluginRuntime::load`], plus [`LoadError::Read`] when the file cannot be read, is
    /// not a regular file, or is too large.
    pub fn load_file(&self, path: &std::path::Path) -> Result<Plugin, LoadError> {
        self.load_file_with(path, &PluginLimits::default())
    }

    /// As [`PluginRuntime::load_file`], under the plugin's own `limits`.
    ///
    /// # Errors
    /// As [`PluginRuntime::load_file`] and [`PluginRuntime::load_with`].
    pub fn load_file_with(
        &self,
        path: &std::path::Path,
        limits: &PluginLimits,
    ) -> Result<Plugin, LoadError> {
        let bytes = input_file::read(path, MAX_PLUGIN_BYTES).map_err(LoadError::Read)?;
        self.load_with(&path.display().to_string(), &bytes, limits)
    }

    /// Loads a plugin built into this binary by name (`openai`, `anthropic`, `github`,
    /// `stripe`, `ietf`).
    ///
    /// # Errors
    /// [`LoadError::UnknownBundled`] for another name.
    pub fn load_bundled(&self, name: &str) -> Result<Plugin, LoadError> {
        self.load_bundled_with(name, &PluginLimits::default())
    }

    /// As [`PluginRuntime::load_bundled`], under the plugin's own `limits`.
    ///
    /// # Errors
    /// As [`PluginRuntime::load_bundled`] and [`PluginRuntime::load_with`].
    pub fn load_bundled_with(
        &self,
        name: &str,
        limits: &PluginLimits,
    ) -> Result<Plugin, LoadError> {
        let bytes = super::bundled::get(name).ok_or_else(|| LoadError::UnknownBundled {
            name: name.to_owned(),
            known: match super::bundled::names().collect::<Vec<_>>().join(", ") {
                none if none.is_empty() => {
                    "none (this build of sluice is without its feature `bundled`: turn it on to \
                     load them)"
                        .to_owned()
                }
                names => names,
            },
        })?;
        self.load_with(&format!("bundled plugin `{name}`"), bytes, limits)
    }

    /// Loads `spec`: a bundled plugin's name, or a path to a `.wasm` file (anything with a
    /// `/` or ending in `.wasm`).
    ///
    /// # Errors
    /// As [`PluginRuntime::load_bundled`] or [`PluginRuntime::load_file`].
    pub fn load_spec(&self, spec: &str) -> Result<Plugin, LoadError> {
        if spec.contains('/') || spec.ends_with(".wasm") {
            self.load_file(std::path::Path::new(spec))
        } else {
            self.load_bundled(spec)
        }
    }
}
