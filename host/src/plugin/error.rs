//! What can go wrong with a plugin, as typed errors that name the plugin, the function and
//! what to do.

use std::time::Duration;

use crate::input_file::InputFileError;

/// A plugin call that produced no usable answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("plugin `{plugin}`: `{function}` {failure}")]
pub struct PluginError {
    /// The plugin's name.
    pub plugin: String,
    /// The contract function that was called (`read-response`, `plan-request`, ...).
    pub function: &'static str,
    /// What went wrong.
    pub failure: Failure,
}

/// How a plugin call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The call ran past its deadline (a loop, or work far too slow) and was interrupted.
    #[error("ran past its {} ms deadline and was interrupted", .0.as_millis())]
    Timeout(Duration),
    /// The call recursed (or allocated on the stack) past the wasm stack limit.
    #[error("overflowed the wasm stack (runaway recursion)")]
    StackOverflow,
    /// The plugin asked for more memory than its limit.
    #[error("exceeded its memory limit of {} MiB", .0 >> 20)]
    OutOfMemory(usize),
    /// The plugin trapped: a panic, an `unreachable`, an out-of-bounds access.
    #[error("trapped: {0}")]
    Trap(String),
    /// The plugin returned something the host refuses: over a cap, out of range, or
    /// malformed at the ABI level.
    #[error("returned invalid output: {0}")]
    InvalidOutput(String),
    /// The plugin answered with a `policy-error`: it declined this call.
    #[error("declined: {0}")]
    Declined(String),
}

impl Failure {
    /// Whether this failure counts toward quarantine. A plugin that declines a call is
    /// behaving correctly; everything else is a fault.
    pub fn is_fault(&self) -> bool {
        !matches!(self, Self::Declined(_))
    }
}

/// A plugin that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read: missing, unreadable, not a regular file, or larger than
    /// [`MAX_PLUGIN_BYTES`](super::MAX_PLUGIN_BYTES).
    #[error("the plugin file {0}")]
    Read(InputFileError),
    /// No bundled plugin has that name.
    #[error(
        "no bundled plugin is named `{name}`; bundled plugins: {known}. To load your own, pass the path of its .wasm file"
    )]
    UnknownBundled {
        /// The name given.
        name: String,
        /// The bundled names, comma-separated.
        known: String,
    },
    /// The bytes are not a component, or it implements neither `sluice:policy@0.2.0` nor
    /// the frozen `sluice:policy@0.1.0`.
    #[error(
        "{origin} is not a usable sluice plugin: {message}. A plugin is a wasm32-wasip2 component exporting sluice:policy/policy@0.2.0 (or the frozen @0.1.0); build it with `cargo build --target wasm32-wasip2`"
    )]
    Invalid {
        /// Where the bytes came from.
        origin: String,
        /// The engine's complaint.
        message: String,
    },
    /// `describe` failed or returned invalid data.
    #[error("{origin}: `describe` {}", error.failure)]
    Describe {
        /// Where the bytes came from.
        origin: String,
        /// The failure. The plugin has no name of its own yet: `error.plugin` is the origin.
        error: PluginError,
    },
    /// The runtime could not be set up.
    #[error("cannot start the plugin runtime: {0}")]
    Runtime(String),
}
