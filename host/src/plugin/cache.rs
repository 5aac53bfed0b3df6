//! Compiled components, cached on disk across runs. Compiling a plugin with Cranelift takes
//! far longer than loading the compiled artifact, so the artifact is kept under a key of the
//! component's bytes and the engine's compatibility hash: a new plugin build or a new engine
//! configuration simply misses.
//!
//! # What the cache trusts
//!
//! An artifact is native code: `Component::deserialize` makes it executable as it stands,
//! and nothing checks what it does. Whoever can write an artifact runs code in the host, and
//! a few flipped bits crash the process or change a plugin's answers. So:
//!
//! - **the directory must be the user's alone**: owned by the user running sluice and
//!   writable by no one else, as ssh requires of its keys. It is created `0700` whatever the
//!   umask ([`crate::private_fs`]). A directory that fails the check is not used at all, as
//!   ssh ignores a key others can read: a warning names it and the `chmod` to run, and this
//!   run compiles every plugin in memory. Only speed is lost;
//! - **so must each artifact**: a file someone else owns, or may write (planted while the
//!   directory was open to them), is recompiled and replaced; so is anything under an
//!   artifact's name that is not a regular file of a sane size (a fifo would hang the host,
//!   a symlink to `/dev/zero` would fill its memory), which is never read;
//! - **each artifact carries the SHA-256 of its bytes** (a trailer, written with it through
//!   one rename) and is loaded only when the digest matches: a flipped bit, a torn or
//!   truncated write, a file from an older format is recompiled and replaced, with a
//!   warning, and never deserialized;
//! - **and says what it was compiled from**: the trailer names the SHA-256 of the exact
//!   component it was compiled from and the engine configuration it was compiled for, under
//!   the same checksum, and an artifact is loaded only for that component on that engine.
//!   An artifact copied over another plugin's name, over another version of the same
//!   plugin, or from an engine configured otherwise is recompiled and replaced, with a
//!   warning that says so — the file's name is never taken as its identity.
//!
//! The digest stops accidents, not an adversary: one who can write the directory can write a
//! matching digest too. The ownership checks are what keep others out; the user's own
//! processes are trusted, as they are with everything else in the user's home.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sha2::{Digest as _, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::input_file::{self, InputFileError};
use crate::private_fs;

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
    /// Compiled now (and stored, when a cache directory is set and safe to use).
    Compiled,
}

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: Option<PathBuf>,
    /// Whether `dir` is safe to use: decided once, on first use, and shared by clones.
    usable: Arc<OnceLock<bool>>,
}

impl ComponentCache {
    /// A cache in `dir` (created `0700` on first use), or no cache with `None`. A directory
    /// that is not the user's alone is not used (see the module documentation).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            usable: Arc::default(),
        }
    }

    /// The per-user default: `$XDG_CACHE_HOME/sluice/components`, else
    /// `$HOME/.cache/sluice/components`; no cache when neither is set.
    pub fn user_default() -> Self {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        Self::new(base.map(|b| b.join("sluice").join("components")))
    }

    /// The directory, when caching is on (whether or not it turns out safe to use).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Loads `bytes` (whose `digest` is `digest`) as a component: from the cache when it
    /// holds an intact artifact for this engine, else by compiling (and then storing the
    /// artifact; a failure to store is logged, not fatal).
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
        let origin = Origin {
            source: *digest,
            engine: engine_key(engine),
        };
        let unusable = match read_artifact(&path, &origin) {
            Ok(None) => None,
            Ok(Some(artifact)) => {
                // SAFETY: `deserialize` trusts that the bytes are an artifact
                // `Component::serialize` produced for this engine. These bytes are exactly
                // those this cache stored: their SHA-256 trailer matched, and the file and
                // its directory are writable by this user alone (checked above). The
                // trailer names the component they were compiled from (these `bytes`) and
                // the engine's compatibility hash (this engine's), and wasmtime checks the
                // header and version again.
                #[allow(unsafe_code, reason = "loading our own compiled artifacts")]
                match unsafe { Component::deserialize(engine, &artifact) } {
                    Ok(c) => return Ok((c, CacheOutcome::Hit)),
                    Err(e) => Some(Unusable::Refused(e.to_string())),
                }
            }
            Err(why) => Some(why),
        };
        let component = Component::new(engine, bytes)?;
        let stored = store_atomically(&path, &component.serialize()?, &origin);
        // One warning, naming the file once, saying what became of it.
        let path = path.display();
        match (unusable, stored) {
            (None, Ok(())) => {}
            (None, Err(e)) => {
                tracing::warn!("could not cache the compiled component {path}: {e}");
            }
            (Some(why), Ok(())) => tracing::warn!(
                "did not load the cached component {path}: {why}; recompiled it and replaced \
                 the file"
            ),
            (Some(why), Err(e)) => tracing::warn!(
                "did not load the cached component {path}: {why}; recompiled it, but could \
                 not replace the file ({e}): remove it"
            ),
        }
        Ok((component, CacheOutcome::Compiled))
    }

    /// The artifact's path, when there is a directory and it is safe to use.
    fn path_for(&self, engine: &Engine, digest: &Digest) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        if !*self.usable.get_or_init(|| usable(dir)) {
            return None;
        }
        Some(dir.join(format!(
            "{}-{:016x}.cwasm",
            crate::hex::to_hex(digest),
            engine_key(engine)
        )))
    }
}

