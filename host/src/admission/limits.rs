//! Configured limits: the quotas of one scope (or of one tenant tier), as written in TOML.

use std::num::{NonZeroU32, NonZeroU64};
use std::time::Duration;

use serde::Deserialize;

use super::usage::Dimension;

/// A minute.
pub const MINUTE: Duration = Duration::from_secs(60);
/// A day.
pub const DAY: Duration = Duration::from_secs(24 * 3600);

/// The limits of one quota scope, each optional. Keys are the TOML keys.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Requests per minute.
    pub requests_per_minute: Option<NonZeroU64>,
    /// Tokens (input and output together) per minute.
    pub tokens_per_minute: Option<NonZeroU64>,
    /// Input tokens per minute.
    pub input_tokens_per_minute: Option<NonZeroU64>,
    /// Output tokens per minute.
    pub output_tokens_per_minute: Option<NonZeroU64>,
    /// Requests per day.
    pub requests_per_day: Option<NonZeroU64>,
    /// Tokens per day.
    pub tokens_per_day: Option<NonZeroU64>,
    /// Requests in flight at once (at most `MAX_IN_FLIGHT`, a million).
    pub concurrent_requests: Option<NonZeroU32>,
    /// How the provider refills these quotas, which decides how much of a quota may go at
    /// once (see [`Refill`]). Default: what the provider's plugin declares, else `window`.
    #[serde(default)]
    pub refill: Option<Refill>,
}

pub use crate::contract::Refill;

impl Limits {
    /// Every rate quota that is set: what it counts, its window, its limit.
    pub fn quotas(&self) -> impl Iterator<Item = (Dimension, Duration, NonZeroU64)> + '_ {
        [
            (Dimension::Requests, MINUTE, self.requests_per_minute),
            (Dimension::Tokens, MINUTE, self.tokens_per_minute),
            (Dimension::InputTokens, MINUTE, self.input_tokens_per_minute),
            (
                Dimension::OutputTokens,
                MINUTE,
                self.output_tokens_per_minute,
            ),
            (Dimension::Requests, DAY, self.requests_per_day),
            (Dimension::Tokens, DAY, self.tokens_per_day),
        ]
        .into_iter()
        .filter_map(|(d, w, l)| l.map(|l| (d, w, l)))
    }

    /// The TOML key of the rate quota for `dimension` per `window`, for messages.
    pub fn key(dimension: Dimension, window: Duration) -> String {
        let per = if window == DAY {
            "day".to_owned()
        } else if window == MINUTE {
            "minute".to_owned()
        } else {
            format!("{}ms", window.as_millis())
        };
        format!("{dimension}_per_{per}")
    }

    /// Whether no limit at all is set.
    pub fn is_empty(&self) -> bool {
        self.quotas().next().is_none() && self.concurrent_requests.is_none()
    }
}
