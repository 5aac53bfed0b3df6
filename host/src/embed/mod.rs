//! One way in: [`Sluice`], a whole host built from one configuration file.
//!
//! A host is a dozen parts — the plugin runtime, a guarded policy per provider, admission,
//! the transport, the executor, the journal, the audit log and its key, the write engine and
//! the credentials — that must agree on one clock and one state directory. The
//! [`SluiceBuilder`] wires them from a [`SluiceConfig`](crate::config::SluiceConfig), with
//! defaults that just work (tokio's clock, the user's component cache, a seed from the OS,
//! the user's state directory) and overrides for tests (a clock, a seed, a transport).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use sluice::{Call, Outcome, Sluice};
//!
//! let sluice = Sluice::builder().config_file("sluice.toml").build()?;
//! let call = Call::get("openai", "/v1/models").credential("team-key").tenant("acme");
//! match sluice.execute(&call).await {
//!     Outcome::Succeeded { response, .. } => println!("{}", response.status),
//!     Outcome::Ended(ended) => eprintln!("{}", ended.reason),
//! }
//! sluice.close()?;
//! # Ok(()) }
//! ```

mod builder;
mod error;
mod escalations;
mod group;
mod state;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use builder::SluiceBuilder;
pub use error::BuildError;
pub use escalations::{BodyError, EscalationCase, Escalations, Refusal, Resolved};

#[cfg(feature = "internals")]
use crate::admission::Admission;
use crate::audit::{self, AuditError, AuditLog, Fingerprint, Report, VerifyError, VerifyOptions};
use crate::clock::Clock;
use crate::execute::{Call, Executor, Outcome, StreamOutcome};
use crate::journal::Journal;
use crate::reload::{PluginSet, ReloadError, Reloaded};
use crate::writes::{TaskCancelled, Write, WriteError, WriteOutcome, Writes};

/// A whole host: admission, plugins, retries, safe writes and the audit log, on one clock.
#[derive(Debug)]
pub struct Sluice {
    executor: Arc<Executor>,
    /// Every provider's plugin, and what reloading one takes.
    plugins: Arc<PluginSet>,
    writes: Arc<Writes>,
    /// In a group that shares its journal: the task that takes over the writes of hosts
    /// that are gone (see `group`).
    group: Option<tokio::task::JoinHandle<()>>,
    /// Dropped with the host: ends the timer kept near on its runtime (see `near_timer`).
    _near_timer: tokio::sync::oneshot::Sender<()>,
    journal: Arc<Journal>,
    audit: Arc<AuditLog>,
    clock: Arc<dyn Clock>,
    /// Each provider's base URL, for calls with a relative URL.
    base_urls: BTreeMap<String, String>,
}

impl Drop for Sluice {
    fn drop(&mut self) {
        if let Some(task) = &self.group {
            task.abort();
        }
    }
}

impl Sluice {
    /// A builder: give it a configuration ([`SluiceBuilder::config_file`]), then
    /// [`SluiceBuilder::build`].
    pub fn builder() -> SluiceBuilder {
        SluiceBuilder::default()
    }

    /// Runs `call` (a read, or a write the caller reconciles itself) to its outcome. A URL
    /// that starts with `/` is taken from the provider's `base_url`.
    pub async fn execute(&self, call: &Call) -> Outcome {
        // The executor resolves a relative URL itself (`Executor::with_base_urls`): the call
        // is neither copied nor held twice while it waits.
        self.executor.execute(call).await
    }

    /// Runs `call` and hands its answer back as a stream once it begins (see
    /// `Executor::execute_stream`).
    pub async fn execute_stream(&self, call: &Call) -> StreamOutcome {
        self.executor.execute_stream(call).await
    }

    /// Writes `write` safely: journaled before it is sent, sent with one idempotency key,
    /// and reconciled rather than resent when its outcome is uncertain (see `Writes`).
    ///
    /// # Errors
    /// [`WriteError`]: the journal or the audit log failed; nothing was sent unrecorded.
    pub async fn write(&self, write: &Write) -> Result<WriteOutcome, WriteError> {
        match self.resolved(&write.call) {
            Some(call) => {
                let write = Write {
                    call,
                    ..write.clone()
                };
                self.writes.write(&write).await
            }
            None => self.writes.write(write).await,
        }
    }

    /// Carries on the writes a previous run left unfinished (call it at start): what sent
    /// nothing is sent, what may have happened is settled by asking the provider, never
    /// resent blindly (see `Writes::recover`).
    ///
    /// # Errors
    /// [`WriteError`]: the journal or the audit log failed.
    pub async fn recover(&self) -> Result<Vec<WriteOutcome>, WriteError> {
        self.writes.recover().await
    }

