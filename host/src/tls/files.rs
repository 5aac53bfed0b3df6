//! The certificate files of a connection to a service the hosts of a group share: the CA
//! its server's certificate must be signed by, and the certificate and key this host shows
//! a server that asks for one. Each is read whole and checked here, so that a missing file,
//! a file that is not PEM, or a key that does not go with its certificate is named when the
//! configuration is loaded, not at the first connection.

use std::path::{Path, PathBuf};

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::pem::PemError;
use crate::input_file::InputFileError;

/// The largest certificate or key file read, in bytes: the whole Mozilla bundle of CAs is
/// about 250 KB.
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// A certificate or key file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CertFileError {
    /// Missing, not a regular file, or too large.
    #[error("{0}")]
    Unreadable(InputFileError),
    /// A CA file that is not PEM, or holds a certificate that cannot be a root.
    #[error(transparent)]
    Ca(PemError),
    /// A client certificate file without a certificate in it.
    #[error(
        "{}: no certificate in it ({reason}): give the client certificate (and the \
         intermediates after it) as PEM, `-----BEGIN CERTIFICATE-----` blocks",
        path.display()
    )]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A key file without a private key rustls can use.
    #[error(
        "{}: no usable private key in it ({reason}): give the client certificate's key as \
         PEM (PKCS#8, PKCS#1 or SEC1)",
        path.display()
    )]
    Key {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The key is not the certificate's, or of a kind rustls cannot sign with.
    #[error(
        "the key in {} cannot serve the certificate in {}: {reason}",
        key.display(),
        cert.display()
    )]
    Mismatch {
        /// The certificate's file.
        cert: PathBuf,
        /// The key's file.
        key: PathBuf,
        /// What rustls said.
        reason: String,
    },
}

/// A CA file, read: its path, its PEM text, and the roots in it.
#[derive(Debug, Clone)]
pub struct CaFile {
    /// Where it was read.
    pub path: PathBuf,
    /// Its text.
    pub pem: Vec<u8>,
    /// Its certificates, each a trust anchor.
    pub roots: RootCertStore,
}

/// Reads the CA file at `path`: at least one certificate, each usable as a root.
///
/// # Errors
/// [`CertFileError::Unreadable`] or [`CertFileError::Ca`], naming the file.
pub fn ca(path: &Path) -> Result<CaFile, CertFileError> {
    let pem = read(path)?;
    let certificates =
        super::pem::roots(&path.display().to_string(), &pem).map_err(CertFileError::Ca)?;
    // Each was checked as a root by `pem::roots`.
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(certificates);
    Ok(CaFile {
        path: path.to_owned(),
        pem,
        roots,
    })
}

/// A client certificate (with any intermediates after it) and its private key, read.
pub struct Identity {
    /// The certificate's file.
    pub cert_path: PathBuf,
    /// Its text.
    pub cert_pem: Vec<u8>,
    /// The key's text.
    pub key_pem: Vec<u8>,
    /// The certificates, the client's first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The key.
    pub key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("cert_path", &self.cert_path)
            .finish_non_exhaustive()
    }
}

/// Reads the client certificate at `cert` and its key at `key`, and checks that the key is
/// the certificate's.
///
/// # Errors
/// [`CertFileError`] naming the file at fault.
pub fn identity(cert: &Path, key: &Path) -> Result<Identity, CertFileError> {
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertFileError::Certificate {
            path: cert.to_owned(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(CertFileError::Certificate {
            path: cert.to_owned(),
            reason: "no `-----BEGIN CERTIFICATE-----` block".to_owned(),
        });
    }
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| CertFileError::Key {
        path: key.to_owned(),
        reason: e.to_string(),
    })?;
    rustls::sign::CertifiedKey::from_der(chain.clone(), private.clone_key(), &super::provider())
        .map_err(|e| CertFileError::Mismatch {
            cert: cert.to_owned(),
            key: key.to_owned(),
            reason: e.to_string(),
        })?;
    Ok(Identity {
        cert_path: cert.to_owned(),
        cert_pem,
        key_pem,
        chain,
        key: private,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, CertFileError> {
    crate::input_file::read(path, MAX_FILE_BYTES).map_err(CertFileError::Unreadable)
}
