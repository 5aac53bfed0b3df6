//! What a plugin says about a request before it is queued.

use super::Cost;

/// How urgently a request should be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PriorityClass {
    /// A person or an agent in a live conversation waits on it.
    Interactive,
    /// Ordinary agent work.
    Standard,
    /// Batch or maintenance work that may wait.
    Background,
}

/// Where a request belongs and what it will use, read once before it is queued. The
/// caller's own settings and the host's configuration take precedence over each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPlan {
    /// The queue class the plugin advises.
    pub class: PriorityClass,
    /// The tenant the request names for fair sharing (a `user` field, an organization
    /// header), when it names one.
    pub tenant: Option<String>,
    /// An absolute deadline the request carries, in milliseconds since the Unix epoch.
    pub deadline_ms: Option<i64>,
    /// What the request is expected to use, per dimension (for example one request, and
    /// prompt tokens plus `max_tokens`). Charged when the request is admitted and corrected
    /// with [`Reading::usage`](super::Reading::usage) when the provider reports the actual use.
    pub cost: Vec<Cost>,
    /// The narrower quota scopes the request counts in besides its credential's own bucket,
    /// for example `model:gpt-4o` or GitHub's `search`: the same names the plugin's
    /// observations carry in [`Observation::scope`](super::Observation::scope). Empty: none.
    pub scopes: Vec<String>,
}