    /// The escalations door: list, show, see a body, resolve and carry out, through this
    /// host (see [`Escalations`]).
    pub fn escalations(&self) -> Escalations<'_> {
        Escalations {
            journal: &self.journal,
            writes: &self.writes,
            clock: &*self.clock,
        }
    }

    /// Cancels `task`: its waiting calls and unsent writes (see `Writes::cancel_task`).
    ///
    /// # Errors
    /// [`WriteError`]: the journal or the audit log failed.
    pub fn cancel_task(&self, task: &str) -> Result<TaskCancelled, WriteError> {
        self.writes.cancel_task(task)
    }

    /// Verifies the audit log as `sluice audit verify` does: with the public half of the
    /// key that signs it (the state directory's `audit.pub`, or the configured key's), held
    /// to its witness (the configured one, else the state directory's `audit.witness`),
    /// pinned to `expect_key` when given. The log is live, so its records after the last
    /// checkpoint, and a last checkpoint not yet copied to the witness, are accepted and
    /// counted ([`Report::unsigned_tail`], [`Report::witness_behind`]).
    ///
    /// A log this host has written nothing to yet — an empty file, and an empty (or no)
    /// witness — verifies with no record: the offline verifier refuses an empty file, as it
    /// cannot tell a new log from an emptied one, but the writer can (a log emptied under a
    /// running host is refused, as the writer has written to it).
    ///
    /// # Errors
    /// [`VerifyError`]: the log (or its witness) was altered, is signed by another key than
    /// `expect_key`, or cannot be read.
    pub fn verify_audit(&self, expect_key: Option<Fingerprint>) -> Result<Report, VerifyError> {
        let key = self.audit.verifying_key();
        let given = Fingerprint::of(&key);
        if let Some(expected) = expect_key
            && expected != given
        {
            return Err(VerifyError::UnexpectedKey { given, expected });
        }
        let empty = |path: &std::path::Path| std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        let witness = self.audit.witness();
        if self.audit.last_seq() == 0
            && std::fs::metadata(self.audit.path()).is_ok_and(|m| m.is_file() && m.len() == 0)
            && witness.is_none_or(empty)
        {
            return Ok(Report {
                witnessed: witness.map(|_| 0),
                ..Report::empty(given)
            });
        }
        let options = VerifyOptions {
            witness,
            allow_open_tail: true,
            allow_pruned: false,
            expect_key,
        };
        audit::verify_with(self.audit.path(), &key, &options)
    }

    /// Loads `provider`'s plugin again from its configured source and, once it passed its
    /// checks (a usable component, the same plugin, its vectors), runs every call that
    /// begins from now on with it; calls already running finish on the version they began
    /// with, and a refused version changes nothing. The new version starts out of
    /// quarantine. Blocks while it compiles: from async code, call it on a blocking thread
    /// (see `crate::reload`).
    ///
    /// ```no_run
    /// # fn run(sluice: &sluice::Sluice) {
    /// match sluice.reload_plugin("acme") {
    ///     Ok(r) => println!("acme: {} now serves (was {})", r.version, r.previous_version),
    ///     Err(e) => eprintln!("{e}"),
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`ReloadError`]: no such provider, or the check the new version failed.
    pub fn reload_plugin(&self, provider: &str) -> Result<Reloaded, ReloadError> {
        self.plugins.reload(provider)
    }

    /// Every provider's plugin (to reload one from a blocking thread, clone the [`Arc`]).
    #[cfg(feature = "internals")]
    pub fn plugins(&self) -> &Arc<PluginSet> {
        &self.plugins
    }

    /// `call` with its relative URL made absolute, when it has one and its provider a base:
    /// a write is journaled with the URL it is sent to.
    fn resolved(&self, call: &Call) -> Option<Call> {
        if !call.url.starts_with('/') {
            return None;
        }
        let base = self.base_urls.get(&call.provider)?;
        let mut call = call.clone();
        call.url = format!("{}{}", base.trim_end_matches('/'), call.url);
        Some(call)
    }

    /// What waits and why, now: every quota scope (its limit, paced rate, what is available
    /// now, the remaining the provider last reported, the hold and its reason, when the next
    /// request may go and why it waits) and the queue by tenant and class — the operator's
    /// read-only view, as the sidecar's `/scopes` and `/queue` show it.
    pub fn scopes(&self) -> crate::operator::Snapshot {
        self.executor.admission().snapshot()
    }

    /// The executor (admission, plugins, transport and retries).
    #[cfg(feature = "internals")]
    pub fn executor(&self) -> &Arc<Executor> {
        &self.executor
    }

    /// The admission queue.
    #[cfg(feature = "internals")]
    pub fn admission(&self) -> &Admission {
        self.executor.admission()
    }

    /// The write engine.
    #[cfg(feature = "internals")]
    pub fn writes(&self) -> &Writes {
        &self.writes
    }

    /// The journal of writes.
    #[cfg(feature = "internals")]
    pub fn journal(&self) -> &Arc<Journal> {
        &self.journal
    }

    /// The audit log.
    #[cfg(feature = "internals")]
    pub fn audit(&self) -> &Arc<AuditLog> {
        &self.audit
    }

    /// The clock every part of the host runs on.
    #[cfg(feature = "internals")]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Signs what the audit log holds with a last checkpoint. Call it before the process
    /// exits; a host that dies without it leaves an unsigned tail, which the next start
    /// signs.
    ///
    /// # Errors
    /// [`AuditError`] naming the file.
    pub fn close(&self) -> Result<(), AuditError> {
        self.audit.sign_tail(self.clock.wall_ms()).map(|_| ())
    }
}
