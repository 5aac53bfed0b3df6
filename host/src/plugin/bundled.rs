//! The provider plugins that ship with sluice (the `sluice-bundled` crate), with the default
//! feature `bundled`; without it there are none, and a plugin is loaded from a file.

#[cfg(feature = "bundled")]
pub use sluice_bundled::{get, names, vectors};

/// The component bytes of the bundled plugin `name`: none in a build without `bundled`.
#[cfg(not(feature = "bundled"))]
pub fn get(_name: &str) -> Option<&'static [u8]> {
    None
}

/// The test vectors shipped with the bundled plugin `name`: none in a build without
/// `bundled`.
#[cfg(not(feature = "bundled"))]
pub fn vectors(_name: &str) -> Option<&'static str> {
    None
}

/// The names of the bundled plugins: none in a build without `bundled`.
#[cfg(not(feature = "bundled"))]
pub fn names() -> impl Iterator<Item = &'static str> {
    std::iter::empty()
}
