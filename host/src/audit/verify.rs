//! The offline verifier: checks a log (and its witness) with nothing but the public key.
//!
//! It hashes the bytes on disk as they are — never a re-serialization — so any edit to a
//! stored record, even one that keeps the JSON valid, breaks its hash. It reads a line of at
//! most [`MAX_LINE`](super::MAX_LINE) bytes, so a file that is not a log (`/dev/zero`, a
//! line of gigabytes) is named at its first long line rather than read without bound.
//!
//! What it proves, and how it holds the log to its witness: the [audit](super) module's
//! documentation.

use std::path::Path;

use ed25519_dalek::VerifyingKey;

use super::findings::{Finding, LogCheckpoint, Report, VerifyError, check_checkpoint, unreadable};
use super::fingerprint::Fingerprint;
use super::lines::{self, Line, too_long};
use super::record::{GENESIS, from_hex, parse_line};
use super::{EventKind, witness};

/// How to verify: the witness, and what to accept or expect.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions<'a> {
    /// The witness file: the copy of every checkpoint, kept apart from the log.
    pub witness: Option<&'a Path>,
    /// Accept a log still being written: records after the last checkpoint, a torn last
    /// line, and a last checkpoint not yet in the witness.
    pub allow_open_tail: bool,
    /// Accept a log that starts at a checkpoint no signed `pruned` record names — one whose
    /// head may have been deleted ([`Report::unproven_start`]).
    pub allow_pruned: bool,
    /// The fingerprint the key must have; another key is an error before anything is read.
    pub expect_key: Option<Fingerprint>,
}

/// Verifies the log at `log` with the public key `key`; with `witness`, also against the
/// witness. [`verify_with`] with the other options off.
///
/// # Errors
/// As [`verify_with`].
pub fn verify(
    log: &Path,
    key: &VerifyingKey,
    witness: Option<&Path>,
    allow_open_tail: bool,
) -> Result<Report, VerifyError> {
    let options = VerifyOptions {
        witness,
        allow_open_tail,
        ..VerifyOptions::default()
    };
    verify_with(log, key, &options)
}

/// Verifies the log at `log` with the public key `key`, as `options` say.
///
/// Checks, in order, the first failure winning: the key is the expected one; each line is at
/// most [`MAX_LINE`](super::MAX_LINE) bytes and parses; seqs go up by one; each record's
/// `prev` is the previous record's hash; each record's hash matches its stored bytes; each
/// checkpoint covers the record before it and its signature verifies with `key`; a log that
/// starts past record 1 starts at a checkpoint that a signed `pruned` record names (unless
/// `allow_pruned`); the log ends with a checkpoint (unless `allow_open_tail`, for a log still
/// being written, which also ignores a torn last line); then the witness, as the
/// [audit](super) module's documentation describes.
///
/// What it cannot see: records after the last checkpoint can be removed or rewritten by
/// whoever can write the log, unless a witness held apart shows a later checkpoint; without
/// a witness, a tail cut back to a checkpoint; and anything done by whoever holds the secret
/// key.
///
/// # Errors
/// [`VerifyError::UnexpectedKey`]; [`VerifyError::Tampered`] naming the record;
/// [`VerifyError::Unreadable`] naming the file (also for one that is not a regular file).
pub fn verify_with(
    log: &Path,
    key: &VerifyingKey,
    options: &VerifyOptions<'_>,
) -> Result<Report, VerifyError> {
    let given = Fingerprint::of(key);
    if let Some(expected) = options.expect_key
        && expected != given
    {
        return Err(VerifyError::UnexpectedKey { given, expected });
    }
    let mut report = Report::empty(given);
    let pass = read_log(log, key, options.allow_open_tail, &mut report)?;
    let last_checkpoint = pass.checkpoints.last().map(|c| c.seq);
    if let Some(start) = report.pruned_before {
        // A `pruned` record counts once a checkpoint after it signs it.
        let proven = pass
            .prunes
            .iter()
            .any(|&(at, anchor)| anchor == start && last_checkpoint.is_some_and(|cp| at < cp));
        if !proven && !options.allow_pruned {
            return Err(tampered(
                1,
                Some(start),
                format!(
                    "the log starts at record {start}, a checkpoint, but no signed `pruned` \
                     record names it as where retention cut the log: the records before it \
                     were deleted (pass --allow-pruned to accept a start nothing proves, such \
                     as that of a log pruned by an earlier sluice)"
                ),
            ));
        }
        report.unproven_start = !proven;
    }
    report.unsigned_tail = report.last_seq - last_checkpoint.unwrap_or(0);
    if report.unsigned_tail > 0 && !options.allow_open_tail {
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
        return Err(tampered(pass.lines, Some(report.last_seq), why));
    }
    if let Some(path) = options.witness {
        // The witness vouches for the log from its last epoch on.
        let from = report.witness_epochs.last().copied().unwrap_or(0);
        let witnessed: Vec<LogCheckpoint> = pass
            .checkpoints
            .iter()
            .filter(|c| c.seq > from)
            .copied()
            .collect();
        let seen = witness::check(path, key, &witnessed, &report, options.allow_open_tail)?;
        report.witnessed = Some(seen.found);
        report.witness_behind = seen.behind;
    }
    Ok(report)
}

/// What a pass over the log found besides the report's figures.
struct LogPass {
    /// Lines read.
    lines: usize,
    /// Every checkpoint, in order.
    checkpoints: Vec<LogCheckpoint>,
    /// Every `pruned` record: its seq and the anchor it names.
    prunes: Vec<(u64, u64)>,
}

/// Reads the log through, checking every line, and fills in `report`'s figures.
fn read_log(
    log: &Path,
    key: &VerifyingKey,
    allow_open_tail: bool,
    report: &mut Report,
) -> Result<LogPass, VerifyError> {
    let mut lines = lines::open(log).map_err(unreadable("log"))?;
    let mut pass = LogPass {
        lines: 0,
        checkpoints: Vec::new(),
        prunes: Vec::new(),
    };
    let mut last: Option<(u64, [u8; 32])> = None;
    while let Some((line_no, line)) = lines
        .next_line()
        .map_err(lines::read_error(log))
        .map_err(unreadable("log"))?
    {
        pass.lines = line_no;
        let text = match line {
            Line::Whole(text) => text,
            Line::Torn(_) if allow_open_tail => break,
            Line::Torn(_) => {
                return Err(tampered(
                    line_no,
                    None,
                    "the last line is incomplete (a torn write: opening the log with the \
                     writer cuts it away)",
                ));
            }
            Line::TooLong => return Err(tampered(line_no, None, too_long())),
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
            pass.checkpoints.push(LogCheckpoint { seq, head: prev });
            report.checkpoints += 1;
        }
        if parsed.record.event == EventKind::WitnessEpoch {
            report.witness_epochs.push(seq);
        }
        if let Some(anchor) = parsed.record.anchor {
            if anchor >= seq {
                return Err(fail(format!(
                    "it names record {anchor} as the log's start, which is not before it"
                )));
            }
            pass.prunes.push((seq, anchor));
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
    Ok(pass)
}

fn tampered(line: usize, seq: Option<u64>, why: impl Into<String>) -> VerifyError {
    VerifyError::Tampered(Finding {
        line,
        seq,
        why: why.into(),
        in_witness: false,
    })
}
