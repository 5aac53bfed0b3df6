//! Reading an existing log back before appending to it: where its chain ends, how many
//! records follow its last checkpoint, and a torn last line (a crash mid-write) to cut away —
//! in the log and in the witness.

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader};
use std::path::Path;

use super::AuditError;
use super::record::{GENESIS, parse_line};

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
}

/// Reads the log through to find its last whole record and any torn tail.
pub(super) fn read_tail(file: &mut File, path: &Path) -> Result<Tail, AuditError> {
    let io = |source| AuditError::Io {
        path: path.into(),
        source,
    };
    let mut reader = BufReader::new(file);
    let (mut line, mut last) = (Vec::new(), Vec::new());
    let mut tail = Tail {
        lines: 0,
        len: 0,
        torn: 0,
        seq: 0,
        head: GENESIS,
        since_checkpoint: 0,
    };
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io)?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            tail.torn = n;
            break;
        }
        tail.lines += 1;
        tail.len += n as u64;
        tail.since_checkpoint = if is_checkpoint(&line) {
            0
        } else {
            tail.since_checkpoint.saturating_add(1)
        };
        std::mem::swap(&mut line, &mut last);
    }
    if tail.lines == 0 {
        return Ok(tail);
    }
    let malformed = |why: String| AuditError::Malformed {
        path: path.into(),
        line: tail.lines,
        why,
    };
    let parsed = parse_line(&last[..last.len() - 1]).map_err(malformed)?;
    if parsed.computed_hash() != Some(parsed.hash) {
        return Err(malformed(
            "its hash does not match its contents (edited?)".into(),
        ));
    }
    tail.seq = parsed.record.seq;
    tail.head = parsed.hash;
    Ok(tail)
}

/// Whether a whole line is a checkpoint record. The pattern cannot occur inside a JSON
/// string, where quotes are escaped.
fn is_checkpoint(line: &[u8]) -> bool {
    const PATTERN: &[u8] = br#""event":"checkpoint""#;
    line.windows(PATTERN.len()).any(|w| w == PATTERN)
}

/// Opens the witness for appending, cutting a torn last line as for the log.
pub(super) fn open_witness(path: &Path) -> Result<File, AuditError> {
    let io = |source| AuditError::Io {
        path: path.into(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)?;
    let data = std::fs::read(path).map_err(io)?;
    let whole = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if whole < data.len() {
        tracing::warn!(
            file = %path.display(),
            "the audit witness ends in a torn line (a crash mid-write); cutting it away"
        );
        file.set_len(whole as u64).map_err(io)?;
        file.sync_all().map_err(io)?;
    }
    Ok(file)
}
