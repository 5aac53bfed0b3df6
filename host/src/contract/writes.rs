//! How a write whose outcome is unknown gets settled: the plugin names a status query (or
//! says a resend with the same key is safe), then reads the query's answer.

/// A write whose outcome is unknown: sent, with no trustworthy answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncertainWrite {
    /// The write's HTTP method.
    pub method: String,
    /// The write's absolute URL.
    pub url: String,
    /// The idempotency key sent with every attempt of the write, when there is one.
    pub idempotency_key: Option<String>,
    /// The client's own reference for the logical action (stored in provider metadata when
    /// the provider allows), when there is one.
    pub client_reference: Option<String>,
    /// The provider's operation id, when one came back before the outcome became unknown.
    pub operation_id: Option<String>,
    /// The host's wall clock: milliseconds since the Unix epoch, UTC.
    pub now_ms: i64,
}

/// A request the host sends to learn whether an uncertain write happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusQuery {
    /// The query's HTTP method (normally `GET`).
    pub method: String,
    /// The query's absolute URL.
    pub url: String,
    /// Headers to add, as one `fields` block (the host adds credentials itself).
    pub headers: String,
    /// The query's body, usually empty.
    pub body: Vec<u8>,
}

/// How an uncertain write can be settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReconcilePlan {
    /// Send this status query and pass its response to `read-reconciliation`.
    Query(StatusQuery),
    /// The provider suppresses duplicates of this write by its idempotency key, so a resend
    /// with the same key is safe and returns the original result.
    ResendSameKey,
    /// The plugin cannot check this write; the reason is shown to the operator.
    Unsupported(String),
}

/// What a status query revealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciliation {
    /// The write happened; the provider's operation id when the answer names one.
    Found(Option<String>),
    /// The provider has no such operation: the write did not happen.
    NotFound,
    /// The answer does not settle it; the reason is shown to the operator.
    Unknown(String),
}
