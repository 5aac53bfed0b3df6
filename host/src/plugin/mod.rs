//! The sandboxed plugin runtime.
//!
//! Provider plugins are untrusted WebAssembly components. The runtime compiles each once
//! (and caches the result on disk), pre-links it (`InstancePre`), and runs every call in a
//! store with a memory and table limit, under an epoch deadline, with a WASI context that
//! grants nothing. Whatever a plugin does — trap, loop, recurse, exhaust memory, return
//! garbage — the call ends in a typed [`PluginError`] and the host carries on; see
//! [`crate::guard`] for quarantine and the built-in fallback. A plugin never sees a
//! credential: [`Plugin`] redacts them from every request it is given.
//!
//! A component is bound to the contract version it exports ([`Contract`]): the current
//! `sluice:policy@0.5.0`, or a frozen one — `0.4.0` through `v4.rs`, `0.3.0` through `v3.rs`, `0.2.0` through `v2.rs`,
//! `0.1.0`, whose functions answer the current API, through `v1.rs`. 0.2.0 and 0.1.0 were
//! promised at most the first 64 KiB of a request's body and nothing more about it, so a longer
//! body is not shown to them: their plan declines, and the built-in policy plans the call
//! conservatively. Every answer is
//! checked against the caps in `validate.rs` either way.
//!
//! A plugin's stdout and stderr are kept in memory during a call and logged after it, as a
//! warning naming the plugin, escaped and capped ([`MAX_STDIO_LOG_BYTES`] per stream and
//! call); writing to them never blocks, on any thread (`stdio.rs`, `nonblocking.rs`).
//!
//! `sluice plugin run-test`, cargo's runner for `wasm32-wasip2`, runs a plugin crate's test
//! binary in the same sandbox ([`sandbox_wasi`]).
//!
//! The limits are the runtime's ([`RuntimeConfig`]), and each plugin may have its own
//! ([`PluginLimits`]): they are a store's, and every plugin has stores of its own.

pub mod bindings;
pub mod bundled;
mod cache;
mod contract;
mod convert;
mod error;
mod frozen;
mod instance;
mod limits;
#[cfg(feature = "native-plugins")]
mod native;
mod nonblocking;
mod own_limits;
mod runtime;
mod state;
mod stdio;
mod ticker;
mod v1;
mod v2;
mod v3;
mod v4;
#[cfg(feature = "fuzzing")]
pub mod validate;
#[cfg(not(feature = "fuzzing"))]
mod validate;

/// The errors of a policy call, which live with the contract; named here too, beside
/// [`LoadError`], for callers that meet them through a plugin.
pub use crate::contract::{Failure, PluginError};
pub use cache::{CacheOutcome, ComponentCache, Digest, digest};
pub use contract::Contract;
pub use error::LoadError;
pub use instance::Plugin;
pub use limits::{Caps, MAX_PLUGIN_BYTES, RuntimeConfig};
#[cfg(feature = "native-plugins")]
pub use native::NativePlugin;
pub use own_limits::PluginLimits;
pub use runtime::PluginRuntime;
pub use state::sandbox_wasi;
pub use stdio::MAX_STDIO_LOG_BYTES;
