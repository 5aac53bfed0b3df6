//! The Stripe plugin.
//!
//! - Writes carry an `Idempotency-Key`; Stripe returns the stored result for a repeated key
//!   (for 24 hours), so a resend with the *same* key cannot charge twice.
//! - `Stripe-Should-Retry` is Stripe's own advice, passed on.
//! - 429 means two different things: `rate_limit` (slow the account down) and
//!   `lock_timeout` (another request holds a lock on the same object: a conflict on that
//!   resource, not a reason to slow every request down).
//! - 409 `idempotency_key_in_use`: a request with the same key is still in flight.
//! - 402 card errors (`card_declined`, ...) are the customer's problem: client errors,
//!   never retried.
//! - Reconciliation: by operation id when one came back; else a search by the client's
//!   reference in the object's metadata (`metadata['client_reference']`); else, with an
//!   idempotency key, a resend with the same key.

mod classify;
mod reconcile;

use sluice_plugin_sdk::{
    Classification, Description, Outcome, Plugin, PolicyError, ReconcilePlan, Reconciliation,
    Request, Response, UncertainWrite,
};

/// The Stripe policy.
#[derive(Debug)]
pub struct Stripe;

impl Plugin for Stripe {
    fn describe() -> Description {
        Description {
            name: "stripe".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "Stripe".into(),
            hosts: vec!["api.stripe.com".into()],
            routes: vec!["/v1/*".into()],
            read_routes: vec![],
            error_shape: Some(sluice_plugin_sdk::ErrorShape::Stripe),
            refill: None,
        }
    }

    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(classify::classify(req, outcome))
    }

    fn reconcile(write: &UncertainWrite) -> Result<ReconcilePlan, PolicyError> {
        reconcile::plan(write)
    }

    fn read_reconciliation(
        write: &UncertainWrite,
        resp: &Response,
    ) -> Result<Reconciliation, PolicyError> {
        Ok(reconcile::read(write, resp))
    }
}

sluice_plugin_sdk::export_plugin!(Stripe);
