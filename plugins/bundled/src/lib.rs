//! The provider plugins that ship with sluice, compiled to components and embedded: the
//! OpenAI, Anthropic, GitHub, Stripe and IETF-header plugins, each with its test vectors.
//!
//! `build.rs` builds them from `plugins/` for `wasm32-wasip2` (through `plugins/builder`),
//! so depending on this crate costs a plugin build. The `sluice` library uses it behind its
//! default feature `bundled` (`PluginRuntime::load_bundled`); an embedder that loads only
//! its own `.wasm` files turns default features off and skips the build.

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// The component bytes of the bundled plugin `name`.
pub fn get(name: &str) -> Option<&'static [u8]> {
    BUNDLED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, b, _)| *b)
}

/// The test vectors shipped with the bundled plugin `name` (its `vectors.json`).
pub fn vectors(name: &str) -> Option<&'static str> {
    BUNDLED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, v)| *v)
}

/// The names of the bundled plugins.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUNDLED.iter().map(|(n, _, _)| *n)
}
