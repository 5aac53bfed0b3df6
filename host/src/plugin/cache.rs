//! Compiled components, cached on disk across runs. Compiling a plugin with Cranelift takes
//! far longer than loading the compiled artifact, so the artifact is kept under a key of the
//! component's bytes and the engine's compatibility hash: a new plugin build or a new engine
//! configuration simply misses.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The SHA-256 of a component's bytes: its identity in every cache.
pub type Digest = [u8; 32];

/// The [`Digest`] of `bytes`.
pub fn digest(bytes: &[u8]) -> Digest {
    Sha256::digest(bytes).into()
}

/// Where a component came from on load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Compiled earlier: found in this runtime's memory or in the on-disk cache.
    Hit,
    /// Compiled now (and stored, when a cache directory is set).
    Compiled,
}

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: Option<PathBuf>,
}

impl ComponentCache {
    /// A cache in `dir` (created on first store), or no cache with `None`.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// The per-user default: `$XDG_CACHE_HOME/sluice/components`, else
    /// `$HOME/.cache/sluice/components`; no cache when neither is set.
    pub fn user_default() -> Self {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        Self::new(base.map(|b| b.join("sluice").join("components")))
    }

    /// The directory, when caching is on.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Loads `bytes` (whose [`digest`] is `digest`) as a component: from the cache when it
    /// holds a compatible artifact, else by compiling (and then storing the artifact; a
    /// failure to store is logged, not fatal).
    ///
    /// # Errors
    /// When the bytes are not a valid component.
    pub fn load(
        &self,
        engine: &Engine,
        digest: &Digest,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let Some(path) = self.path_for(engine, digest) else {
            return Ok((Component::new(engine, bytes)?, CacheOutcome::Compiled));
        };
        // Read into memory rather than map the file: a cache file rewritten or truncated
        // by someone else while the component is in use must not crash the process.
        if let Ok(artifact) = std::fs::read(&path) {
            // SAFETY: `deserialize` trusts that the bytes are an artifact `Component::serialize`
            // produced. This file is one this cache wrote for this engine's configuration (the
            // key includes the engine's compatibility hash), in a directory the user owns.
            // Wasmtime also checks the header and version, and errors (we then recompile) on
            // any mismatch or corruption it can see.
            #[allow(unsafe_code, reason = "loading our own compiled artifacts")]
            match unsafe { Component::deserialize(engine, &artifact) } {
                Ok(c) => return Ok((c, CacheOutcome::Hit)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring an unusable cached component")
                }
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(e) = store_atomically(&path, &component.serialize()?) {
            tracing::warn!(path = %path.display(), error = %e, "could not cache a compiled component");
        }
        Ok((component, CacheOutcome::Compiled))
    }

    fn path_for(&self, engine: &Engine, digest: &Digest) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut h = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Some(dir.join(format!("{hex}-{:016x}.cwasm", h.finish())))
    }
}

/// Writes `data` to `path` through a temporary file and a rename, so a concurrent reader
/// never sees half an artifact.
fn store_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.{}.tmp", std::process::id(), unique()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