/// The engine's compatibility hash (its version and every setting that changes compiled
/// code), as a number.
fn engine_key(engine: &Engine) -> u64 {
    let mut h = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    h.finish()
}

/// What an artifact was compiled from: the component's [`Digest`] and the engine's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Origin {
    source: Digest,
    engine: u64,
}

impl Origin {
    fn bytes(&self) -> [u8; 40] {
        let mut b = [0; 40];
        b[..32].copy_from_slice(&self.source);
        b[32..].copy_from_slice(&self.engine.to_be_bytes());
        b
    }

    /// The checksum of `artifact` compiled from `self`.
    fn checksum(&self, artifact: &[u8]) -> Digest {
        let mut h = Sha256::new();
        h.update(artifact);
        h.update(self.bytes());
        h.finalize().into()
    }
}

/// Creates `dir` (`0700`) when missing and checks that it is the user's alone; says why not
/// in a warning.
fn usable(dir: &Path) -> bool {
    let checked = private_fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
        .and_then(|()| private_fs::check_private_dir(dir).map_err(|e| e.to_string()));
    match checked {
        Ok(()) => true,
        Err(why) => {
            tracing::warn!(
                "not using the compiled-component cache: {why}. Plugins are compiled in \
                 memory for this run (slower to start, no less safe)"
            );
            false
        }
    }
}

/// Marks the trailer: what follows is the artifact's [`Origin`] (the component's SHA-256, the
/// engine's key) and the SHA-256 of the artifact and its origin.
const TRAILER_MAGIC: &[u8; 16] = b"sluice-sha256-v2";
/// The trailer: [`TRAILER_MAGIC`], the origin (40 bytes) and the checksum.
const TRAILER_LEN: usize = TRAILER_MAGIC.len() + 40 + 32;

/// The largest artifact read, in bytes: 256 MiB. A compiled plugin is a few times the size
/// of its `.wasm` (about 450 KiB for a bundled one, whose `.wasm` is 350 KiB), and a `.wasm`
/// is at most [`MAX_PLUGIN_BYTES`](super::MAX_PLUGIN_BYTES).
const MAX_ARTIFACT_BYTES: u64 = 256 << 20;

/// Why a cached artifact is not loaded. Each is said of the file, which the cache names and
/// then replaces: nothing for the user to do about it.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("it is not a regular file (a fifo, a device, a directory, or a symlink to one)")]
    NotAFile,
    #[error("it is larger than {} MiB, more than this cache writes", MAX_ARTIFACT_BYTES >> 20)]
    TooLarge,
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    #[error("it belongs to user {owner}, not to the user running sluice ({me})")]
    NotOwned { owner: u32, me: u32 },
    #[error("it can be written by {who} (mode {mode:04o})")]
    Writable { who: &'static str, mode: u32 },
    #[error("it has no integrity trailer (truncated, or written by another version)")]
    NoTrailer,
    #[error("its SHA-256 does not match its trailer (the file is corrupted)")]
    Corrupted,
    #[error(
        "it was compiled from another component (SHA-256 {found}), not this plugin's \
         ({wanted}): copied from another plugin or another version of this one"
    )]
    OtherSource { found: String, wanted: String },
    #[error("it was compiled for an engine configured otherwise (another version or setting)")]
    OtherEngine,
    #[error("the engine refuses it ({0})")]
    Refused(String),
}

