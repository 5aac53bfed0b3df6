//! Retry budgets per request class, as data: the caller picks a class, never the numbers.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::backoff::Backoff;
use crate::contract::RequestClass;

/// The longest duration the retry configuration can name, in milliseconds: a day.
pub const MAX_DURATION_MS: u64 = 24 * 3_600_000;
/// The most attempts a class may make for one request.
pub const MAX_ATTEMPTS: u32 = 100;
/// The largest count the configuration takes (retries waiting, attempts per task, failures
/// before a breaker opens).
pub const MAX_COUNT: u32 = 1_000_000;

/// What one request class may spend on retries.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassBudget {
    /// Attempts in all, the first included (1 to [`MAX_ATTEMPTS`]).
    pub max_attempts: u32,
    /// The most time spent waiting between attempts, in milliseconds (at most
    /// [`MAX_DURATION_MS`]).
    pub max_wait_ms: u64,
    /// The statuses worth another attempt (each from 100 to 599).
    pub retry_statuses: Vec<u16>,
}

impl ClassBudget {
    /// The wait budget.
    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.max_wait_ms)
    }
}

/// The retry configuration (the `[retry]` table).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Budgets by class: `read`, `idempotent_write`, `uncertain_write`.
    pub classes: BTreeMap<String, ClassBudget>,
    /// The backoff's first window, in milliseconds.
    pub backoff_base_ms: u64,
    /// The backoff's largest window, in milliseconds.
    pub backoff_cap_ms: u64,
    /// The most calls of one scope waiting to retry at once; beyond it a failed call ends.
    /// The scope's tenants share them: a tenant holding fewer than its share (this bound over
    /// the tenants holding places) is never refused for another's sake.
    pub max_delayed_requests: u32,
    /// The most attempts one task may send, over all its calls; `0`: no task budget.
    pub task_max_attempts: u32,
    /// Identical failures in a row on one path that open its circuit breaker.
    pub breaker_threshold: u32,
    /// How long an open breaker refuses calls on its path, in milliseconds.
    pub breaker_open_ms: u64,
    /// How long a spent quota (a billing or daily quota, `quota-exhausted`) holds its scope
    /// when the provider does not say when it resets, in milliseconds.
    pub quota_exhausted_hold_ms: u64,
    /// Whether a generation (a read charged tokens) that was sent and got no answer — its
    /// answer timed out or its connection broke — is sent once more. The provider may have
    /// generated it and billed it, so it is a paid, uncertain read: resent at most once, and
    /// only when this is `true`. Default: `false`.
    pub resend_unanswered_generation: bool,
}

impl Default for RetryConfig {
    fn default() -> Self {
        let class = |attempts, wait_s: u64, statuses: &[u16]| ClassBudget {
            max_attempts: attempts,
            max_wait_ms: wait_s * 1_000,
            retry_statuses: statuses.to_vec(),
        };
        Self {
            classes: BTreeMap::from([
                (
                    "read".into(),
                    class(4, 90, &[408, 429, 500, 502, 503, 504, 529]),
                ),
                (
                    "idempotent_write".into(),
                    class(3, 120, &[408, 409, 429, 500, 502, 503, 504, 529]),
                ),
                ("uncertain_write".into(), class(1, 0, &[])),
            ]),
            backoff_base_ms: 500,
            backoff_cap_ms: 30_000,
            max_delayed_requests: 64,
            task_max_attempts: 0,
            breaker_threshold: 5,
            breaker_open_ms: 30_000,
            quota_exhausted_hold_ms: 15 * 60_000,
            resend_unanswered_generation: false,
        }
    }
}

/// A retry configuration that does not parse or does not make sense.
#[derive(Debug, thiserror::Error)]
#[error("retry configuration: {0}")]
pub struct RetryConfigError(String);

