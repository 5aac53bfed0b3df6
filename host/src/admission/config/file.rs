//! Reading a configuration file without trusting what the path names: a regular file of at
//! most [`MAX_FILE_BYTES`], opened without blocking ([`crate::input_file`] says why).

use std::path::Path;

use super::ConfigError;
use crate::input_file::{self, InputFileError};

/// The largest configuration file read, in bytes (1 MiB: thousands of scopes and tenants).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The text of the configuration file at `path`.
///
/// # Errors
/// [`ConfigError::NotAFile`], [`ConfigError::TooLarge`], or [`ConfigError::Read`] (which
/// also covers text that is not UTF-8), each naming the file.
pub(crate) fn read(path: &Path) -> Result<String, ConfigError> {
    input_file::read_text(path, MAX_FILE_BYTES).map_err(|e| match e {
        InputFileError::NotAFile { path } => ConfigError::NotAFile {
            path: path.display().to_string(),
        },
        InputFileError::TooLarge { path, max } => ConfigError::TooLarge {
            path: path.display().to_string(),
            max,
        },
        InputFileError::Io { path, error } => ConfigError::Read {
            path: path.display().to_string(),
            error,
        },
    })
}
