//! The vocabulary of the plugin contract (`wit/policy.wit`), as host types. Everything the
//! host says to a plugin, and hears back, is one of these.

pub use crate::plugin::bindings::sluice::policy::types::{
    Classification, Cost, Description, Dimension, Header, Observation, Outcome, PolicyError,
    Priority, PriorityClass, ReconcilePlan, Reconciliation, Request, RequestClass, Response,
    StatusQuery, TransportFailure, UncertainWrite, Verdict,
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

/// Replaces the value of every credential header with [`REDACTED`].
pub fn redact_credentials(headers: &mut [Header]) {
    for h in headers.iter_mut().filter(|h| is_credential(&h.name)) {
        REDACTED.clone_into(&mut h.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_whatever_their_case() {
        let mut h = vec![
            Header {
                name: "Authorization".into(),
                value: "Bearer sk-secret".into(),
            },
            Header {
                name: "X-Api-Key".into(),
                value: "k".into(),
            },
            Header {
                name: "content-type".into(),
                value: "application/json".into(),
            },
        ];
        redact_credentials(&mut h);
        assert_eq!(h[0].value, REDACTED);
        assert_eq!(h[1].value, REDACTED);
        assert_eq!(h[2].value, "application/json");
    }
}
