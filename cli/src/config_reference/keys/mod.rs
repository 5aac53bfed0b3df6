//! Every key of the configuration file (see the module above), in four rooms: admission's,
//! the providers', the host's own and the sidecar's.

mod admission;
mod host;
mod pools;
mod providers;
mod serve;
mod telemetry;

use super::KeyDoc;

/// Every key, in the order the reference shows them: the file's root keys, then each
/// table's.
pub fn keys() -> impl Iterator<Item = &'static KeyDoc> {
    admission::ADMISSION
        .iter()
        .chain(providers::PROVIDERS)
        .chain(pools::POOLS)
        .chain(admission::TENANTS)
        .chain(host::HOST)
        .chain(serve::SERVE)
        .chain(telemetry::TELEMETRY)
}
