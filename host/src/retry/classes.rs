//! Retry budgets per request class, as data: the caller picks a class, never the numbers.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::backoff::Backoff;
use crate::policy::RequestClass;

/// What one request class may spend on retries.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassBudget {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The most time spent waiting between attempts, in milliseconds.
    pub max_wait_ms: u64,
    /// The statuses worth another attempt.
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
    pub max_delayed_requests: u32,
    /// The most attempts one task may send, over all its calls; `0`: no task budget.
    pub task_max_attempts: u32,
    /// Identical failures in a row on one path that open its circuit breaker.
    pub breaker_threshold: u32,
    /// How long an open breaker refuses calls on its path, in milliseconds.
    pub breaker_open_ms: u64,
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
        }
    }
}

impl RetryConfig {
    /// The budget of `class`; a class the configuration leaves out gets no retries.
    pub fn budget(&self, class: RequestClass) -> ClassBudget {
        let name = match class {
            RequestClass::Read => "read",
            RequestClass::IdempotentWrite => "idempotent_write",
            RequestClass::UncertainWrite => "uncertain_write",
        };
        self.classes.get(name).cloned().unwrap_or(ClassBudget {
            max_attempts: 1,
            max_wait_ms: 0,
            retry_statuses: Vec::new(),
        })
    }

    /// The backoff.
    pub fn backoff(&self) -> Backoff {
        Backoff {
            base: Duration::from_millis(self.backoff_base_ms),
            cap: Duration::from_millis(self.backoff_cap_ms),
        }
    }
}
