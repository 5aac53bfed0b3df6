//! Reading an existing log back before appending to it: where its chain ends, how many
//! records follow its last checkpoint, and a torn last line (a crash mid-write) to cut away —
//! in the log and in the witness.

use std::fs::File;
use std::io::{BufReader, Seek as _, SeekFrom, Write as _};
use std::path::Path;

use super::AuditError;
use super::lines::{Line, Lines, too_long};
use super::record::{GENESIS, parse_line};
use crate::private_fs;

/// What [`read_tail`] found.
pub(super) struct Tail {
    /// Whole lines.
    pub lines: usize,
    /// Their bytes.
    pub len: u64,
    /// Bytes after the last newline: a torn write.
    pub torn: usize,
    /// The seq of the last whole record, 0 for none.
    pub seq: u64,
    /// Its hash, [`GENESIS`] for none.
    pub head: [u8; 32],
    /// Records after the last checkpoint.
    pub since_checkpoint: u32,
    /// The seq of the last checkpoint, if there is one.
    pub last_checkpoint: Option<u64>,
    /// The journal's mark the last record that names one names.
    pub journal: Option<super::JournalMark>,
}

/// Reads the log through to find its last whole record and any torn tail.
pub(super) fn read_tail(file: &mut File, path: &Path) -> Result<Tail, AuditError> {
    let io = |source| AuditError::Io {
        path: path.into(),
        source,
    };
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut lines = Lines::new(BufReader::new(file));
    let mut last = Vec::new();
    let mut tail = Tail {
        lines: 0,
        len: 0,
        torn: 0,
        seq: 0,
        head: GENESIS,
        since_checkpoint: 0,
        last_checkpoint: None,
        journal: None,
    };
    let mut seen_checkpoint = false;
    let mut last_marked = Vec::new();
    while let Some((n, line)) = lines.next_line().map_err(io)? {
        match line {
            Line::Whole(text) => {
                tail.lines = n;
                tail.len += text.len() as u64 + 1;
                if is_checkpoint(text) {
                    tail.since_checkpoint = 0;
                    seen_checkpoint = true;
                } else {
                    tail.since_checkpoint = tail.since_checkpoint.saturating_add(1);
                }
                if names_a_journal(text) {
                    last_marked.clear();
                    last_marked.extend_from_slice(text);
                }
                last.clear();
                last.extend_from_slice(text);
            }
            Line::Torn(text) => {
                tail.torn = text.len();
                break;
            }
            Line::TooLong => {
                return Err(AuditError::Malformed {
                    path: path.into(),
                    line: n,
                    why: too_long(),
                });
            }
        }
    }
    if tail.lines == 0 {
        return Ok(tail);
    }
    let malformed = |why: String| AuditError::Malformed {
        path: path.into(),
        line: tail.lines,
        why,
    };
    let parsed = parse_line(&last).map_err(malformed)?;
    if parsed.computed_hash() != Some(parsed.hash) {
        return Err(malformed(
            "its hash does not match its contents (edited?)".into(),
        ));
    }
    tail.seq = parsed.record.seq;
    tail.head = parsed.hash;
    if !last_marked.is_empty() {
        // Checked as a record like the last one; its chain is `sluice audit verify`'s work.
        tail.journal = parse_line(&last_marked).map_err(malformed)?.record.journal;
    }
    if seen_checkpoint {
        tail.last_checkpoint = Some(tail.seq - u64::from(tail.since_checkpoint));
    }
    Ok(tail)
}

/// Whether a whole line names a journal's mark. The pattern cannot occur inside a JSON
/// string, where quotes are escaped.
fn names_a_journal(line: &[u8]) -> bool {
    const PATTERN: &[u8] = br#""journal":{"#;
    line.windows(PATTERN.len()).any(|w| w == PATTERN)
}

/// Whether a whole line is a checkpoint record. The pattern cannot occur inside a JSON
/// string, where quotes are escaped.
fn is_checkpoint(line: &[u8]) -> bool {
    const PATTERN: &[u8] = br#""event":"checkpoint""#;
    line.windows(PATTERN.len()).any(|w| w == PATTERN)
}

