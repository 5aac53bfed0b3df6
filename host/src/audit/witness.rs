//! The verifier's second pass: the witness against the log's checkpoints (the rules are in
//! the [audit](super) module's documentation).

use std::path::Path;

use ed25519_dalek::VerifyingKey;

use super::findings::{Finding, LogCheckpoint, Report, VerifyError, check_checkpoint, unreadable};
use super::lines::{self, Line, too_long};
use super::record::{from_hex, parse_line};

/// What the witness showed.
pub(super) struct Witnessed {
    /// Witness checkpoints found in the log.
    pub found: u64,
    /// The log's last checkpoint is not in the witness yet (accepted for a live log only).
    pub behind: bool,
}

/// Holds the witness at `path` to the log's checkpoints `log` (in order) and its `report`.
pub(super) fn check(
    path: &Path,
    key: &VerifyingKey,
    log: &[LogCheckpoint],
    report: &Report,
    allow_open_tail: bool,
) -> Result<Witnessed, VerifyError> {
    let mut lines = lines::open(path).map_err(unreadable("witness"))?;
    // The next log checkpoint the witness must hold.
    let mut next = 0;
    // The seq of the witness's last checkpoint so far.
    let mut end: Option<u64> = None;
    let mut found = 0;
    while let Some((n, line)) = lines
        .next_line()
        .map_err(lines::read_error(path))
        .map_err(unreadable("witness"))?
    {
        let fail = |why: String| finding(n, why);
        let text = match line {
            Line::Whole(text) => text,
            Line::Torn(_) if allow_open_tail => break,
            Line::Torn(_) => return Err(fail("the last line is incomplete (a torn write)".into())),
            Line::TooLong => return Err(fail(too_long())),
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
        let seq = parsed.record.seq;
        check_checkpoint(cp, seq, &prev, key).map_err(fail)?;
        if let Some(before) = end
            && seq <= before
        {
            return Err(fail(format!(
                "the checkpoint at record {seq} is not after the one before it (record \
                 {before}): the witness was reordered or edited"
            )));
        }
        end = Some(seq);
        if seq < report.first_seq {
            continue; // pruned from the log
        }
        if report
            .witness_epochs
            .last()
            .is_some_and(|&epoch| seq <= epoch)
        {
            continue; // before the witness was started afresh: reported, not vouched for
        }
        let covers = cp.covers;
        match log.get(next) {
            Some(ours) if ours.seq == seq => {
                if ours.head != prev {
                    return Err(fail(format!(
                        "the log's checkpoint covering record {covers} differs from the \
                         witness's: the log was rewritten"
                    )));
                }
                found += 1;
                next += 1;
            }
            Some(ours) if ours.seq < seq => {
                return Err(fail(format!(
                    "it lacks the log's checkpoint at record {}: lines were deleted from the \
                     witness or reordered, or it is not this log's witness",
                    ours.seq
                )));
            }
            _ if covers >= report.last_seq => {
                return Err(fail(format!(
                    "the log lacks checkpoint covering record {covers} recorded in the \
                     witness: its tail was deleted"
                )));
            }
            _ => {
                return Err(fail(format!(
                    "the log lacks checkpoint covering record {covers} recorded in the \
                     witness: the log was rewritten"
                )));
            }
        }
    }
    let missing = &log[next..];
    let Some(first) = missing.first() else {
        return Ok(Witnessed {
            found,
            behind: false,
        });
    };
    match end {
        None => Err(finding(
            0,
            format!("it holds no checkpoint, but the log has {}", log.len()),
        )),
        // The writer copies a checkpoint to the witness just after writing it to the log.
        Some(_) if allow_open_tail && missing.len() == 1 => Ok(Witnessed {
            found,
            behind: true,
        }),
        Some(end) => Err(finding(
            0,
            format!(
                "it ends at the checkpoint at record {end}, but the log goes on to {} more (the \
                 first at record {}): the witness was cut short, or it is not this log's \
                 witness",
                missing.len(),
                first.seq
            ),
        )),
    }
}

fn finding(line: usize, why: String) -> VerifyError {
    VerifyError::Tampered(Finding {
        line,
        seq: None,
        why,
        in_witness: true,
    })
}
