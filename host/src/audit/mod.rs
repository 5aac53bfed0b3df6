//! The tamper-evident audit log: what the host did about each action, in an append-only file
//! that anyone holding the public key can check offline.
//!
//! # Why a hash chain with signed checkpoints
//!
//! The audit log is the answer to "did the agent send that payment, when, and who allowed
//! it?" — so it must be trustworthy even when the machine that wrote it is not. Each line is
//! `<hash-hex> <record-json>`, and each record's hash covers the hash before it: editing,
//! deleting or reordering any record breaks every hash after it. A chain alone can simply be
//! recomputed by whoever edits it, so every [`AuditSettings::checkpoint_every`] records the
//! writer appends a *checkpoint*: an Ed25519 signature over the seq and hash of the record just
//! written. Rebuilding the chain now needs the secret key, which is kept apart from the log
//! (another volume, another machine). Deleting the tail — the last checkpoint with it — is
//! what a signature cannot show, so each checkpoint line is also appended to a *witness* file
//! kept elsewhere; [`verify`] with the witness finds every checkpoint the log has lost.
//!
//! # What is recorded, and what never is
//!
//! Records carry the facts of an action's life ([`EventKind`]): its task and action names, the
//! attempt, the idempotency key, the status a provider answered, retry timings, the scope, and
//! a short sanitized [`Event::detail`]. There is no field for a request or response body, a
//! header, a credential or a token: the API cannot take them, so the log cannot leak them.
//! When an operator asks to see a raw body (kept elsewhere), that request is itself recorded
//! ([`EventKind::BodyDisclosed`]).
//!
//! # Durability
//!
//! [`AuditLog::append`] returns only once the line is on disk (`sync_data`): the host logs an
//! attempt before sending it. A crash in the middle of a write leaves a torn last line, which
//! [`AuditLog::open`] cuts away; the chain continues from the last whole record.
//!
//! # Retention
//!
//! [`AuditLog::prune`] drops old records but keeps the log verifiable: the kept file starts
//! at a checkpoint (its *anchor*), whose signature vouches for the records that follow it;
//! [`verify`] then reports where the pruned log starts ([`Report::pruned_before`]).

mod keys;
mod log;
mod record;
mod reopen;
mod verify;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use ed25519_dalek::VerifyingKey;
pub use keys::{AuditKey, KeyError, generate, key_id, load_signing, load_verifying};
pub use log::{AuditLog, AuditSettings};
pub use verify::{Finding, Report, VerifyError, verify};

/// The longest [`Event::detail`] kept, in characters; longer text is cut.
pub const MAX_DETAIL_CHARS: usize = 200;

/// What happened. Serialized in snake_case (`action_requested`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// An agent asked for an action; its intent is journaled.
    ActionRequested,
    /// An attempt is about to go out (logged before the send).
    ActionSent,
    /// An attempt's outcome: the provider's status, or none when no answer came.
    ActionResult,
    /// Another attempt is scheduled, at `due_ms`.
    RetryScheduled,
    /// A write's outcome is unknown: it must be checked with the provider before anything else.
    ReconciliationRequired,
    /// The provider was asked, and the write's outcome is now known.
    Reconciled,
    /// A person must decide.
    Escalated,
    /// A person decided (`detail` says what).
    Decision,
    /// The task was cancelled.
    Cancelled,
    /// An operator asked to see a raw body; the body itself is never logged.
    BodyDisclosed,
    /// An operator granted access (to a body, a scope, an action).
    AccessApproved,
    /// A signed checkpoint; written by the log itself, never by [`AuditLog::append`].
    Checkpoint,
}

/// One event to record: a kind, a time, and the facts that apply. Absent facts are left out
/// of the record.
///
/// There is deliberately no field for bodies, headers or credentials.
///
/// ```
/// use sluice::audit::{Event, EventKind};
///
/// let e = Event::new(EventKind::ActionResult, 1_700_000_000_000)
///     .task("task-7")
///     .action("charge-42")
///     .attempt(2)
///     .status(429)
///     .retry_after_ms(1_500);
/// assert_eq!(e.status, Some(429));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub kind: EventKind,
    /// When, in wall-clock milliseconds since the Unix epoch (from the caller's clock).
    pub time_ms: i64,
    /// The agent task.
    pub task: Option<String>,
    /// The logical action's name.
    pub action: Option<String>,
    /// The attempt number, from 1.
    pub attempt: Option<u32>,
    /// The idempotency key the action is sent with.
    pub idempotency_key: Option<String>,
    /// The HTTP status the provider answered.
    pub status: Option<u16>,
    /// How long the provider asked to wait.
    pub retry_after_ms: Option<u64>,
    /// The admission scope the action is paced in.
    pub scope: Option<String>,
    /// When the next step is due, in wall-clock milliseconds.
    pub due_ms: Option<i64>,
    /// A short note (see [`Event::detail`]).
    pub detail: Option<String>,
}

impl Event {
    /// An event of `kind` at `time_ms`, with no facts yet.
    #[must_use]
    pub fn new(kind: EventKind, time_ms: i64) -> Self {
        Self {
            kind,
            time_ms,
            task: None,
            action: None,
            attempt: None,
            idempotency_key: None,
            status: None,
            retry_after_ms: None,
            scope: None,
            due_ms: None,
            detail: None,
        }
    }

    /// Sets the task.
    #[must_use]
    pub fn task(mut self, task: impl Into<String>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// Sets the logical action's name.
    #[must_use]
    pub fn action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// Sets the attempt number.
    #[must_use]
    pub fn attempt(mut self, attempt: u32) -> Self {
        self.attempt = Some(attempt);
        self
    }

    /// Sets the idempotency key.
    #[must_use]
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Sets the provider's status.
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the wait the provider asked for.
    #[must_use]
    pub fn retry_after_ms(mut self, ms: u64) -> Self {
        self.retry_after_ms = Some(ms);
        self
    }

    /// Sets the admission scope.
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Sets when the next step is due.
    #[must_use]
    pub fn due_ms(mut self, due_ms: i64) -> Self {
        self.due_ms = Some(due_ms);
        self
    }

    /// Sets a short note, sanitized: control characters become spaces and the text is cut to
    /// [`MAX_DETAIL_CHARS`] characters. A note is for a reason ("quota exhausted", "approved by
    /// on-call"), never for a body or a secret.
    #[must_use]
    pub fn detail(mut self, detail: &str) -> Self {
        self.detail = Some(sanitize(detail));
        self
    }
}

/// Control characters to spaces, cut to [`MAX_DETAIL_CHARS`].
fn sanitize(text: &str) -> String {
    text.chars()
        .take(MAX_DETAIL_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A failure of the audit log writer.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Reading or writing a file failed.
    #[error("the audit file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The existing log's last whole record is not a well-formed record: the writer will not
    /// chain onto it. Check the log with `sluice audit verify`.
    #[error(
        "the audit log {path}, line {line}: {why}; refusing to append to it (check it with \
         `sluice audit verify`)"
    )]
    Malformed {
        /// The log.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// [`AuditLog::append`] was given an [`EventKind::Checkpoint`]: only the log writes those.
    #[error("checkpoints are written by the log itself; use AuditLog::checkpoint")]
    CheckpointEvent,
}
