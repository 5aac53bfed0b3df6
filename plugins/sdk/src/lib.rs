//! Writing a sluice provider plugin.
//!
//! A plugin is a WebAssembly component (target `wasm32-wasip2`) that exports the
//! `sluice:policy/policy@0.5.0` interface. This crate gives a plugin author four things:
//!
//! - [`Plugin`]: a trait of small hooks (`classify`, `parse_quota`, `usage`, `priority`,
//!   `estimate_cost`, `scopes`, ...), each with a sensible default, composed into the
//!   contract's `plan-request` and `read-response`, so a plugin overrides only what its
//!   provider does differently; and [`export_plugin!`], which turns an implementation into
//!   the component's exports;
//! - parsers for what providers send: [`headers`](mod@headers) (case, repetition), [`retry_after`],
//!   [`ratelimit`] (the IETF fields), [`time`] (HTTP-dates, RFC 3339, Go durations),
//!   [`json`] (error codes in truncated bodies), [`google`] (Google-style error bodies: the
//!   retry delay and the spent quota), [`aws`] (AWS errors: the type in `x-amzn-ErrorType`),
//!   [`midnight`] (quotas that reset at a provider's local midnight, daylight saving time
//!   included), [`sse`] (server-sent events in the cut body of a stream's end) and
//!   [`eventstream`] (AWS's binary event-stream messages, checked by their CRC-32s);
//! - [`generic`]: the RFC reading of a response, shared with the host's built-in fallback;
//! - [`test`](mod@test): a request or a response in one line, for a plugin's unit tests.
//!
//! The parsers are plain Rust and work on any target: test a plugin's logic natively with
//! `cargo test`, then check it against recorded responses with `sluice plugin test`.
//! `sluice plugin new NAME` writes a plugin crate that does both.
//!
//! The crate stands alone: the contract's WIT is vendored in its `wit/` directory, so a
//! plugin outside the sluice repository depends on it like on any other crate.
//!
//! ```
//! use sluice_plugin_sdk::{Description, Plugin};
//!
//! struct Acme;
//!
//! impl Plugin for Acme {
//!     fn describe() -> Description {
//!         Description {
//!             name: "acme".into(),
//!             version: "0.1.0".into(),
//!             provider: "Acme".into(),
//!             hosts: vec!["api.acme.example".into()],
//!             routes: vec!["/v1/*".into()],
//!             read_routes: vec![],
//!             error_shape: None,
//!             refill: None,
//!         }
//!     }
//!     // Every other function keeps its generic default.
//! }
//!
//! sluice_plugin_sdk::export_plugin!(Acme);
//! # fn main() {}
//! ```
#![warn(missing_docs)]

pub mod arena;
pub mod aws;
pub mod billing;
pub mod digest;
pub mod eventstream;
pub mod generic;
pub mod google;
pub mod headers;
pub mod json;
pub mod media;
pub mod midnight;
pub mod ratelimit;
pub mod retry_after;
pub mod sse;
pub mod time;

#[cfg(feature = "guest")]
mod guest;
#[cfg(feature = "guest")]
pub use guest::*;

/// The crate README's example, compiled as a doctest so it stays true.
#[cfg(all(doctest, feature = "guest"))]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
