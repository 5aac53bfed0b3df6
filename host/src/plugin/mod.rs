//! The sandboxed plugin runtime.
//!
//! Provider plugins are untrusted WebAssembly components. The runtime compiles each once
//! (and caches the result on disk), pre-links it (`InstancePre`), and runs every call in a
//! store with a memory and table limit, under an epoch deadline, with a WASI context that
//! grants nothing. Whatever a plugin does — trap, loop, recurse, exhaust memory, return
//! garbage — the call ends in a typed [`PluginError`] and the host carries on; see
//! [`crate::guard`] for quarantine and the built-in fallback.

pub mod bindings;
pub mod bundled;
mod cache;
mod error;
mod instance;
mod limits;
mod runtime;
mod state;
mod validate;

pub use cache::{CacheOutcome, ComponentCache, Digest, digest};
pub use error::{Failure, LoadError, PluginError};
pub use instance::Plugin;
pub use limits::{Caps, RuntimeConfig};
pub use runtime::PluginRuntime;
