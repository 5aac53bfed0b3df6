//! The offline verifier: checks a log (and its witness) with nothing but the public key.
//!
//! It hashes the bytes on disk as they are — never a re-serialization — so any edit to a
//! stored record, even one that keeps the JSON valid, breaks its hash.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, VerifyingKey};

use super::keys::key_id;
use super::record::{Checkpoint, GENESIS, checkpoint_message, from_hex, parse_line};

/// What a log that verifies holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
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
    /// Records after the last checkpoint: chained but not yet signed. Only a log verified
    /// with `allow_open_tail` can have any.
    pub unsigned_tail: u64,
    /// Witness checkpoints found in the log (those of pruned records are skipped); `None`
    /// without a witness.
    pub witnessed: Option<u64>,
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
            (true, _, line) => write!(f, "witness line {line}: {}", self.why),
            (false, Some(seq), line) => write!(f, "record {seq} (line {line}): {}", self.why),
            (false, None, 0) => f.write_str(&self.why),
            (false, None, line) => write!(f, "line {line}: {}", self.why),
        }
    }
}

/// Why a log did not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A file could not be read: nothing was verified.
    #[error("cannot read {path}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The log was altered, truncated or signed by another key.
    #[error("{0}")]
    Tampered(Finding),
}

/// Verifies the log at `log` with the public key `key`; with `witness`, also that every
/// checkpoint the witness holds is still in the log.
///
/// Checks, in order, the first failure winning: each line parses; seqs go up by one; each
/// record's `prev` is the previous record's hash; each record's hash matches its stored bytes;
/// each checkpoint covers the record before it and its signature verifies with `key`; the log
/// ends with a checkpoint (unless `allow_open_tail`, for a log still being written, which also
/// ignores a torn last line); then the witness. A log that starts past record 1 (pruned) must
/// start with a checkpoint, whose signed `prev` is trusted.
///
/// What it cannot see: records after the last checkpoint can be removed or rewritten by
/// whoever can write the log, unless a witness held apart shows a later checkpoint; records
/// dropped from the start of a log down to a checkpoint look like a prune
/// ([`Report::pruned_before`]).
///
/// # Errors
/// [`VerifyError::Tampered`] naming the record; [`VerifyError::Unreadable`] naming the file.
pub fn verify(
    log: &Path,
    key: &VerifyingKey,
    witness: Option<&Path>,
    allow_open_tail: bool,
) -> Result<Report, VerifyError> {
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| VerifyError::Unreadable { path, source }
    };
    let mut reader = BufReader::new(File::open(log).map_err(unreadable(log))?);
    let mut report = Report {
        records: 0,
        checkpoints: 0,
        first_seq: 0,
        last_seq: 0,
        pruned_before: None,
        unsigned_tail: 0,
        witnessed: None,
    };
    // covers -> head, of every checkpoint in the log.
    let mut checkpoints = HashMap::new();
    let mut last: Option<(u64, [u8; 32])> = None;
    let mut last_checkpoint = None;
    let (mut line, mut line_no) = (Vec::new(), 0);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(unreadable(log))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let Some(text) = line.strip_suffix(b"\n") else {
            if allow_open_tail {
                break;
            }
            return Err(tampered(
                line_no,
                None,
                "the last line is incomplete (a torn write: opening the log with the writer \
                 cuts it away)",
            ));
        };
        let parsed = parse_line(text).map_err(|why| tampered(line_no, None, why))?;
        let seq = parsed.record.seq;
        let fail = |why: String| tampered(line_no, Some(seq), why);
        let prev = from_hex::<32>(&parsed.record.prev)
            .ok_or_else(|| fail("its prev is not 64 hex digits".into()))?;
        match last {
            None if seq == 1 => {
                if prev != GENESIS {
                    return Err(fail("the first record's prev is not 64 zeros".into()));
                }
            }
            None => {
                if parsed.record.checkpoint.is_none() {
                    return Err(fail(format!(
                        "the log starts at record {seq}, which is not a checkpoint: the \
                         records before it were deleted"
                    )));
                }
                report.pruned_before = Some(seq);
            }
            Some((last_seq, last_hash)) => {
                if seq != last_seq + 1 {
                    return Err(fail(format!(
                        "expected record {} here, found record {seq} (records deleted or \
                         reordered)",
                        last_seq + 1
                    )));
                }
                if prev != last_hash {
                    return Err(fail(format!(
                        "its prev is not the hash of record {last_seq} (records deleted, \
                         reordered or rewritten)"
                    )));
                }
            }
        }
        if parsed.computed_hash() != Some(parsed.hash) {
            return Err(fail(
                "its hash does not match its contents (edited?)".into(),
            ));
        }
        if let Some(cp) = &parsed.record.checkpoint {
            check_checkpoint(cp, seq, &prev, key).map_err(fail)?;
            checkpoints.insert(cp.covers, prev);
            report.checkpoints += 1;
            last_checkpoint = Some(seq);
        }
        if last.is_none() {
            report.first_seq = seq;
        }
        report.records += 1;
        report.last_seq = seq;
        last = Some((seq, parsed.hash));
    }
    if report.records == 0 {
        return Err(tampered(0, None, "the log is empty: it holds no record"));
    }
    report.unsigned_tail = report.last_seq - last_checkpoint.unwrap_or(0);
    if report.unsigned_tail > 0 && !allow_open_tail {
        let why = match last_checkpoint {
            Some(cp) => format!(
                "the log ends {} records after its last checkpoint (record {cp}) (truncated \
                 tail or log not closed); pass --allow-open-tail for a live log",
                report.unsigned_tail
            ),
            None => "the log has no checkpoint, so none of it is signed (log not closed?); \
                     pass --allow-open-tail for a live log"
                .into(),
        };
        return Err(tampered(line_no, Some(report.last_seq), why));
    }
    if let Some(witness) = witness {
        let data = std::fs::read(witness).map_err(unreadable(witness))?;
        report.witnessed = Some(check_witness(
            &data,
            key,
            &checkpoints,
            &report,
            allow_open_tail,
        )?);
    }
    Ok(report)
}

