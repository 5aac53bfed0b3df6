//! A credential's header (or a SigV4 credential's keys) kept between sends.
//!
//! From an environment variable: read at the first send that finds it, then kept. A running
//! process's environment changes only by its own hand, and sluice never sets a variable, so
//! what is kept is what a read would give.
//!
//! From a file: kept while the file is the same file, unchanged:
//! each send asks the file system for the file's identity (device, inode, size, modification
//! and change times — one `stat`), and reads the file again only when one of them moved. A
//! rotated file (written in place, or a new file renamed over it, as secret managers and
//! Kubernetes do) is read at the next send, as before; a send no longer opens and reads the
//! file when nothing changed. (A rewrite in place to the same size within one tick of the
//! file system's clock leaves the identity as it was; it is read once the file changes
//! again.)

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use super::{CredentialError, CredentialSource};

/// What identifies one version of a file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Identity {
    /// The identity of the file at `path` now; `None` where it cannot be asked (then the
    /// file is read at every send).
    #[cfg(unix)]
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        })
    }

    #[cfg(not(unix))]
    fn of(_path: &Path) -> Option<Self> {
        None
    }
}

/// What was last read from a credential file (a header, a set of AWS keys), and the identity
/// of what it was read from; or what was read from the environment.
pub(super) struct Kept<T = Header> {
    file: Mutex<Option<(Identity, T)>>,
    env: OnceLock<T>,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Self {
            file: Mutex::new(None),
            env: OnceLock::new(),
        }
    }
}

/// A credential's one header, as it is lent to each send.
pub(super) type Header = Arc<[(String, String)]>;

/// Never shows the secret.
impl<T> std::fmt::Debug for Kept<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kept")
    }
}

impl Kept {
    /// `source`'s header, whose secret is in an environment variable: the one kept, else
    /// read now (and kept when it could be read; a variable missing is looked for again at
    /// the next send, and said so each time).
    pub(super) fn env_header(&self, source: &CredentialSource) -> Result<Header, CredentialError> {
        self.kept_from_env(|| Ok(Arc::new([source.header_value()?])))
    }

    /// `source`'s header, whose secret is in the file at `path`: the one kept when the file
    /// is unchanged, else read now (and kept).
    pub(super) fn header(
        &self,
        source: &CredentialSource,
        path: &Path,
    ) -> Result<Header, CredentialError> {
        self.kept_from_file(path, || Ok(Arc::new([source.header_value()?])))
    }
}

impl<T: Clone> Kept<T> {
    /// What `read` gives from the environment: the one kept, else read now (and kept when
    /// it could be read).
    pub(super) fn kept_from_env(
        &self,
        read: impl FnOnce() -> Result<T, CredentialError>,
    ) -> Result<T, CredentialError> {
        if let Some(kept) = self.env.get() {
            return Ok(kept.clone());
        }
        let value = read()?;
        Ok(self.env.get_or_init(|| value).clone())
    }

    /// What `read` gives from the file at `path`: the one kept when the file is unchanged,
    /// else read now (and kept).
    pub(super) fn kept_from_file(
        &self,
        path: &Path,
        read: impl FnOnce() -> Result<T, CredentialError>,
    ) -> Result<T, CredentialError> {
        // Asked before the read: a change during the read moves the identity, and the next
        // send reads again.
        let now = Identity::of(path);
        let mut kept = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let (Some(now), Some((was, value))) = (now, kept.as_ref())
            && now == *was
        {
            return Ok(value.clone());
        }
        let value = read();
        *kept = match (&value, now) {
            (Ok(v), Some(now)) => Some((now, v.clone())),
            _ => None,
        };
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_file_is_not_read_again_and_a_changed_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "first").unwrap();
        let source = CredentialSource::file(&path);
        let kept = Kept::default();
        assert_eq!(kept.header(&source, &path).unwrap()[0].1, "Bearer first");
        // Unchanged: what is kept is used. (A marker stands in for it, so a read would show.)
        let identity = Identity::of(&path);
        if let Some(identity) = identity {
            let marker: Header = Arc::new([("authorization".to_owned(), "kept".to_owned())]);
            *kept.file.lock().unwrap() = Some((identity, marker.clone()));
            // Lent, not copied.
            assert!(Arc::ptr_eq(&kept.header(&source, &path).unwrap(), &marker));
            assert_eq!(kept.header(&source, &path).unwrap()[0].1, "kept");
        }
        // Written in place.
        std::fs::write(&path, "second-secret").unwrap();
        assert_eq!(
            kept.header(&source, &path).unwrap()[0].1,
            "Bearer second-secret"
        );
        // A new file renamed over it, of the same size.
        let next = dir.path().join("key.new");
        std::fs::write(&next, "third-secret!").unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert_eq!(
            kept.header(&source, &path).unwrap()[0].1,
            "Bearer third-secret!"
        );
        // Gone: the error, and nothing kept.
        std::fs::remove_file(&path).unwrap();
        assert!(kept.header(&source, &path).is_err());
        assert!(kept.file.lock().unwrap().is_none());
    }

    #[test]
    fn an_environment_variable_is_read_once_and_a_missing_one_at_every_send() {
        let missing = CredentialSource::env("SLUICE_TEST_NO_SUCH_VARIABLE_EVER");
        let kept = Kept::default();
        assert!(matches!(
            kept.env_header(&missing),
            Err(CredentialError::MissingEnv(_))
        ));
        assert!(kept.env.get().is_none());
        // Every test process has a PATH.
        let source = CredentialSource::env("PATH");
        let path = std::env::var("PATH").unwrap();
        let kept = Kept::default();
        let first = kept.env_header(&source).unwrap();
        assert_eq!(
            first[..],
            [(
                "authorization".to_owned(),
                format!("Bearer {}", path.trim())
            )]
        );
        // Kept, and lent to the next send without a copy.
        assert!(Arc::ptr_eq(kept.env.get().unwrap(), &first));
        assert!(Arc::ptr_eq(&kept.env_header(&source).unwrap(), &first));
        // A marker put in its place is what the next send gets: it is not read again.
        let kept = Kept::default();
        let marker: Header = Arc::new([("authorization".to_owned(), "kept".to_owned())]);
        kept.env.set(marker.clone()).unwrap();
        assert!(Arc::ptr_eq(&kept.env_header(&source).unwrap(), &marker));
    }
}
