//! Reading a file that a user, or a directory, named — without trusting what the path names.
//!
//! A path can name a fifo (opening it for reading waits for a writer that may never come), a
//! device (`/dev/zero` never ends, `/dev/urandom` neither), a symlink to either, or a regular
//! file of any size (a 33 MB configuration took 1.8 GB to parse). Each of these hung sluice or
//! grew it to gigabytes. So every file sluice reads because it was named — a configuration, an
//! audit key, log or witness, a vector file, a plugin's `.wasm`, a cached artifact — is:
//!
//! - opened without blocking, so a fifo answers at once instead of waiting for a writer;
//! - checked, on the opened handle (not the path, which may change between the two), to be a
//!   regular file: a directory, fifo, socket or device is [`InputFileError::NotAFile`];
//! - read only up to a bound its reader chooses, by [`read`]: a file larger than that is
//!   [`InputFileError::TooLarge`], found from its size and, should it grow while read, by
//!   reading at most one byte past the bound.
//!
//! [`open`] is for readers that stream and bound what they keep themselves (the audit log is
//! read line by line, each line capped).

use std::fmt;
use std::fs::File;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

/// A named file that was not read.
///
/// Each message starts with the path and says the cause once: the I/O error is part of the
/// message, not also a `source`, so that a caller may put it after words of its own
/// (`the key file {0}`).
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    /// The path names a directory, a fifo, a socket or a device, not a regular file.
    #[error(
        "{}: not a regular file (a directory, fifo or device): give the path of a file",
        path.display()
    )]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The file is larger than its reader accepts.
    #[error("{}: larger than {}, more than such a file ever needs", path.display(), Bytes(*max))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The largest size read, in bytes.
        max: u64,
    },
    /// The file could not be opened or read.
    #[error("{}: cannot read: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said (in the message, so not also a `source`).
        error: io::Error,
    },
}

impl InputFileError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::NotAFile { path } | Self::TooLarge { path, .. } | Self::Io { path, .. } => path,
        }
    }
}

/// Opens `path` for reading, without blocking, and only if it is a regular file (after
/// following symlinks): for readers that bound what they read themselves. (The
/// non-blocking flag it was opened with changes nothing for a regular file.)
///
/// # Errors
/// [`InputFileError::NotAFile`] for anything but a regular file; [`InputFileError::Io`] when
/// it cannot be opened or inspected.
pub fn open(path: &Path) -> Result<File, InputFileError> {
    let io = |error| InputFileError::Io {
        path: path.to_owned(),
        error,
    };
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Without blocking: opening a fifo for reading otherwise waits for a writer.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        rustix::fs::OFlags::NONBLOCK.bits().cast_signed(),
    );
    let file = options.open(path).map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(InputFileError::NotAFile {
            path: path.to_owned(),
        });
    }
    Ok(file)
}

/// The bytes of the regular file at `path`, which must be at most `max_bytes` long.
///
/// # Errors
/// As [`open`], and [`InputFileError::TooLarge`] past `max_bytes`.
pub fn read(path: &Path, max_bytes: u64) -> Result<Vec<u8>, InputFileError> {
    read_opened(open(path)?, path, max_bytes)
}

/// The bytes of `file`, which [`open`] opened from `path`, when it is at most `max_bytes`
/// long: for a caller that inspects the open file (its owner, its mode) before reading it.
///
/// # Errors
/// [`InputFileError::TooLarge`] past `max_bytes`; [`InputFileError::Io`] when reading fails.
pub fn read_opened(file: File, path: &Path, max_bytes: u64) -> Result<Vec<u8>, InputFileError> {
    let io = |error| InputFileError::Io {
        path: path.to_owned(),
        error,
    };
    let too_large = || InputFileError::TooLarge {
        path: path.to_owned(),
        max: max_bytes,
    };
    let len = file.metadata().map_err(io)?.len();
    if len > max_bytes {
        return Err(too_large());
    }
    // The size said is only a hint (the file may grow): read one byte past the bound at most.
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of the regular file at `path`, which must be at most `max_bytes` long.
///
/// # Errors
/// As [`read`]; text that is not UTF-8 is an [`InputFileError::Io`] that says where.
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, InputFileError> {
    String::from_utf8(read(path, max_bytes)?).map_err(|e| InputFileError::Io {
        path: path.to_owned(),
        error: io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ),
    })
}

/// A size in bytes, said in KiB or MiB when it is a whole number of them.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            n if n >= 1 << 20 && n % (1 << 20) == 0 => write!(f, "{} MiB", n >> 20),
            n if n >= 1 << 10 && n % (1 << 10) == 0 => write!(f, "{} KiB", n >> 10),
            n => write!(f, "{n} bytes"),
        }
    }
}

#[cfg(test)]
mod tests;