/// Checks every checkpoint of the witness against the log's; returns how many were found.
fn check_witness(
    data: &[u8],
    key: &VerifyingKey,
    checkpoints: &HashMap<u64, [u8; 32]>,
    report: &Report,
    allow_open_tail: bool,
) -> Result<u64, VerifyError> {
    let mut found = 0;
    for (index, line) in data.split_inclusive(|&b| b == b'\n').enumerate() {
        let fail = |why: String| {
            VerifyError::Tampered(Finding {
                line: index + 1,
                seq: None,
                why,
                in_witness: true,
            })
        };
        let Some(text) = line.strip_suffix(b"\n") else {
            if allow_open_tail {
                break;
            }
            return Err(fail("the last line is incomplete (a torn write)".into()));
        };
        let parsed = parse_line(text).map_err(fail)?;
        let Some(cp) = &parsed.record.checkpoint else {
            return Err(fail("not a checkpoint".into()));
        };
        if parsed.computed_hash() != Some(parsed.hash) {
            return Err(fail(
                "its hash does not match its contents (edited?)".into(),
            ));
        }
        let prev = from_hex::<32>(&parsed.record.prev)
            .ok_or_else(|| fail("its prev is not 64 hex digits".into()))?;
        check_checkpoint(cp, parsed.record.seq, &prev, key).map_err(&fail)?;
        if parsed.record.seq < report.first_seq {
            continue; // pruned from the log
        }
        let covers = cp.covers;
        match checkpoints.get(&covers) {
            Some(head) if *head == prev => found += 1,
            Some(_) => {
                return Err(fail(format!(
                    "the log's checkpoint covering record {covers} differs from the \
                     witness's: the log was rewritten"
                )));
            }
            None if covers >= report.last_seq => {
                return Err(fail(format!(
                    "the log lacks checkpoint covering record {covers} recorded in the \
                     witness: its tail was deleted"
                )));
            }
            None => {
                return Err(fail(format!(
                    "the log lacks checkpoint covering record {covers} recorded in the \
                     witness: the log was rewritten"
                )));
            }
        }
    }
    Ok(found)
}

/// A checkpoint at `seq` whose record's `prev` is `prev` must cover record `seq - 1`, name
/// `prev` as its head, and be signed by `key`.
fn check_checkpoint(
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
        let given = key_id(key);
        if cp.key_id != given {
            let _ = write!(
                why,
                "; it names key {}, the given key is {given}",
                cp.key_id
            );
        }
        return Err(why);
    }
    Ok(())
}

fn tampered(line: usize, seq: Option<u64>, why: impl Into<String>) -> VerifyError {
    VerifyError::Tampered(Finding {
        line,
        seq,
        why: why.into(),
        in_witness: false,
    })
}
