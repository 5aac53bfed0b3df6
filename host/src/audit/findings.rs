//! What verifying an audit log finds: the report of a log that verifies, where one that
//! does not was found wanting, and the check of one checkpoint, which the pass over the log
//! ([`super::verify`]) and the pass over its witness ([`super::witness`]) share.

use std::fmt::{self, Write as _};

use ed25519_dalek::{Signature, VerifyingKey};

use super::fingerprint::Fingerprint;
use super::keys::key_id;
use super::record::{Checkpoint, checkpoint_message, from_hex};
use crate::input_file::InputFileError;

/// What a log that verifies holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The fingerprint of the key every checkpoint was verified with: which key signed it.
    pub key: Fingerprint,
    /// Records in the log, checkpoints included.
    pub records: u64,
    /// Checkpoint records among them.
    pub checkpoints: u64,
    /// The seq of the first record: 1, or the anchor of a pruned log.
    pub first_seq: u64,
    /// The seq of the last record.
    pub last_seq: u64,
    /// For a pruned log, the seq it starts at: the records before it were dropped, and the
    /// anchor checkpoint's signature vouches for where it continues.
    pub pruned_before: Option<u64>,
    /// The log starts past record 1 and no signed `pruned` record says retention cut it
    /// there: nothing proves the records before it were not simply deleted. Only a log
    /// verified with [`VerifyOptions::allow_pruned`](super::VerifyOptions::allow_pruned)
    /// can have this.
    pub unproven_start: bool,
    /// Records after the last checkpoint: chained but not yet signed. Only a log verified
    /// with `allow_open_tail` can have any.
    pub unsigned_tail: u64,
    /// Witness checkpoints found in the log (those of pruned records are skipped); `None`
    /// without a witness.
    pub witnessed: Option<u64>,
    /// The log's last checkpoint is not in the witness yet (the writer copies it just after
    /// writing it). Only a log verified with `allow_open_tail` can have this.
    pub witness_behind: bool,
    /// The seqs of the log's `witness_epoch` records: each says the witness was started
    /// afresh on an operator's word there (it had been found missing, emptied or cut short),
    /// so the witness vouches only for the log after the last one. A tail cut before it
    /// cannot be seen.
    pub witness_epochs: Vec<u64>,
}

impl Report {
    /// The report of a log that holds no record yet, signed by `key`'s holder.
    pub fn empty(key: Fingerprint) -> Self {
        Self {
            key,
            records: 0,
            checkpoints: 0,
            first_seq: 0,
            last_seq: 0,
            pruned_before: None,
            unproven_start: false,
            unsigned_tail: 0,
            witnessed: None,
            witness_behind: false,
            witness_epochs: Vec::new(),
        }
    }
}

/// Where a log (or its witness) is not what was written. The first failure found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The line, from 1; 0 for the file as a whole.
    pub line: usize,
    /// The record's seq, when the line is a record.
    pub seq: Option<u64>,
    /// What is wrong.
    pub why: String,
    /// Whether `line` is a line of the witness file rather than of the log.
    pub in_witness: bool,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.in_witness, self.seq, self.line) {
            (true, _, 0) => write!(f, "witness: {}", self.why),
            (true, _, line) => write!(f, "witness line {line}: {}", self.why),
            (false, Some(seq), line) => write!(f, "record {seq} (line {line}): {}", self.why),
            (false, None, 0) => f.write_str(&self.why),
            (false, None, line) => write!(f, "line {line}: {}", self.why),
        }
    }
}

/// Why a log did not verify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// A file could not be read, or is not a regular file: nothing was verified.
    #[error("the {what} {error}")]
    Unreadable {
        /// Which file: `log` or `witness`.
        what: &'static str,
        /// Why, naming the file.
        error: InputFileError,
    },
    /// The key is not the one pinned by
    /// [`VerifyOptions::expect_key`](super::VerifyOptions::expect_key).
    #[error(
        "the log is checked with key {given}, not the expected {expected}: it was signed by \
         someone else, or the key file was replaced"
    )]
    UnexpectedKey {
        /// The key given.
        given: Fingerprint,
        /// The key expected.
        expected: Fingerprint,
    },
    /// The log was altered, truncated or signed by another key.
    #[error("{0}")]
    Tampered(Finding),
}

/// What the verifier says of the `what` file (`log` or `witness`) it could not read.
pub(super) fn unreadable(what: &'static str) -> impl Fn(InputFileError) -> VerifyError {
    move |error| VerifyError::Unreadable { what, error }
}

/// A checkpoint of the log: its seq and the hash it signs (that of the record before it).
#[derive(Debug, Clone, Copy)]
pub(super) struct LogCheckpoint {
    pub seq: u64,
    pub head: [u8; 32],
}

/// A checkpoint at `seq` whose record's `prev` is `prev` must cover record `seq - 1`, name
/// `prev` as its head, and be signed by `key`.
pub(super) fn check_checkpoint(
    cp: &Checkpoint,
    seq: u64,
    prev: &[u8; 32],
    key: &VerifyingKey,
) -> Result<(), String> {
    if seq.checked_sub(1) != Some(cp.covers) {
        return Err(format!(
            "its checkpoint covers record {}, not the record before it",
            cp.covers
        ));
    }
    if from_hex::<32>(&cp.head).as_ref() != Some(prev) {
        return Err(format!(
            "its checkpoint's head is not the hash of record {}",
            cp.covers
        ));
    }
    let signature =
        from_hex::<64>(&cp.sig).ok_or("its checkpoint's signature is not 128 hex digits")?;
    let message = checkpoint_message(cp.covers, prev);
    if key
        .verify_strict(&message, &Signature::from_bytes(&signature))
        .is_err()
    {
        let mut why = "checkpoint signature does not verify with the given key (chain rebuilt \
                       or wrong key)"
            .to_string();
        // A checkpoint names its key by the first 16 hex digits of the fingerprint.
        if cp.key_id != key_id(key) {
            let _ = write!(
                why,
                "; it names the key sha256:{}… (the first 16 hex digits of its fingerprint), \
                 the given key is {}",
                cp.key_id,
                Fingerprint::of(key)
            );
        }
        return Err(why);
    }
    Ok(())
}
