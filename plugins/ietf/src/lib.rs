//! The generic plugin for any provider that speaks standard HTTP: `Retry-After` in every
//! form, the older `RateLimit-Limit/Remaining/Reset` fields, and the structured
//! `RateLimit` / `RateLimit-Policy` fields. It is the SDK's defaults, exported as they are:
//! use it for a provider that has no plugin of its own.

use sluice_plugin_sdk::{Description, Plugin};

/// The generic IETF policy.
#[derive(Debug)]
pub struct Ietf;

impl Plugin for Ietf {
    fn describe() -> Description {
        Description {
            name: "ietf".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "any (IETF HTTP semantics)".into(),
            hosts: vec!["*".into()],
            routes: vec!["/*".into()],
            read_routes: vec![],
            error_shape: None,
            refill: None,
        }
    }
}

sluice_plugin_sdk::export_plugin!(Ietf);
