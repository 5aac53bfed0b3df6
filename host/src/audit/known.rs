//! The actions a log knows: what a host that lost its journal's record of them can still
//! tell from its audit log, which was written beside the journal and kept apart from it.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

use super::AuditError;
use super::lines::{Line, Lines, open, too_long};
use super::record::parse_line;

/// An action the log names, as its records describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownAction {
    /// Its task.
    pub task: String,
    /// Its name within the task.
    pub action: String,
    /// The idempotency key it was sent with (the last record's).
    pub idempotency_key: String,
    /// The journal's mark as its last record that names one names: how far the journal had
    /// gone when the action last moved.
    pub last_mark: Option<super::JournalMark>,
}

/// Every action the log at `path` names (a record with a task, an action and a key), in the
/// order of their first record. Whole lines only: a torn last line is left out.
///
/// # Errors
/// [`AuditError::Io`] naming the file; [`AuditError::Malformed`] naming a line that is not a
/// record.
pub fn known_actions(path: &Path) -> Result<Vec<KnownAction>, AuditError> {
    let io = |source| AuditError::Io {
        path: path.into(),
        source,
    };
    let mut lines: Lines<BufReader<std::fs::File>> = open(path).map_err(|e| AuditError::Io {
        path: path.into(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let mut found: Vec<KnownAction> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    while let Some((n, line)) = lines.next_line().map_err(io)? {
        let text = match line {
            Line::Whole(text) => text,
            Line::Torn(_) => break,
            Line::TooLong => {
                return Err(AuditError::Malformed {
                    path: path.into(),
                    line: n,
                    why: too_long(),
                });
            }
        };
        let record = parse_line(text)
            .map_err(|why| AuditError::Malformed {
                path: path.into(),
                line: n,
                why,
            })?
            .record;
        let (Some(task), Some(action), Some(key)) =
            (record.task, record.action, record.idempotency_key)
        else {
            continue;
        };
        match at.get(&(task.clone(), action.clone())) {
            Some(&i) => {
                found[i].idempotency_key = key;
                if record.journal.is_some() {
                    found[i].last_mark = record.journal;
                }
            }
            None => {
                at.insert((task.clone(), action.clone()), found.len());
                found.push(KnownAction {
                    task,
                    action,
                    idempotency_key: key,
                    last_mark: record.journal,
                });
            }
        }
    }
    Ok(found)
}
