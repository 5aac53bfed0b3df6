//! What a run writes outside its state directory: the JSON report and a kept signing key.
//!
//! Both are checked before the run starts, and before a state directory is made: a path that
//! cannot be written would otherwise be named only after minutes of work, or leave an empty
//! state directory behind. Neither ever replaces a file the user had — an audit log given
//! as `--json` by mistake stays an audit log — and the JSON report appears whole or not at
//! all: it is written to a temporary file beside it and renamed into place, which also fails
//! if a file took the name while the run went on.
//!
//! A kept signing key must live apart from the log it signs: whoever can rewrite the state
//! directory could otherwise re-sign what they rewrote with the key they found beside it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Where the JSON report goes: a new file in an existing directory.
#[derive(Debug)]
pub struct JsonReport {
    path: PathBuf,
    dir: PathBuf,
}

impl JsonReport {
    /// Checks that `path` names no existing file and that its directory exists.
    ///
    /// # Errors
    /// When `path` exists, or its directory does not.
    pub fn check(path: &Path) -> anyhow::Result<Self> {
        if path.symlink_metadata().is_ok() {
            anyhow::bail!(
                "--json {}: the path exists already; remove it or choose another path",
                path.display()
            );
        }
        let dir = parent_of(path);
        if !dir.is_dir() {
            anyhow::bail!(
                "--json {}: the directory {} does not exist; create it or choose another path",
                path.display(),
                dir.display()
            );
        }
        Ok(Self {
            path: path.to_owned(),
            dir,
        })
    }

    /// Writes `json` to a temporary file beside the report's path and renames it there.
    ///
    /// # Errors
    /// When the file cannot be written, or a file took its path during the run.
    pub fn write(&self, json: &str) -> anyhow::Result<()> {
        let context = || format!("write the JSON report to {}", self.path.display());
        let mut file = tempfile::Builder::new()
            .prefix(".sluice-demo-report-")
            .tempfile_in(&self.dir)
            .with_context(context)?;
        file.write_all(json.as_bytes())
            .and_then(|()| file.as_file().sync_all())
            .with_context(context)?;
        file.persist_noclobber(&self.path)
            .map_err(|e| e.error)
            .with_context(context)?;
        Ok(())
    }
}

/// Checks `key`, where `--keep-audit-key` would write the signing key of the log kept in
/// `state_dir`: a new file, in an existing directory, outside the state directory.
///
/// # Errors
/// When `key` exists, lies inside `state_dir`, or its directory does not exist.
pub fn check_kept_key(key: &Path, state_dir: &Path) -> anyhow::Result<()> {
    if key.symlink_metadata().is_ok() {
        anyhow::bail!(
            "--keep-audit-key {}: the file exists already; refusing to overwrite a key",
            key.display()
        );
    }
    let dir = parent_of(key);
    if resolve(&dir).starts_with(resolve(state_dir)) {
        anyhow::bail!(
            "--keep-audit-key {} is inside the state directory {}: keep the signing key apart \
             from the log it signs (whoever can rewrite the log could re-sign it with a key \
             found beside it)",
            key.display(),
            state_dir.display()
        );
    }
    if !dir.is_dir() {
        anyhow::bail!(
            "--keep-audit-key {}: the directory {} does not exist; create it or choose another \
             path",
            key.display(),
            dir.display()
        );
    }
    Ok(())
}

/// The directory `path` is in (`.` for a bare file name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// `path` made absolute with its existing part resolved (symbolic links, `..`), for a path
/// that may not exist yet: the canonical form of its deepest existing ancestor, followed by
/// the rest as given.
fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut rest = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, name| p.join(name));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_inside_the_state_directory_is_refused_whether_or_not_it_exists_yet() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        for (key, inside) in [
            (state.join("audit.key"), true),
            (state.join("sub/audit.key"), true),
            (tmp.path().join("audit.key"), false),
        ] {
            let said = check_kept_key(&key, &state).map_err(|e| e.to_string());
            assert_eq!(
                said.as_ref().is_err_and(|e| e.contains("inside the state")),
                inside,
                "{key:?}: {said:?}"
            );
        }
        std::fs::create_dir_all(state.join("sub")).unwrap();
        for key in [state.join("k"), state.join("sub/../k")] {
            let err = check_kept_key(&key, &state).unwrap_err();
            assert!(err.to_string().contains("inside the state"), "{err}");
        }
    }

    #[test]
    fn a_key_in_a_missing_directory_is_named_before_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let err = check_kept_key(&tmp.path().join("nodir/k"), &tmp.path().join("state"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn the_json_report_never_replaces_a_file_and_appears_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let taken = tmp.path().join("audit.log");
        std::fs::write(&taken, "evidence").unwrap();
        let err = JsonReport::check(&taken).unwrap_err().to_string();
        assert!(err.contains("remove it or choose another path"), "{err}");
        let err = JsonReport::check(&tmp.path().join("nodir/r.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");

        let path = tmp.path().join("r.json");
        let report = JsonReport::check(&path).unwrap();
        report.write("{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        // A file that took the path during the run is kept, not replaced.
        std::fs::write(&path, "theirs").unwrap();
        assert!(report.write("{}").is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "theirs");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
    }
}
