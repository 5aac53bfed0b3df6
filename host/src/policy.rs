//! The vocabulary of the plugin contract (`wit/policy.wit`), as host types. Everything the
//! host says to a plugin, and hears back, is one of these.

pub use crate::plugin::bindings::sluice::policy::types::{
    Classification, Cost, Description, Dimension, Observation, Outcome, PolicyError, Priority,
    PriorityClass, ReconcilePlan, Reconciliation, Request, RequestClass, Response, StatusQuery,
    TransportFailure, UncertainWrite, Verdict,
};

/// Request headers that carry credentials. Their values never reach a plugin, a log or an
/// escalation.
pub const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "openai-api-key",
    "x-goog-api-key",
];

/// The placeholder that replaces a credential's value.
pub const REDACTED: &str = "[redacted]";

/// Whether `name` is a credential header.
pub fn is_credential(name: &str) -> bool {
    CREDENTIAL_HEADERS
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name))
}

pub use sluice_plugin_sdk::headers::{InvalidField, encode as encode_fields, pairs as field_pairs};

/// `block` (a WIT `fields` block) with the value of every credential header replaced by
/// [`REDACTED`]; borrowed as is when it holds none.
pub fn redact_credentials(block: &str) -> std::borrow::Cow<'_, str> {
    if !field_pairs(block).any(|(name, _)| is_credential(name)) {
        return std::borrow::Cow::Borrowed(block);
    }
    let mut out = String::with_capacity(block.len());
    for (name, value) in field_pairs(block) {
        out.push_str(name);
        out.push(':');
        out.push_str(if is_credential(name) { REDACTED } else { value });
        out.push('\n');
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_whatever_their_case() {
        let block = encode_fields([
            ("Authorization", "Bearer sk-secret"),
            ("X-Api-Key", "k"),
            ("content-type", "application/json"),
        ])
        .unwrap();
        let redacted = redact_credentials(&block);
        assert_eq!(
            redacted,
            "Authorization:[redacted]\nX-Api-Key:[redacted]\ncontent-type:application/json\n"
        );
        assert!(matches!(
            redact_credentials("a:1\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

/// Where a request belongs and what it will use (the 0.2.0 contract's `request-plan`).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestPlan {
    /// Queue class advice.
    pub class: PriorityClass,
    /// The tenant the request names.
    pub tenant: Option<String>,
    /// An absolute deadline the request carries, ms since the epoch.
    pub deadline_ms: Option<i64>,
    /// Expected use per dimension.
    pub cost: Vec<Cost>,
    /// Narrower quota scopes the request counts in.
    pub scopes: Vec<String>,
}

/// Which part of a response is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponsePart {
    /// The whole answer.
    Complete,
    /// A streamed answer has begun.
    StreamStart,
    /// A streamed answer was delivered whole.
    StreamEnd,
}

/// Everything one attempt's outcome says.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The verdict and delay.
    pub classification: Classification,
    /// Quota figures.
    pub observations: Vec<Observation>,
    /// Actual usage.
    pub usage: Vec<Cost>,
}
