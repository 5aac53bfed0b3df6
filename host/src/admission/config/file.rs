//! Reading a configuration file without trusting what the path names.
//!
//! A path can name a fifo (reading it waits for a writer that may never come), a device
//! (`/dev/zero` never ends), or a file of any size (a 33 MB file took 1.8 GB to parse). So the
//! file is opened without blocking, must be a regular file, and is read only up to
//! [`MAX_FILE_BYTES`].

use std::io::Read as _;
use std::path::Path;

use super::ConfigError;

/// The largest configuration file read, in bytes (1 MiB: thousands of scopes and tenants).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The text of the configuration file at `path`.
///
/// # Errors
/// [`ConfigError::NotAFile`], [`ConfigError::TooLarge`], or [`ConfigError::Read`] (which
/// also covers text that is not UTF-8), each naming the file.
pub(super) fn read(path: &Path) -> Result<String, ConfigError> {
    let name = || path.display().to_string();
    let io = |error| ConfigError::Read {
        path: name(),
        error,
    };
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Without blocking: opening a fifo for reading otherwise waits for a writer. The flag
    // changes nothing for a regular file, the only kind read below.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        rustix::fs::OFlags::NONBLOCK.bits().cast_signed(),
    );
    let file = options.open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(ConfigError::NotAFile { path: name() });
    }
    let too_large = || ConfigError::TooLarge {
        path: name(),
        max: MAX_FILE_BYTES,
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    // The file may grow after the check: read one byte past the bound at most.
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        ))
    })
}
