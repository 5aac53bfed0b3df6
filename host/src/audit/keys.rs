//! Ed25519 key files for signing checkpoints.
//!
//! Both files are one line of text: `sluice-audit-secret-v1 <64 hex>` for the secret key and
//! `sluice-audit-public-v1 <64 hex>` for the public key, each created `0600` whatever the
//! umask (the public key is no secret, but whoever can replace it can make a rebuilt log
//! verify — see [`Fingerprint`]). Keep the secret key away from the log
//! (another volume or machine): whoever holds both can rewrite the log undetectably. The
//! verifier needs only the public key.
//!
//! A key need not touch the disk at all: [`AuditKey::generate`] makes one in memory, the
//! writer ([`AuditLog::open`](super::AuditLog::open)) takes it as a value, and only the public
//! half has to be written out ([`AuditKey::write_public`]) for the log to be checked. That is
//! how `sluice demo` runs: its key dies with the process.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use super::fingerprint::Fingerprint;
use super::record::{from_hex, to_hex};
use crate::input_file::{self, InputFileError};
use crate::private_fs;

/// The largest key file read, in bytes: a key file is one line of about 90 bytes, so
/// anything near this bound (`/dev/zero`, a log given by mistake) is not a key.
pub const MAX_KEY_FILE_BYTES: u64 = 4 << 10;

const SECRET_TAG: &str = "sluice-audit-secret-v1";
const PUBLIC_TAG: &str = "sluice-audit-public-v1";

/// The key that signs checkpoints. Its `Debug` shows only the key id; its secret bytes are
/// wiped from memory when it is dropped.
pub struct AuditKey {
    key: SigningKey,
}

impl fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditKey")
            .field("key_id", &self.key_id())
            .finish_non_exhaustive()
    }
}

impl AuditKey {
    /// A fresh key from the operating system's random source.
    ///
    /// # Errors
    /// [`KeyError::Random`] when the system has no random source to read.
    pub fn generate() -> Result<Self, KeyError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
        let key = Self::from_bytes(&secret);
        // The signing key wipes itself on drop; wipe this copy too (best effort).
        secret.fill(0);
        std::hint::black_box(&secret);
        Ok(key)
    }

    /// A secret for `purpose` derived from this key (HMAC-SHA-256 under the signing key's
    /// secret bytes): kept as the key is, so a host whose state directory was lost derives
    /// the same one again. The signing key cannot be recovered from it.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        use hmac::Mac as _;
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(self.key.as_bytes())
            .expect("HMAC takes a key of any length");
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The key with these 32 secret bytes (for tests and for loading).
    pub fn from_bytes(secret: &[u8; 32]) -> Self {
        Self {
            key: SigningKey::from_bytes(secret),
        }
    }

    /// The public half, which verifies what this key signs.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The public key's id: the first 16 hex digits of SHA-256 of its bytes.
    pub fn key_id(&self) -> String {
        key_id(&self.verifying_key())
    }

    /// The public key's full fingerprint, which `verify` prints and can be pinned to.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.verifying_key())
    }

    /// Writes the secret key to `path`, a new file created `0600`.
    ///
    /// # Errors
    /// [`KeyError::Exists`] if the file exists; [`KeyError::Io`] naming it otherwise.
    pub fn write_secret(&self, path: &Path) -> Result<(), KeyError> {
        let line = format!("{SECRET_TAG} {}\n", to_hex(self.key.as_bytes()));
        write_new(path, line.as_bytes())
    }

    /// Writes the public key to `path`, a new file created `0600`.
    ///
    /// # Errors
    /// [`KeyError::Exists`] if the file exists; [`KeyError::Io`] naming it otherwise.
    pub fn write_public(&self, path: &Path) -> Result<(), KeyError> {
        let line = format!("{PUBLIC_TAG} {}\n", to_hex(self.verifying_key().as_bytes()));
        write_new(path, line.as_bytes())
    }

    /// Signs `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> Signature {
        self.key.sign(message)
    }
}

/// The id of a public key: the first 16 hex digits of SHA-256 of its 32 bytes.
pub fn key_id(key: &VerifyingKey) -> String {
    let digest = Sha256::digest(key.as_bytes());
    to_hex(&digest[..8])
}