impl RetryConfig {
    /// Parses a retry configuration: the keys of [`RetryConfig`], with `[classes.<name>]`
    /// tables; what is left out keeps its default. Durations are at most a day
    /// (`MAX_DURATION_MS`), attempts per request at most `MAX_ATTEMPTS`, other counts at
    /// most `MAX_COUNT`, and the backoff's first window is at most its largest.
    ///
    #[cfg_attr(feature = "internals", doc = "```")]
    #[cfg_attr(not(feature = "internals"), doc = "```ignore")]
    /// let c = sluice::retry::RetryConfig::from_toml(
    ///     "max_delayed_requests = 8\n[classes.read]\nmax_attempts = 2\nmax_wait_ms = 5000\nretry_statuses = [429, 503]\n",
    /// )?;
    /// assert_eq!(c.budget(sluice::contract::RequestClass::Read).max_attempts, 2);
    /// assert_eq!(c.budget(sluice::contract::RequestClass::UncertainWrite).max_attempts, 1);
    /// # Ok::<(), sluice::retry::RetryConfigError>(())
    /// ```
    ///
    /// # Errors
    /// `RetryConfigError` naming the key: unknown keys, wrong types, a class other than
    /// `read`, `idempotent_write` and `uncertain_write`, zero attempts, an `uncertain_write`
    /// allowed more than one attempt (its outcome must be reconciled, never resent), or a
    /// number out of its range (the error gives the range).
    pub fn from_toml(text: &str) -> Result<Self, RetryConfigError> {
        let given: Self = toml::from_str(text).map_err(|e| RetryConfigError(e.to_string()))?;
        Self::validated(given)
    }

    /// As [`RetryConfig::from_toml`], from a parsed table (the `[retry]` table of the
    /// configuration file); an error names the key under the table.
    ///
    /// # Errors
    /// As [`RetryConfig::from_toml`].
    pub fn from_table(table: toml::Table) -> Result<Self, RetryConfigError> {
        let given: Self = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| RetryConfigError(format!("`{}`: {}", e.path(), e.inner())))?;
        Self::validated(given)
    }

    /// `given` over the defaults, checked.
    fn validated(given: Self) -> Result<Self, RetryConfigError> {
        let mut config = Self::default();
        for (name, budget) in &given.classes {
            if !["read", "idempotent_write", "uncertain_write"].contains(&name.as_str()) {
                return Err(RetryConfigError(format!(
                    "`classes.{name}`: the classes are read, idempotent_write and uncertain_write"
                )));
            }
            if budget.max_attempts == 0 {
                return Err(RetryConfigError(format!(
                    "`classes.{name}.max_attempts`: at least 1 (the first attempt counts)"
                )));
            }
            if name == "uncertain_write" && budget.max_attempts > 1 {
                return Err(RetryConfigError(
                    "`classes.uncertain_write.max_attempts`: must be 1; a write that may have \
                     happened is reconciled, never resent"
                        .into(),
                ));
            }
            let key = |k: &str| format!("classes.{name}.{k}");
            at_most(
                &key("max_attempts"),
                budget.max_attempts.into(),
                MAX_ATTEMPTS.into(),
            )?;
            at_most(&key("max_wait_ms"), budget.max_wait_ms, MAX_DURATION_MS)?;
            if let Some(s) = budget
                .retry_statuses
                .iter()
                .find(|s| !(100..=599).contains(*s))
            {
                return Err(RetryConfigError(format!(
                    "`{}`: {s} is not an HTTP status (100 to 599)",
                    key("retry_statuses")
                )));
            }
        }
        given.check_ranges()?;
        let classes = std::mem::take(&mut config.classes);
        config = Self {
            classes: classes.into_iter().chain(given.classes.clone()).collect(),
            ..given
        };
        Ok(config)
    }

    /// Checks the numbers outside the classes.
    fn check_ranges(&self) -> Result<(), RetryConfigError> {
        for (key, ms) in [
            ("backoff_base_ms", self.backoff_base_ms),
            ("backoff_cap_ms", self.backoff_cap_ms),
            ("breaker_open_ms", self.breaker_open_ms),
            ("quota_exhausted_hold_ms", self.quota_exhausted_hold_ms),
        ] {
            at_most(key, ms, MAX_DURATION_MS)?;
        }
        for (key, n) in [
            ("max_delayed_requests", self.max_delayed_requests),
            ("task_max_attempts", self.task_max_attempts),
            ("breaker_threshold", self.breaker_threshold),
        ] {
            at_most(key, n.into(), MAX_COUNT.into())?;
        }
        if self.backoff_base_ms > self.backoff_cap_ms {
            return Err(RetryConfigError(format!(
                "`backoff_base_ms`: the first window ({} ms) is longer than the largest, \
                 `backoff_cap_ms` ({} ms)",
                self.backoff_base_ms, self.backoff_cap_ms
            )));
        }
        Ok(())
    }

    /// The budget of `class`; a class the configuration leaves out gets no retries.
    pub fn budget(&self, class: RequestClass) -> ClassBudget {
        self.budget_of(class).clone()
    }

    /// The budget of `class`, as [`RetryConfig::budget`], without a copy.
    pub fn budget_of(&self, class: RequestClass) -> &ClassBudget {
        /// A class the configuration leaves out: one attempt.
        static NO_RETRIES: ClassBudget = ClassBudget {
            max_attempts: 1,
            max_wait_ms: 0,
            retry_statuses: Vec::new(),
        };
        self.classes.get(class_name(class)).unwrap_or(&NO_RETRIES)
    }

    /// The backoff.
    pub fn backoff(&self) -> Backoff {
        Backoff {
            base: Duration::from_millis(self.backoff_base_ms),
            cap: Duration::from_millis(self.backoff_cap_ms),
        }
    }
}

