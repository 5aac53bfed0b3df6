//! What a plugin reads from one attempt's outcome: the verdict and the delay asked for, the
//! quota figures the answer reports, and what the request used.

/// The kind of outcome, which decides what the host does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The call did what was asked.
    Success,
    /// The provider asks the client to slow down; the scope's pace must drop and the scope
    /// waits (for `retry_after_ms`, when given) before any other attempt.
    RateLimited,
    /// A quota that resets on a billing or daily period is used up: not a short wait.
    QuotaExhausted,
    /// The provider is overloaded (for example 503 or 529). Worth a bounded retry; it does
    /// not say this client sent too much, so the scope's pace is kept.
    Overloaded,
    /// A transient failure (408, 500, 502, 504, a connection failure before sending) worth
    /// a bounded retry.
    Transient,
    /// A conflict with the resource's state (409): duplicate, version conflict or lock.
    Conflict,
    /// The request is wrong (400, 404, 422, a declined card...). Never retried.
    ClientError,
    /// Credentials are missing, invalid or lack permission (401, 403). Never retried.
    AuthError,
    /// The provider may or may not have acted: a write must be reconciled, never resent.
    OutcomeUnknown,
}

/// A plugin's reading of one attempt's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// What kind of outcome this is.
    pub verdict: Verdict,
    /// The delay the provider asks for before the next attempt, in milliseconds, when it
    /// asks for one (`Retry-After`, `retry-after-ms`, a reset header on a 429...).
    pub retry_after_ms: Option<u64>,
    /// The provider's error code, normalized to lower snake case (for example
    /// `rate_limit_exceeded`, `insufficient_quota`, `idempotency_key_in_use`).
    pub error_code: Option<String>,
    /// The provider's own advice on retrying, when it gives one (`x-should-retry`,
    /// `Stripe-Should-Retry`). Advice only: the host's budgets still decide.
    pub should_retry: Option<bool>,
    /// The quota a `rate-limited` or `quota-exhausted` verdict is about, when the
    /// observations alone do not say; the host holds it. `None`: the scopes of the
    /// observations that say a quota is spent, else of every observation, else the
    /// credential's own bucket.
    pub scope: Option<LimitedScope>,
}

/// Which quota a limit is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LimitedScope {
    /// The credential's own bucket: the whole key (a spent billing balance).
    Credential,
    /// A narrower scope, named as observations and plans name it (`model:gpt-4o`).
    Named(String),
}

/// A dimension a quota is counted in, as a plugin reports it (an [`Observation`]'s, a
/// [`Cost`]'s): wider than the host's rate dimensions
/// ([`admission::Dimension`](crate::admission::Dimension)), which it maps to where it can.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReportedDimension {
    /// Requests.
    Requests,
    /// Tokens of any kind (input and output together).
    Tokens,
    /// Input (prompt) tokens.
    InputTokens,
    /// Output (completion) tokens.
    OutputTokens,
    /// Requests in flight at the same time.
    Concurrency,
    /// A provider-specific dimension, named in lower kebab case.
    Other(String),
}

/// One figure about one quota, as a response reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The provider's name for the quota bucket when it is narrower or other than the
    /// credential's (for example GitHub's `core` or `search` resource, or a model). `None`:
    /// the bucket of the credential the request was sent with.
    pub scope: Option<String>,
    /// What the quota counts.
    pub dimension: ReportedDimension,
    /// The quota's size per window.
    pub limit: Option<u64>,
    /// How much of the quota is left in the current window.
    pub remaining: Option<u64>,
    /// How much of the quota the current window has used, when reported directly.
    pub used: Option<u64>,
    /// Milliseconds from the request's `now_ms` until the window resets (remaining returns
    /// to limit).
    pub reset_after_ms: Option<u64>,
    /// The length of the quota's window in milliseconds, when the provider states it.
    pub window_ms: Option<u64>,
    /// Where the figures came from: the header names (or `body`) they were read from.
    pub source: String,
}

/// An amount of one dimension: what a request is expected to use (in a plan), or what it
/// used (in a reading).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cost {
    /// What is being counted.
    pub dimension: ReportedDimension,
    /// The amount.
    pub amount: u64,
}

/// Everything one attempt's outcome says, read in one crossing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The verdict, the delay asked for and the provider's error code.
    pub classification: Classification,
    /// The quota figures the answer reports (limits, remaining, resets). Empty when it
    /// reports none, and for a stream's end unless the stream's body reports some.
    pub observations: Vec<Observation>,
    /// What the request actually used, per dimension, as the provider reports it. The host
    /// replaces its estimate of each dimension named here with the reported amount; a
    /// dimension not named keeps its estimate, and an empty list keeps the whole estimate.
    pub usage: Vec<Cost>,
}
