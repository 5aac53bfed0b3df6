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
    /// once (see [`Refill`]). Default: `window`.
    #[serde(default)]
    pub refill: Refill,
}

/// How a provider refills a quota, and so how large a burst is safe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Refill {
    /// The provider may count a whole window's use at once (a fixed or sliding window): the
    /// burst is the part of the limit above the pace, so no window ever sees more than the
    /// limit. Safe for any provider.
    #[default]
    Window,
    /// The provider's quota is a token bucket refilled continuously at the limit's rate, as
    /// Anthropic documents its limits: the burst is the whole paced amount. A bucket that
    /// holds at most the pace and refills at the pace never holds more than the provider's,
    /// which holds the limit and refills at the limit, so nothing it admits is refused; and
    /// a request larger than the window's margin no longer waits for an idle stretch.
    Continuous,
}

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