/// Opens the witness of the log at `log` (whose end is `tail`) for appending: cuts a torn
/// last line as for the log, refuses a witness that is ahead of the log, and copies to it the
/// checkpoint a crash between the two writes left out (the log's last record). A witness
/// that lacks more — missing, emptied, cut short — is refused ([`AuditError::WitnessLost`]),
/// unless `new_epoch`: then nothing is copied, and the number of checkpoints it lacks is
/// returned for the log to record the new epoch.
pub(super) fn open_witness(
    path: &Path,
    log: &Path,
    tail: &Tail,
    new_epoch: bool,
) -> Result<(File, Option<usize>), AuditError> {
    let io = |source| AuditError::Io {
        path: path.into(),
        source,
    };
    let mut file = private_fs::options()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)?;
    let end = witness_end(&mut file, path)?;
    if end.torn {
        tracing::warn!(
            file = %path.display(),
            "the audit witness ends in a torn line (a crash mid-write); cutting it away"
        );
        file.set_len(end.len).map_err(io)?;
        file.sync_all().map_err(io)?;
    }
    if let Some(seq) = end.last_seq
        && seq > tail.seq
    {
        return Err(AuditError::WitnessAhead {
            log: log.into(),
            witness: path.into(),
            log_seq: tail.seq,
            witness_seq: seq,
        });
    }
    let Some(last_checkpoint) = tail.last_checkpoint.filter(|&cp| Some(cp) > end.last_seq) else {
        return Ok((file, None));
    };
    let missing = checkpoints_after(log, end.last_seq.unwrap_or(0))?;
    // A crash between the log's write and the witness's leaves out one checkpoint, the
    // log's last record: nothing is appended before the witness has it. An empty witness
    // is never taken for that, even beside a log of one checkpoint: refilled, it would
    // vouch for a log cut back to that checkpoint.
    let crash = missing.len() == 1 && tail.since_checkpoint == 0 && end.last_seq.is_some();
    if !crash {
        if new_epoch {
            return Ok((file, Some(missing.len())));
        }
        return Err(AuditError::WitnessLost {
            log: log.into(),
            witness: path.into(),
            lacks: missing.len(),
            last_checkpoint,
        });
    }
    let write_err = |source| AuditError::Io {
        path: path.into(),
        source,
    };
    file.write_all(&missing.concat()).map_err(write_err)?;
    file.sync_data().map_err(write_err)?;
    tracing::info!(
        file = %path.display(),
        "copied to the audit witness the log's last checkpoint, which a crash left out"
    );
    Ok((file, None))
}

/// Where a witness ends.
struct WitnessEnd {
    /// The bytes of its whole lines.
    len: u64,
    /// Whether bytes follow them (a torn write).
    torn: bool,
    /// The seq of its last checkpoint, if it has one.
    last_seq: Option<u64>,
}

fn witness_end(file: &mut File, path: &Path) -> Result<WitnessEnd, AuditError> {
    let mut lines = Lines::new(BufReader::new(file));
    let mut end = WitnessEnd {
        len: 0,
        torn: false,
        last_seq: None,
    };
    let mut last = Vec::new();
    let mut line_no = 0;
    while let Some((n, line)) = lines.next_line().map_err(|source| AuditError::Io {
        path: path.into(),
        source,
    })? {
        match line {
            Line::Whole(text) => {
                end.len += text.len() as u64 + 1;
                line_no = n;
                last.clear();
                last.extend_from_slice(text);
            }
            Line::Torn(_) => end.torn = true,
            Line::TooLong => {
                return Err(AuditError::Malformed {
                    path: path.into(),
                    line: n,
                    why: too_long(),
                });
            }
        }
    }
    if line_no > 0 {
        let parsed = parse_line(&last).map_err(|why| AuditError::Malformed {
            path: path.into(),
            line: line_no,
            why,
        })?;
        end.last_seq = Some(parsed.record.seq);
    }
    Ok(end)
}

/// Every checkpoint line of the log at `log` after record `after`, each with its newline.
fn checkpoints_after(log: &Path, after: u64) -> Result<Vec<Vec<u8>>, AuditError> {
    let read_err = |source| AuditError::Io {
        path: log.into(),
        source,
    };
    let mut lines = Lines::new(BufReader::new(File::open(log).map_err(read_err)?));
    let mut found = Vec::new();
    while let Some((_, line)) = lines.next_line().map_err(read_err)? {
        let Line::Whole(text) = line else { break };
        if !is_checkpoint(text) {
            continue;
        }
        if parse_line(text).is_ok_and(|p| p.record.seq > after) {
            let mut copy = text.to_vec();
            copy.push(b'\n');
            found.push(copy);
        }
    }
    Ok(found)
}
