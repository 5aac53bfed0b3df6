//! What can go wrong with a plugin, as typed errors that name the plugin, the function and
//! what to do.

use super::limits::Caps;
use super::validate;
use crate::contract::{Failure, PluginError, PolicyError};
use crate::input_file::InputFileError;

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
    /// The bytes are not a component, or it implements none of `sluice:policy@0.5.0` and the
    /// frozen `sluice:policy@0.2.0` and `@0.1.0`.
    #[error(
        "{origin} is not a usable sluice plugin: {message}. A plugin is a wasm32-wasip2 component exporting sluice:policy/policy@0.5.0 (or the frozen @0.4.0, @0.3.0, @0.2.0 or @0.1.0); build it with `cargo build --target wasm32-wasip2`"
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

/// A plugin's `policy-error` as the [`Failure::Declined`] of `function`, its reason cut to
/// the caps' string length.
pub(super) fn declined(
    plugin: &str,
    function: &'static str,
    e: &PolicyError,
    caps: &Caps,
) -> PluginError {
    PluginError {
        plugin: plugin.to_owned(),
        function,
        failure: Failure::Declined(validate::truncate(&e.to_string(), caps.max_string_bytes)),
    }
}

/// `value`, or the [`Failure::InvalidOutput`] of `function` when `verdict` (a check of
/// `validate.rs`) refused it.
pub(super) fn checked<T>(
    plugin: &str,
    function: &'static str,
    verdict: validate::Check,
    value: T,
) -> Result<T, PluginError> {
    verdict.map(|()| value).map_err(|reason| PluginError {
        plugin: plugin.to_owned(),
        function,
        failure: Failure::InvalidOutput(reason),
    })
}
