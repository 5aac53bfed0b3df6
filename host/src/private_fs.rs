//! Files and directories only their owner may touch.
//!
//! The journal holds payment bodies, the audit log is evidence, the audit key signs it, and the
//! compiled-component cache holds native code the host runs. None of them may follow the
//! umask: under `umask 000` a plain `create` makes a file anyone can rewrite. So state files
//! are created `0600` and state directories `0700` whatever the umask (a mode given at creation
//! is only ever narrowed by the umask, never widened), and a directory whose contents the host
//! will trust is first checked the way ssh checks its keys: owned by this user, and writable
//! by no one else.

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// The mode of every state file sluice creates.
pub const FILE_MODE: u32 = 0o600;
/// The mode of every state directory sluice creates.
pub const DIR_MODE: u32 = 0o700;

/// Creates `path` and any missing parents, each new one `0700`. Directories that already
/// exist are left as they are; check them with [`check_private_dir`] when their contents
/// are trusted.
///
/// # Errors
/// The I/O error of the first directory that could not be created.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

/// Options that create a file `0600` (when they create it at all); set the access mode and
/// creation flags on them as usual.
pub fn options() -> OpenOptions {
    #[allow(unused_mut, reason = "the mode is set on unix only")]
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    options
}

/// Why a directory cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum Exposure {
    /// The directory belongs to another user.
    #[error(
        "{path} belongs to user {owner}, not to the user running sluice ({me}); \
         use a directory you own"
    )]
    NotOwned {
        /// The directory.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// The effective uid of this process.
        me: u32,
    },
    /// Someone other than the owner can write to it.
    #[error(
        "{path} can be written by {who} (mode {mode:04o}); run: chmod go-w {path}",
        path = path.display()
    )]
    Writable {
        /// The directory.
        path: PathBuf,
        /// "its group", "other users", or both.
        who: &'static str,
        /// Its permission bits.
        mode: u32,
    },
    /// Its metadata could not be read.
    #[error("cannot inspect {path}: {error}", path = path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// What the system said (in the message, so not also a `source`).
        error: io::Error,
    },
}

/// Checks that `dir` is owned by the effective user and that neither its group nor other
/// users can write to it — what a directory must be before the host runs what it holds.
///
/// # Errors
/// [`Exposure`] naming the directory and what to do.
#[cfg(unix)]
pub fn check_private_dir(dir: &Path) -> Result<(), Exposure> {
    let meta = std::fs::metadata(dir).map_err(|error| Exposure::Io {
        path: dir.into(),
        error,
    })?;
    check_private(dir, &meta)
}

/// Checks `meta`, the metadata of `path` (a directory, or a file read through an open
/// handle), as [`check_private_dir`] checks a directory's.
///
/// # Errors
/// [`Exposure::NotOwned`] or [`Exposure::Writable`], whose messages advise on a directory:
/// a caller checking a file says what it does about it instead.
#[cfg(unix)]
pub fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), Exposure> {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(Exposure::NotOwned {
            path: path.into(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (false, false) => return Ok(()),
        (true, false) => "its group",
        (false, true) => "other users",
        (true, true) => "its group and other users",
    };
    Err(Exposure::Writable {
        path: path.into(),
        who,
        mode,
    })
}

/// Without unix permissions there is nothing to check.
#[cfg(not(unix))]
pub fn check_private_dir(_dir: &Path) -> Result<(), Exposure> {
    Ok(())
}

/// Without unix permissions there is nothing to check.
#[cfg(not(unix))]
pub fn check_private(_path: &Path, _meta: &std::fs::Metadata) -> Result<(), Exposure> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_files_and_directories_are_private_even_under_an_open_umask() {
        let tmp = tempfile::tempdir().unwrap();
        let old = rustix::process::umask(rustix::fs::Mode::empty());
        let dir = tmp.path().join("a/b");
        let made = create_dir_all(&dir);
        let file = dir.join("state");
        let opened = options().write(true).create_new(true).open(&file);
        rustix::process::umask(old);
        made.unwrap();
        opened.unwrap().write_all(b"x").unwrap();
        assert_eq!(mode_of(&tmp.path().join("a")), 0o700);
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(mode_of(&file), 0o600);
    }

    #[test]
    fn a_directory_others_can_write_is_refused_and_a_private_one_accepted() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        create_dir_all(&dir).unwrap();
        check_private_dir(&dir).unwrap();
        for (mode, who) in [
            (0o720, "its group"),
            (0o702, "other users"),
            (0o777, "its group and other users"),
        ] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = check_private_dir(&dir).unwrap_err();
            assert!(
                matches!(err, Exposure::Writable { who: w, .. } if w == who),
                "{err}"
            );
            assert!(err.to_string().contains("chmod go-w"), "{err}");
        }
        // Readable by others is not a reason to refuse: only writing lets them plant code.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        check_private_dir(&dir).unwrap();
    }
}