/// Checks that `value` at `key` is at most `max`.
fn at_most(key: &str, value: u64, max: u64) -> Result<(), RetryConfigError> {
    if value <= max {
        return Ok(());
    }
    Err(RetryConfigError(format!(
        "`{key}`: {value} is out of range: at most {max}"
    )))
}

/// A request class's name in configuration and in the journal.
pub fn class_name(class: RequestClass) -> &'static str {
    match class {
        RequestClass::Read => "read",
        RequestClass::IdempotentWrite => "idempotent_write",
        RequestClass::UncertainWrite => "uncertain_write",
    }
}

/// The request class named `name` (see [`class_name`]).
pub fn class_named(name: &str) -> Option<RequestClass> {
    [
        RequestClass::Read,
        RequestClass::IdempotentWrite,
        RequestClass::UncertainWrite,
    ]
    .into_iter()
    .find(|c| class_name(*c) == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_retry_configurations_name_the_key() {
        for (text, key) in [
            (
                "[classes.write]\nmax_attempts = 2\nmax_wait_ms = 1\nretry_statuses = []\n",
                "classes.write",
            ),
            (
                "[classes.read]\nmax_attempts = 0\nmax_wait_ms = 1\nretry_statuses = []\n",
                "classes.read.max_attempts",
            ),
            (
                "[classes.uncertain_write]\nmax_attempts = 2\nmax_wait_ms = 1\nretry_statuses = []\n",
                "classes.uncertain_write.max_attempts",
            ),
            ("max_delayed = 3\n", "max_delayed"),
            // Issue: numbers no one means were accepted.
            (
                "[classes.read]\nmax_attempts = 2\nmax_wait_ms = 18446744073709551615\nretry_statuses = []\n",
                "`classes.read.max_wait_ms`: 18446744073709551615 is out of range: at most 86400000",
            ),
            (
                "[classes.read]\nmax_attempts = 4294967295\nmax_wait_ms = 1\nretry_statuses = []\n",
                "`classes.read.max_attempts`: 4294967295 is out of range: at most 100",
            ),
            (
                "[classes.read]\nmax_attempts = 2\nmax_wait_ms = 1\nretry_statuses = [429, 0]\n",
                "`classes.read.retry_statuses`: 0 is not an HTTP status",
            ),
            (
                "backoff_cap_ms = 18446744073709551615\n",
                "`backoff_cap_ms`: 18446744073709551615",
            ),
            ("breaker_open_ms = 86400001\n", "`breaker_open_ms`"),
            (
                "quota_exhausted_hold_ms = 86400001\n",
                "`quota_exhausted_hold_ms`",
            ),
            (
                "max_delayed_requests = 4294967295\n",
                "`max_delayed_requests`",
            ),
            ("task_max_attempts = 4294967295\n", "`task_max_attempts`"),
            ("breaker_threshold = 4294967295\n", "`breaker_threshold`"),
            (
                "backoff_base_ms = 60000\n",
                "`backoff_base_ms`: the first window",
            ),
        ] {
            let e = RetryConfig::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
        assert_eq!(RetryConfig::from_toml("").unwrap(), RetryConfig::default());
        RetryConfig::from_toml(
            "backoff_cap_ms = 86400000\nbreaker_threshold = 1000000\n\
             [classes.read]\nmax_attempts = 100\nmax_wait_ms = 86400000\nretry_statuses = [100, 599]\n",
        )
        .unwrap();
    }
}