/// A key file that could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file could not be written.
    #[error("the key file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file could not be read: missing, not a regular file, or larger than
    /// `MAX_KEY_FILE_BYTES`.
    #[error("the key file {0}")]
    Read(InputFileError),
    /// `generate` will not replace a key.
    #[error("the key file {path} exists already; refusing to overwrite a key (move it away first)")]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a key of the kind asked for.
    #[error("the key file {path}: {why}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// No random source to make a key from.
    #[error("no random source for a new key: {0}")]
    Random(String),
}

/// Makes a new key pair: the secret key into `secret` and the public key into `public`, both
/// created `0600` whatever the umask. Neither file may exist.
///
/// # Errors
/// [`KeyError::Exists`] if either file exists; [`KeyError::Io`] naming the file that failed.
pub fn generate(secret: &Path, public: &Path) -> Result<AuditKey, KeyError> {
    for path in [secret, public] {
        if path.exists() {
            return Err(KeyError::Exists { path: path.into() });
        }
    }
    let key = AuditKey::generate()?;
    key.write_secret(secret)?;
    if let Err(e) = key.write_public(public) {
        // Leave no secret behind without its public half: the user can simply retry.
        let _ = std::fs::remove_file(secret);
        return Err(e);
    }
    Ok(key)
}

/// Creates `path` (which must not exist) `0600` with `contents`, synced.
fn write_new(path: &Path, contents: &[u8]) -> Result<(), KeyError> {
    let io = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            KeyError::Exists { path: path.into() }
        } else {
            KeyError::Io {
                path: path.into(),
                source,
            }
        }
    };
    let mut file = private_fs::options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io)?;
    file.write_all(contents).map_err(io)?;
    file.sync_all().map_err(io)
}

/// Loads the secret key that signs checkpoints.
///
/// # Errors
/// [`KeyError`] naming the file: unreadable (or not a regular file of at most
/// [`MAX_KEY_FILE_BYTES`]), or not a `sluice-audit-secret-v1` key.
pub fn load_signing(path: &Path) -> Result<AuditKey, KeyError> {
    warn_if_readable_by_others(path);
    let bytes = read_key(path, SECRET_TAG, PUBLIC_TAG, "a public key")?;
    Ok(AuditKey::from_bytes(&bytes))
}

/// Loads the public key that verifies checkpoints.
///
/// # Errors
/// [`KeyError`] naming the file: unreadable (or not a regular file of at most
/// [`MAX_KEY_FILE_BYTES`]), not a `sluice-audit-public-v1` key, or not a valid Ed25519 public
/// key.
pub fn load_verifying(path: &Path) -> Result<VerifyingKey, KeyError> {
    let bytes = read_key(path, PUBLIC_TAG, SECRET_TAG, "the secret key")?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError::Malformed {
        path: path.into(),
        why: "the 32 bytes are not a valid Ed25519 public key".into(),
    })
}

/// Reads `<tag> <64 hex>`; `other` is the tag of the other kind of key file, named `what`.
fn read_key(path: &Path, tag: &str, other: &str, what: &str) -> Result<[u8; 32], KeyError> {
    let malformed = |why: String| KeyError::Malformed {
        path: path.into(),
        why,
    };
    // A regular file of a few KiB, opened without blocking: not a fifo, not `/dev/zero`.
    let text = input_file::read_text(path, MAX_KEY_FILE_BYTES).map_err(KeyError::Read)?;
    let (found, hex) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
    if found == other {
        return Err(malformed(format!("it holds {what}, not a `{tag}` key")));
    }
    if found != tag {
        return Err(malformed(format!(
            "it does not start with `{tag}` (make one with `sluice audit keygen`)"
        )));
    }
    from_hex::<32>(hex.trim()).ok_or_else(|| {
        malformed(format!(
            "after `{tag}` it must hold 64 hex digits, found {} characters",
            hex.trim().len()
        ))
    })
}

/// A secret key that others can read is a key others may hold.
fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::PermissionsExt as _;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                file = %path.display(),
                "the audit secret key is readable by other users; chmod 600 it"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}
