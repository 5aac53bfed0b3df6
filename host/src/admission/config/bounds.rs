//! The range of every number in the configuration.
//!
//! The types already refuse zero and negative numbers; they accept `max_wait_ms =
//! 18446744073709551615` (585 million years) and `margin = 1e-300`, which no one means and
//! which reach arithmetic that was never meant for them. Each number has a range that covers
//! every sensible setting with room to spare, and an error names the key and the range.

use std::num::{NonZeroU32, NonZeroU64};

use super::ConfigError;
use crate::admission::limits::Limits;

/// The smallest margin: pace at 1% of a provider's limit (a host given a small slice of an
/// account shared by many).
pub const MIN_MARGIN: f64 = 0.01;
/// The longest wait a configuration can allow, in milliseconds: a day.
pub const MAX_WAIT_MS: u64 = 24 * 3_600_000;
/// The most requests a queue bound can allow to wait.
pub const MAX_QUEUED: u32 = 10_000_000;
/// The most requests a bound can allow in flight at once.
pub const MAX_IN_FLIGHT: u32 = 1_000_000;
/// The largest tier weight.
pub const MAX_WEIGHT: u32 = 10_000;
/// The most names of unconfigured narrower scopes a provider can be allowed to keep.
pub const MAX_UNCONFIGURED_SCOPES: u32 = 65_536;

/// Checks a margin: the share of a provider's limit to pace at.
pub(super) fn margin(key: &str, margin: f64) -> Result<(), ConfigError> {
    if (MIN_MARGIN..=1.0).contains(&margin) {
        return Ok(());
    }
    Err(ConfigError::Invalid {
        key: key.into(),
        message: format!(
            "the margin is the share of the provider's limit to pace at: between {MIN_MARGIN} \
             and 1 (0.9 paces at 90%), not {margin:?}"
        ),
    })
}

/// Checks that `value` at `key` is at most `max`, `what` saying what the number counts.
pub(super) fn at_most(key: &str, value: u64, max: u64, what: &str) -> Result<(), ConfigError> {
    if value <= max {
        return Ok(());
    }
    Err(ConfigError::Invalid {
        key: key.into(),
        message: format!("{value} is out of range: at most {max} ({what})"),
    })
}

/// Checks a wait in milliseconds.
pub(super) fn wait_ms(key: &str, value: Option<NonZeroU64>) -> Result<(), ConfigError> {
    value.map_or(Ok(()), |v| at_most(key, v.get(), MAX_WAIT_MS, "a day"))
}

/// Checks a queue bound.
pub(super) fn queued(key: &str, value: Option<NonZeroU32>) -> Result<(), ConfigError> {
    value.map_or(Ok(()), |v| {
        at_most(key, v.get().into(), MAX_QUEUED.into(), "requests waiting")
    })
}

/// Checks a bound on the names of a provider's unconfigured scopes.
pub(super) fn unconfigured(key: &str, value: Option<u32>) -> Result<(), ConfigError> {
    value.map_or(Ok(()), |v| {
        at_most(
            key,
            v.into(),
            MAX_UNCONFIGURED_SCOPES.into(),
            "names of unconfigured scopes",
        )
    })
}

/// Checks a bound on requests in flight.
pub(super) fn in_flight(key: &str, value: Option<NonZeroU32>) -> Result<(), ConfigError> {
    value.map_or(Ok(()), |v| {
        at_most(
            key,
            v.get().into(),
            MAX_IN_FLIGHT.into(),
            "requests in flight",
        )
    })
}

/// Checks what the rates' own check (a pace the clock can keep) leaves out of a scope's
/// limits: its concurrency.
pub(super) fn limits(key: &str, limits: &Limits) -> Result<(), ConfigError> {
    in_flight(
        &format!("{key}.concurrent_requests"),
        limits.concurrent_requests,
    )
}
