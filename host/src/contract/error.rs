//! How a policy call fails: a typed error that names the policy, the function and what went
//! wrong. One type for every [`ProviderPolicy`](super::ProviderPolicy), whether a sandboxed
//! component, a plugin compiled natively or the built-in policy, so the guard treats them
//! alike: a decline falls back for one call, a fault counts toward quarantine.

use std::time::Duration;

/// A plugin call that produced no usable answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("plugin `{plugin}`: `{function}` {failure}")]
pub struct PluginError {
    /// The plugin's name.
    pub plugin: String,
    /// The contract function that was called (`read-response`, `plan-request`, ...).
    pub function: &'static str,
    /// What went wrong.
    pub failure: Failure,
}

/// How a plugin call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The call ran past its deadline (a loop, or work far too slow) and was interrupted.
    #[error("ran past its {} ms deadline and was interrupted", .0.as_millis())]
    Timeout(Duration),
    /// The call recursed (or allocated on the stack) past the wasm stack limit.
    #[error("overflowed the wasm stack (runaway recursion)")]
    StackOverflow,
    /// The plugin asked for more memory than its limit.
    #[error("exceeded its memory limit of {} MiB", .0 >> 20)]
    OutOfMemory(usize),
    /// The plugin trapped: a panic, an `unreachable`, an out-of-bounds access.
    #[error("trapped: {0}")]
    Trap(String),
    /// The plugin returned something the host refuses: over a cap, out of range, or
    /// malformed at the ABI level.
    #[error("returned invalid output: {0}")]
    InvalidOutput(String),
    /// The plugin answered with a `policy-error`: it declined this call.
    #[error("declined: {0}")]
    Declined(String),
}

impl Failure {
    /// Whether this failure counts toward quarantine. A plugin that declines a call is
    /// behaving correctly; everything else is a fault.
    pub fn is_fault(&self) -> bool {
        !matches!(self, Self::Declined(_))
    }
}
