//! sluice: a governor for every outbound API call that AI agents make.
//!
//! Every call an agent makes goes through one host: it waits in a fair queue below the
//! provider's limits (no 429 storms), is retried only as its class allows, and a write is
//! journaled before it is sent and reconciled rather than resent (never a duplicated side
//! effect). What differs per provider lives in sandboxed WebAssembly plugins.
//!
//! ```no_run
//! use sluice::{Call, Outcome, Sluice};
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
//! # The front door
//!
//! The crate root is what an embedder uses: [`Sluice`], built by [`SluiceBuilder`] from a
//! configuration file ([`SluiceConfig`]; every key is in `docs/configuration.md`); a
//! [`Call`] sent by [`Sluice::execute`] (or [`Sluice::execute_stream`]) ends in an
//! [`Outcome`]; a [`Write`] sent by [`Sluice::write`] ends in a [`WriteOutcome`], never done
//! twice. The builder's overrides take a [`Clock`], [`Credentials`], a [`ComponentCache`], a
//! [`RuntimeConfig`], a [`Transport`], an [`AuditKey`] or a [`SharedConfig`]; an operator
//! verifies the audit log ([`Sluice::verify_audit`]), cancels a task, reloads a plugin, and
//! reads what waits and why ([`Sluice::scopes`]). [`code_on_huge_pages`] moves the program's
//! own code onto huge pages, as `sluice serve` does at start: fewer address translations
//! missed by each call, when calls come a few hundred a second.
//!
//! # Internals
//!
//! With the `internals` feature, every part is a public module too — `admission` (scopes,
//! GCRA buckets, the fair queue), `execute` and `retry` (the retry engine), `writes` and
//! `journal` (safe writes, escalations), `audit`, `plugin`, `guard`, `reload`, `vectors`,
//! `budget`, `transport`, `config`, `observe` and the small ones below them. The sidecar, the
//! command, the end-to-end tests and the fuzz targets build on them; they are not a stable
//! API. Their floors, and the check that every import points down, are in
//! `docs/architecture.md`.

#![warn(missing_docs)]

// The library's parts, declared once. With the `internals` feature each is a public module
// of the crate root — the sidecar, the command, the end-to-end tests and the fuzz targets
// build on them, and they are not a stable API. Without it (an embedder's build) the root
// imports them privately, and what an embedder sees is the front door re-exported below.
// `parts` is only where they are declared: `#[path = ""]` keeps each one's file where it
// is (`src/admission/`), and a path inside the crate names a part from the root
// (`crate::admission`) either way.
#[path = ""]
mod parts {
    #![cfg_attr(
        not(feature = "internals"),
        allow(dead_code, unused_imports, unreachable_pub)
    )]
    pub mod admission;
    pub mod audit;
    pub mod budget;
    pub mod clock;
    pub mod config;
    pub mod contract;
    pub mod credentials;
    pub mod execute;
    pub mod fallback;
    pub mod guard;
    pub mod headers;
    pub mod hex;
    pub mod huge_text;
    pub mod input_file;
    pub mod journal;
    pub mod near_timer;
    pub mod observe;
    pub mod offload;
    pub mod plugin;
    pub mod printable;
    pub mod private_fs;
    pub mod reload;
    pub mod retry;
    pub mod task;
    pub mod tls;
    pub mod transport;
    pub mod vectors;
    pub mod writes;
}
#[cfg(feature = "internals")]
pub use parts::*;
#[cfg(not(feature = "internals"))]
use parts::*;

mod embed;

// A host is shared by every task of an embedder's runtime: held in an `Arc`, called from any
// thread.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Sluice>();
    shared::<Call>();
    shared::<Write>();
};

// The front door: what an embedder needs to build a host, send calls and writes through it,
// test it, and look at it as an operator.
/// The queue class a call asks for ([`Call::priority`]), ahead of the plugin's advice.
pub use admission::Class as Priority;
pub use admission::shared::{SharedConfig, SharedConfigError};
pub use audit::{
    AuditError, AuditKey, Fingerprint, KeyError, Report as AuditReport, VerifyError, VerifyOptions,
};
pub use clock::{Clock, SystemClock, TokioClock};
pub use config::{ConfigFileError, SluiceConfig};
pub use contract::{PriorityClass, RequestClass, Response};
pub use credentials::{
    CredentialError, CredentialHeaders, CredentialSource, Credentials, Keyring, SigV4Source,
};
pub use embed::{
    BodyError, BuildError, EscalationCase, Escalations, Refusal, Resolved, Sluice, SluiceBuilder,
};
pub use execute::{
    Call, NextAction, NotRecorded, Outcome, PartialStream, Reason, Stream, StreamOutcome, Terminal,
};
pub use huge_text::{HugeText, code_on_huge_pages};
pub use journal::JournalError;
pub use journal::escalations::{Approval, Choice, Decision, Escalation, Kind as EscalationKind};
pub use observe::propagate::{TRACE_HEADERS, TraceContext, install_trace_context};
pub use plugin::{ComponentCache, RuntimeConfig};
pub use reload::{ReloadError, Reloaded};
/// A task's identity ([`Call::task`], [`TaskId::named`]).
pub use task::TaskId;
pub use transport::{
    ExtraRoot, Fault, ProxySetting, Timeouts, Transport, TransportConfig, TransportError,
};
pub use writes::{Step, TaskCancelled, Write, WriteError, WriteOutcome};

/// The parts of a [`SluiceConfig`], as its fields hold them: an embedder reads a file into
/// one ([`SluiceConfig::from_file`]) and may change what it needs before building the host.
pub mod settings {
    pub use crate::admission::Config as AdmissionConfig;
    pub use crate::budget::BudgetConfig;
    pub use crate::config::{
        AuditConfig, DatabaseUrl, JournalConfig, PluginSource, ProviderSetup, ReloadTrigger,
        TelemetryConfig,
    };
    pub use crate::execute::{Generation, Generations};
    pub use crate::plugin::PluginLimits;
    pub use crate::retry::RetryConfig;
}

/// What each [`Reason`] a call ended for holds: why the retry engine stopped, why admission
/// refused or gave up, the breaker that was open, the budget that was spent, the model no
/// price was configured for.
pub mod reason {
    pub use crate::admission::{Refused, Rejection};
    pub use crate::budget::{BudgetSpent, UnpricedModel};
    pub use crate::retry::breaker::Open;
    pub use crate::retry::decide::Stop;
}

/// What an operator reads of a running host ([`Sluice::scopes`]): every quota scope — its
/// limits, what is available now, the provider's last word on what remains, its hold and
/// why calls wait — and the queue by tenant and class.
pub mod operator {
    pub use crate::admission::Dimension;
    pub use crate::admission::snapshot::{
        ConcurrencyStatus, HoldStatus, QueueRow, QuotaOrigin, QuotaStatus, ReportedQuota,
        ScopeKind, ScopeStatus, Snapshot,
    };
}
