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
//! (another volume, another machine — or, as `sluice demo` does, only in the writer's
//! memory: [`AuditLog::open`] takes the key as a value and never writes it). Deleting the
//! tail — the last checkpoint with it — is what a signature cannot show, so each checkpoint
//! line is also appended to a *witness* file kept elsewhere; [`verify()`] with the witness holds
//! the log to every checkpoint the witness saw (below).
//!
//! A whole log rebuilt under a key of someone else's, with its own public key file and
//! witness, is consistent in itself; what gives it away is the key. [`verify()`] reports the
//! [`Fingerprint`] of the key that signed the log, and an auditor pins the one they expect
//! ([`VerifyOptions::expect_key`], `--expect-key`).
//!
//! # What a log that verifies proves
//!
//! - **Nothing was edited, inserted, deleted or reordered** before its last checkpoint: the
//!   hash chain, and the checkpoints' signatures, which need the secret key.
//! - **Its start is where the writer put it.** A log starts at record 1, or — pruned by
//!   retention — at a checkpoint (its anchor) that a signed `pruned` record names. A log
//!   whose head was cut down to some checkpoint by anyone else has no such record, and fails
//!   unless the verifier is told `allow_pruned` (and then says so).
//! - **Which key signed it** ([`Report::key`]): rebuilding a whole log under a new key is
//!   seen by whoever pins the key ([`VerifyOptions::expect_key`]).
//! - With a witness, **its end is not before what someone else saw** (below).
//!
//! # The witness, the way Certificate Transparency reads it
//!
//! A consistent history is one that extends the last checkpoint someone else holds (the
//! Crosby–Wallach and Certificate Transparency rule). The writer copies every checkpoint to
//! the witness, kept elsewhere, right after writing it to the log, so a witness is the log's
//! checkpoints in order and the verifier holds the two to each other:
//!
//! - every witness line is a checkpoint signed by the key, in increasing order;
//! - every witness checkpoint at or after the log's first record is in the log, the same
//!   (else the log was rewritten, or its tail deleted); those before it are the pruned ones;
//! - every checkpoint of the log is in the witness: a witness that lacks one in the middle
//!   had lines deleted, and one that ends before the log does was cut short (or belongs to
//!   another log). Both are errors, and so is an empty witness for a log with checkpoints.
//!   The one exception is a live log (`allow_open_tail`): its last checkpoint may not be in
//!   the witness yet, as the writer copies it just after ([`Report::witness_behind`]);
//!   reopening the log with the writer fills it in.
//!
//! So with a witness the verifier accepts exactly a log whose checkpoints are the witness's
//! from the log's anchor on — what a log extending the witness's last checkpoint, and pruned
//! only by its writer, looks like.
//!
//! # What is recorded, and what never is
//!
//! Records carry the facts of an action's life ([`EventKind`]): its task and action names, the
//! attempt, the idempotency key, the status a provider answered, retry timings, the scope, and
//! a short sanitized [`Event::detail`]. There is no field for a request or response body, a
//! header, a credential or a token: the API cannot take them, so the log cannot leak them.
//! When an operator asks to see a raw body (kept elsewhere), that request is itself recorded
//! ([`EventKind::BodyDisclosed`]). Names are cut to [`MAX_NAME_CHARS`] and the note to
//! [`MAX_DETAIL_CHARS`], so a record always fits in a line of [`MAX_LINE`] bytes — the most
//! any reader here accepts, so that a file that is not a log (`/dev/zero`) is refused at its
//! first long line instead of read without bound.
//!
//! # Durability
//!
//! [`AuditLog::append`] returns only once the line is on disk (`sync_data`): the host logs an
//! attempt before sending it. A crash in the middle of a write leaves a torn last line, which
//! [`AuditLog::open`] cuts away; the chain continues from the last whole record. A crash
//! between writing a checkpoint to the log and copying it to the witness leaves the witness
//! one checkpoint behind, which [`AuditLog::open`] fills in (a new witness beside an old log
//! is filled in the same way, and vouches only for what the log held then); a witness *ahead*
//! of the log means the log's tail was deleted, and the writer refuses to append to it. The
//! log, the witness and key files are created `0600` whatever the umask.
//!
//! # Retention
//!
//! [`AuditLog::prune`] drops old records but keeps the log verifiable: the kept file starts
//! at a checkpoint (its *anchor*), whose signature vouches for the records that follow it,
//! and ends with a `pruned` record naming the anchor and a checkpoint that signs it. That
//! signed statement is what tells a prune from someone deleting the head of the log down to
//! a checkpoint: [`verify()`] accepts a log that starts past record 1 only when such a record
//! names its start (or when told to, [`VerifyOptions::allow_pruned`]), and then reports where
//! it starts ([`Report::pruned_before`]).

mod findings;
mod fingerprint;
mod keys;
mod known;
mod lines;
mod log;
mod record;
mod reopen;
mod verify;
mod witness;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use ed25519_dalek::VerifyingKey;
pub use findings::{Finding, Report, VerifyError};
pub use fingerprint::{BadFingerprint, Fingerprint};
pub use keys::{
    AuditKey, KeyError, MAX_KEY_FILE_BYTES, generate, key_id, load_signing, load_verifying,
};
pub use known::{KnownAction, known_actions};
pub use lines::MAX_LINE;
pub use log::{AuditLog, AuditSettings};
pub use verify::{VerifyOptions, verify, verify_with};

