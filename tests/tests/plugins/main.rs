//! Plugins: hostile ones contained, external ones configured and reloaded, their output, their
//! vectors, the frozen older contracts, the compiled-component cache, and the bundled plugins
//! compiled natively.
//!
//! One test binary of the area (`cargo test -p sluice-tests --test plugins`); a file is one
//! concern, run alone with its module's name as the filter (`-- plugin_containment::`).

mod component_cache;
mod native_policy;
mod plugin_containment;
mod plugin_kit;
mod plugin_stdio;
mod plugin_vectors;
mod plugin_versions;
