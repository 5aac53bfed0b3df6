//! What the handle reports of refusals and holds (see [`crate::observe`]).

#[allow(clippy::wildcard_imports, reason = "the handle's own internals")]
use super::*;

/// Reports a request refused at submit (see [`crate::observe`]).
pub(super) fn refused(request: &Acquire, rejection: &Rejection) {
    let reason = rejection.label();
    tracing::warn!(
        provider = %request.provider,
        credential = %request.credential,
        reason,
        error = %rejection,
        "admission refused a request"
    );
    metrics::counter!(
        crate::observe::CALLS_REFUSED,
        "provider" => request.provider.clone(),
        "reason" => reason,
    )
    .increment(1);
}

/// Reports a hold put on `scope` (see [`crate::observe`]).
pub(super) fn held(scope: &ScopeKey, hold: Duration, reason: &str) {
    tracing::info!(
        %scope,
        hold_ms = u64::try_from(hold.as_millis()).unwrap_or(u64::MAX),
        reason,
        "scope held: nothing charged to it is admitted until the hold ends"
    );
    let provider = match scope {
        ScopeKey::Provider { provider, .. } => provider.to_string(),
        ScopeKey::Tenant(_) => String::new(),
    };
    metrics::counter!(crate::observe::SCOPE_HOLDS, "provider" => provider).increment(1);
}
