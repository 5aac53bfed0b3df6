//! The state directory's files, checked before a host opens them: a journal is never
//! re-created silently beside the state of an earlier run, and a state file others may read
//! or write is tightened to the owner alone before it is used.
//!
//! The journal is the record of which writes were sent. A host that finds it missing, empty
//! (0 bytes) or an empty database while the audit log, its witness or the shared store's
//! epoch of an earlier run lie beside it has lost that record: starting a fresh journal would send again
//! every write it had sent or escalated. It refuses to start, naming what it found, unless
//! the operator starts afresh on purpose ([`SluiceBuilder::fresh_journal`], `sluice serve
//! --fresh-journal`).
//!
//! [`SluiceBuilder::fresh_journal`]: super::SluiceBuilder::fresh_journal

use std::path::{Path, PathBuf};

use crate::journal::{Journal, Probe};

use super::error::BuildError;

/// Why a journal does not hold an earlier run's record.
fn lost(probe: Probe) -> Option<&'static str> {
    match probe {
        Probe::Missing => Some("is missing"),
        Probe::Empty => Some("is empty (0 bytes)"),
        Probe::Blank => Some("is an SQLite database with no journal in it"),
        Probe::Journal => None,
    }
}

/// The state an earlier run left (`others`: the audit log, its witness, the shared store's
/// epoch) that is there and not empty, each with its size.
fn earlier_state(others: &[PathBuf]) -> Vec<String> {
    others
        .iter()
        .filter_map(|p| {
            let meta = std::fs::metadata(p).ok()?;
            (meta.is_file() && meta.len() > 0)
                .then(|| format!("{} ({} bytes)", p.display(), meta.len()))
        })
        .collect()
}

/// Refuses a journal at `journal` that lost an earlier run's record while `others` show
/// there was one, unless `fresh` (then it is logged).
pub(super) fn check_journal(
    journal: &Path,
    others: &[PathBuf],
    fresh: bool,
) -> Result<(), BuildError> {
    let Some(why) = lost(Journal::probe(journal)?) else {
        return Ok(());
    };
    let found = earlier_state(others);
    if found.is_empty() {
        return Ok(()); // a first start
    }
    if fresh {
        tracing::warn!(
            journal = %journal.display(),
            earlier_state = %found.join(", "),
            "starting a fresh journal on purpose: the journal {why}; writes an earlier run \
             sent or escalated are no longer known to this host"
        );
        return Ok(());
    }
    Err(BuildError::JournalLost {
        journal: journal.to_path_buf(),
        why,
        found,
    })
}

/// Tightens each of `files` that exists and others may read or write to `0600`, logging
/// each one.
#[cfg(unix)]
pub(super) fn tighten(files: &[PathBuf]) -> Result<(), BuildError> {
    use std::os::unix::fs::PermissionsExt as _;
    for path in files {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o777;
        if !meta.is_file() || mode & 0o077 == 0 {
            continue;
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
            BuildError::StateDir {
                path: path.clone(),
                why: format!(
                    "others may read or write it (mode {mode:04o}) and it could not be made \
                     0600 ({e}): run `chmod 600 {}`",
                    path.display()
                ),
            }
        })?;
        tracing::warn!(
            file = %path.display(),
            "the state file was readable or writable by others (mode {mode:04o}): made it 0600"
        );
    }
    Ok(())
}

/// Tightens nothing where modes do not apply.
#[cfg(not(unix))]
pub(super) fn tighten(_files: &[PathBuf]) -> Result<(), BuildError> {
    Ok(())
}
