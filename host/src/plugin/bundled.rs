//! The provider plugins compiled into this binary (built from `plugins/` by `build.rs`).

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