impl From<InputFileError> for Unusable {
    fn from(e: InputFileError) -> Self {
        match e {
            InputFileError::NotAFile { .. } => Self::NotAFile,
            InputFileError::TooLarge { .. } => Self::TooLarge,
            InputFileError::Io { error, .. } => Self::Read(error),
        }
    }
}

impl From<private_fs::Exposure> for Unusable {
    fn from(e: private_fs::Exposure) -> Self {
        match e {
            private_fs::Exposure::NotOwned { owner, me, .. } => Self::NotOwned { owner, me },
            private_fs::Exposure::Writable { who, mode, .. } => Self::Writable { who, mode },
            private_fs::Exposure::Io { error, .. } => Self::Read(error),
        }
    }
}

/// The artifact stored at `path` without its trailer, `None` when there is none.
///
/// Only a regular file is read (opened without blocking: a fifo planted under an artifact's
/// name does not hang the host, a symlink to `/dev/zero` is not read), owned by this user
/// and writable by no one else (checked on the open file), of at most
/// [`MAX_ARTIFACT_BYTES`].
fn read_artifact(path: &Path, wanted: &Origin) -> Result<Option<Vec<u8>>, Unusable> {
    // Read into memory rather than map the file: a file rewritten or truncated while the
    // component is in use must not crash the process, and the bytes checked are the bytes
    // loaded.
    let file = match input_file::open(path) {
        Ok(f) => f,
        Err(InputFileError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata().map_err(Unusable::Read)?;
    private_fs::check_private(path, &meta)?;
    let mut data = input_file::read_opened(file, path, MAX_ARTIFACT_BYTES)?;
    let Some(body_len) = data.len().checked_sub(TRAILER_LEN) else {
        return Err(Unusable::NoTrailer);
    };
    let (magic, rest) = data[body_len..].split_at(TRAILER_MAGIC.len());
    if magic != TRAILER_MAGIC {
        return Err(Unusable::NoTrailer);
    }
    let (origin, sum) = rest.split_at(40);
    let mut source = [0; 32];
    source.copy_from_slice(&origin[..32]);
    let mut engine = [0; 8];
    engine.copy_from_slice(&origin[32..]);
    let found = Origin {
        source,
        engine: u64::from_be_bytes(engine),
    };
    if found.checksum(&data[..body_len])[..] != *sum {
        return Err(Unusable::Corrupted);
    }
    if found.source != wanted.source {
        return Err(Unusable::OtherSource {
            found: crate::hex::to_hex(&found.source),
            wanted: crate::hex::to_hex(&wanted.source),
        });
    }
    if found.engine != wanted.engine {
        return Err(Unusable::OtherEngine);
    }
    data.truncate(body_len);
    Ok(Some(data))
}

/// Writes `artifact`, compiled from `origin`, and its trailer to `path` through a new `0600`
/// file and a rename, so a concurrent reader never sees half an artifact.
fn store_atomically(path: &Path, artifact: &[u8], origin: &Origin) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".{}.{}.tmp", std::process::id(), unique()));
    let written = private_fs::options()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(artifact)?;
            f.write_all(TRAILER_MAGIC)?;
            f.write_all(&origin.bytes())?;
            f.write_all(&origin.checksum(artifact))
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An artifact's trailer is checked against the component and the engine it is loaded
    /// for: the bytes are never deserialized for another (what `Component::deserialize`
    /// would make executable as it stands).
    #[test]
    fn an_artifact_is_read_only_for_the_component_and_engine_it_was_compiled_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.cwasm");
        let ours = Origin {
            source: digest(b"this plugin"),
            engine: 7,
        };
        store_atomically(&path, b"compiled code", &ours).unwrap();
        assert_eq!(
            read_artifact(&path, &ours).unwrap().as_deref(),
            Some(&b"compiled code"[..])
        );
        let other_plugin = Origin {
            source: digest(b"another plugin"),
            ..ours
        };
        assert!(matches!(
            read_artifact(&path, &other_plugin),
            Err(Unusable::OtherSource { .. })
        ));
        let other_engine = Origin { engine: 8, ..ours };
        assert!(matches!(
            read_artifact(&path, &other_engine),
            Err(Unusable::OtherEngine)
        ));
        // The origin is under the checksum: rewriting it in place is corruption.
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 32 - 8;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            read_artifact(&path, &ours),
            Err(Unusable::Corrupted)
        ));
    }
}
