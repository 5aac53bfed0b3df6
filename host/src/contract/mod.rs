//! The contract's vocabulary (`wit/policy.wit`, `sluice:policy@0.5.0`) as plain Rust types,
//! and the [`ProviderPolicy`] trait that speaks it.
//!
//! Everything the host says to a provider policy, and hears back, is one of these types.
//! They are written by hand, field for field and case for case as the WIT, rather than
//! taken from the generated bindings, so that the host's logic — admission, the retry
//! engine, safe writes, the vectors, the built-in fallback — depends on the contract and
//! not on the runtime that carries it: it builds and tests without wasmtime in the picture.
//! The conversions to and from the bindings of each contract version live at the plugin's
//! edge (`plugin/convert.rs` for 0.5.0; `plugin/v4.rs`, `plugin/v3.rs`, `plugin/v2.rs` and
//! `plugin/v1.rs` for the frozen 0.4.0, 0.3.0, 0.2.0 and 0.1.0).

mod describe;
mod error;
mod plan;
mod policy;
mod reading;
mod request;
mod writes;

pub use describe::{Description, ErrorShape, PolicyError, Refill, route_matches};
pub use error::{Failure, PluginError};
pub use plan::{PriorityClass, RequestPlan};
pub use policy::ProviderPolicy;
pub use reading::{
    Classification, Cost, LimitedScope, Observation, Reading, ReportedDimension, Verdict,
};
pub use request::{
    BODY_PREFIX, BodyDigest, DEFAULT_MAX_OUTPUT, MediaKind, MediaPart, Request, RequestClass,
    Response, ResponsePart, TransportFailure, WireOutcome,
};
pub use writes::{ReconcilePlan, Reconciliation, StatusQuery, UncertainWrite};