/// The longest [`Event::detail`] kept, in characters; longer text is cut.
pub const MAX_DETAIL_CHARS: usize = 200;

/// The longest name (task, action, idempotency key, scope) a record keeps, in characters;
/// longer names are cut, so that a record always fits in a [`MAX_LINE`].
pub const MAX_NAME_CHARS: usize = 1024;

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
    /// Retention dropped the records before the log's new first record (the record's
    /// `anchor`); written by the log itself when it prunes, and signed at once by the
    /// checkpoint that follows it.
    Pruned,
    /// The witness was started afresh on an operator's word, after it was found missing,
    /// emptied or cut short: the log's checkpoints before this record are not in it
    /// (`detail` says how many it lacked). Written by the log itself when it opens, and
    /// signed at once by the checkpoint that follows it; `verify` reports it.
    WitnessEpoch,
    /// An operator accepted a journal that disagreed with the log (behind it, or another
    /// one): the actions the log knew and the journal did not were recorded `lost`
    /// (`detail` says how many). Its journal mark is the accepted journal's.
    JournalAccepted,
    /// A host started for the first time beside this log, with a journal that had never
    /// moved: the journal's mark was drawn anew for this log (its journal mark), so that a
    /// copy of that journal elsewhere never shares its id.
    JournalBound,
}

/// One event to record: a kind, a time, and the facts that apply. Absent facts are left out
/// of the record.
///
/// There is deliberately no field for bodies, headers or credentials.
///
#[cfg_attr(feature = "internals", doc = "```")]
#[cfg_attr(not(feature = "internals"), doc = "```ignore")]
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
    /// The journal's mark when the event was recorded (see [`JournalMark`]).
    pub journal: Option<JournalMark>,
}

/// Which journal an event's action is recorded in, and how far that journal had gone: the
/// journal's id and this host's sequence in it, as committed before the event was logged.
/// A journal found later with another id, or behind the last mark its host's log names,
/// lost records ([`crate::writes::witnesses`] holds the two to each other).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalMark {
    /// The journal's id, drawn when it was made.
    pub id: String,
    /// The host's sequence in it.
    pub seq: u64,
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
            journal: None,
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

    /// Sets the journal's mark (see [`JournalMark`]).
    #[must_use]
    pub fn journal(mut self, mark: JournalMark) -> Self {
        self.journal = Some(mark);
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
#[non_exhaustive]
pub enum AuditError {
    /// Reading or writing a file failed.
    #[error("the audit file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The existing log's (or witness's) last whole record is not a well-formed record, or a
    /// line is too long to be one: the writer will not chain onto it. Check the log with
    /// `sluice audit verify`.
    #[error(
        "the audit file {path}, line {line}: {why}; refusing to append to it (check it with \
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
    /// The witness holds a checkpoint past the log's last record: the log's tail was
    /// deleted (or the witness belongs to another log). Appending would bury the evidence.
    #[error(
        "the audit witness {witness} holds the checkpoint at record {witness_seq}, past the \
         log's last record {log_seq} in {log}: the log's tail was deleted, or the witness \
         belongs to another log; refusing to append (check it with `sluice audit verify`)",
        witness = witness.display(),
        log = log.display()
    )]
    WitnessAhead {
        /// The log.
        log: PathBuf,
        /// The witness.
        witness: PathBuf,
        /// The seq of the log's last record.
        log_seq: u64,
        /// The seq of the witness's last checkpoint.
        witness_seq: u64,
    },
    /// The witness lacks more of the log's checkpoints than a crash between the two writes
    /// leaves (the log's last one): it is missing, was emptied, or was cut short. Refilling
    /// it from the log would hide a cut of the log's tail, so the log is not opened.
    #[error(
        "the audit witness {witness} lacks {lacks} of the log's checkpoints (the log {log} \
         has checkpoints up to record {last_checkpoint}): it is missing, emptied or cut \
         short, and refilling it from the log would hide a cut of the log's tail. Restore \
         the witness from its copy, or start a new witness epoch on purpose (`sluice serve \
         --new-witness-epoch`, or SluiceBuilder::new_witness_epoch): it is recorded in the \
         log, and `sluice audit verify` reports it",
        witness = witness.display(),
        log = log.display()
    )]
    WitnessLost {
        /// The log.
        log: PathBuf,
        /// The witness.
        witness: PathBuf,
        /// How many of the log's checkpoints it lacks.
        lacks: usize,
        /// The seq of the log's last checkpoint.
        last_checkpoint: u64,
    },
    /// `AuditLog::append` was given an `EventKind::Checkpoint`, `EventKind::Pruned`
    /// or `EventKind::WitnessEpoch`: only the log writes those.
    #[error(
        "checkpoint, pruned and witness_epoch records are written by the log itself; use \
         AuditLog::checkpoint or AuditLog::prune"
    )]
    CheckpointEvent,
}
