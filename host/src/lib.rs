//! sluice: a governor for every outbound API call that AI agents make.
//!
//! The host owns quota buckets, the outbound queue and the retry loop. What differs per
//! provider lives in sandboxed WebAssembly plugins behind the versioned WIT contract
//! `sluice:policy@0.2.0` (`wit/policy.wit`; plugins built against the frozen 0.1.0 still
//! load), which the host calls once before a request is queued (`plan-request`) and once per
//! attempt (`read-response`):
//!
//! - [`plugin`] loads and runs plugins under hard limits;
//! - [`guard`] puts a plugin behind quarantine and the built-in [`fallback`] policy, which
//!   is what the rest of the host calls;
//! - [`vectors`] checks a plugin against recorded responses (`sluice plugin test`);
//! - [`printable`] is how anything sluice did not write (names, keys, messages) is printed;
//! - [`observe`] names the spans, events and metrics a running host reports.
#![warn(missing_docs)]

pub mod admission;
pub mod audit;
pub mod clock;
pub mod execute;
pub mod fallback;
pub mod guard;
mod hex;
pub mod input_file;
pub mod journal;
pub mod observe;
pub mod plugin;
pub mod policy;
pub mod printable;
pub mod private_fs;
pub mod retry;
pub mod transport;
pub mod vectors;
pub mod writes;
