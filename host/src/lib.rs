//! sluice: a governor for every outbound API call that AI agents make.
//!
//! Every call an agent makes goes through one host: it waits in a fair queue below the
//! provider's limits (no 429 storms), is retried only as its class allows, and a write is
//! journaled before it is sent and reconciled rather than resent (never a duplicated side
//! effect). What differs per provider lives in sandboxed WebAssembly plugins.
//!
//! ```no_run
//! use sluice::Sluice;
//! use sluice::execute::{Call, Outcome};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // sluice.toml names each provider's plugin, base URL, credentials and limits.
//! let sluice = Sluice::builder().config_file("sluice.toml").build()?;
//! let call = Call::get("openai", "/v1/models").credential("team-key").tenant("acme");
//! if let Outcome::Succeeded { response, .. } = sluice.execute(&call).await {
//!     println!("{}", response.status);
//! }
//! sluice.close()?;
//! # Ok(()) }
//! ```
//!
//! A whole example that runs against a provider on loopback is `examples/embed.rs`
//! (`cargo run -p sluice --example embed`).
//!
//! # Map
//!
//! - [`Sluice`] and [`SluiceBuilder`]: the one way in, from a [`config`] file;
//! - [`execute`]: one call from the queue to a typed outcome ([`execute::Call`]);
//! - [`admission`]: scopes, GCRA buckets, the fair priority queue, tenants and tiers;
//! - [`budget`]: spend budgets per tenant over calendar days and months, priced from the
//!   configuration's price table and kept in the journal;
//! - [`retry`]: budgets per request class, backoff, circuit breakers;
//! - [`task`]: a task's identity, and where its cancellation and budgets live;
//! - [`transport`]: HTTP, TLS, timeouts and proxies;
//! - [`writes`], [`journal`]: safe writes and their SQLite journal, escalations;
//! - [`audit`]: the tamper-evident, signed audit log and its verifier;
//! - [`credentials`]: where each call's secret headers come from, by label;
//! - [`contract`]: the plugin contract's vocabulary as plain types (`sluice:policy@0.3.0`,
//!   `wit/policy.wit`; plugins built against the frozen 0.2.0 and 0.1.0 still load), and
//!   [`contract::ProviderPolicy`], the trait every policy (a plugin, the built-in one, a
//!   native one) answers through: once before a request is queued (`plan-request`) and once
//!   per attempt (`read-response`); [`headers`]: which headers are credentials, and the
//!   header blocks that cross the contract;
//! - [`plugin`] loads and runs plugins under hard limits; [`guard`] puts a plugin behind
//!   quarantine and the built-in [`fallback`] policy; [`reload`] loads each provider's
//!   plugin under its own limits, checks it against its vectors, and swaps in a new version
//!   while calls run ([`Sluice::reload_plugin`]);
//! - [`vectors`] checks a plugin against recorded responses (`sluice plugin test`);
//! - [`clock`]: time, injected; [`input_file`], [`private_fs`]: reading untrusted files and
//!   writing private ones; [`printable`]: how anything sluice did not write is printed.
//! - [`observe`] names the spans, events and metrics a running host reports.
#![warn(missing_docs)]

pub mod admission;
pub mod audit;
pub mod budget;
pub mod clock;
pub mod config;
pub mod contract;
pub mod credentials;
mod embed;
pub mod execute;
pub mod fallback;
pub mod guard;
pub mod headers;
mod hex;
pub mod input_file;
pub mod journal;
pub mod observe;
pub mod plugin;
pub mod printable;
pub mod private_fs;
pub mod reload;
pub mod retry;
pub mod task;
pub mod transport;
pub mod vectors;
pub mod writes;

pub use embed::{BuildError, Sluice, SluiceBuilder};
