//! The provider plugins compiled into this binary (built from `plugins/` by `build.rs`).

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// The component bytes of the bundled plugin `name`.
pub fn get(name: &str) -> Option<&'static [u8]> {
    BUNDLED.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// The names of the bundled plugins.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUNDLED.iter().map(|(n, _)| *n)
}
