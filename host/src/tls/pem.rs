//! Certificates in PEM text, each checked as a trust anchor: a file that is not PEM, or a
//! block that cannot be a root, is refused with its name and its place in the file.

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Why PEM text gave no usable root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PemError {
    /// It is not PEM, or holds no certificate.
    #[error(
        "{origin} is not a PEM file of certificates ({reason}); give the CA certificate as \
         PEM, `-----BEGIN CERTIFICATE-----` blocks (convert DER with `openssl x509 -inform der`)"
    )]
    NotPem {
        /// The file, or which text.
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A certificate in it cannot be a trust anchor.
    #[error(
        "{origin}: certificate {index} cannot be used as a root ({reason}); give the \
         certificate of the certificate authority itself"
    )]
    NotARoot {
        /// The file, or which text.
        origin: String,
        /// Which certificate in it, from 1.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// The certificates in `pem` (the text of `origin`, a file's path or a name for the text),
/// in order, each checked as a trust anchor.
///
/// # Errors
/// [`PemError`] naming `origin`.
pub fn roots(origin: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let mut found = Vec::new();
    for (n, der) in CertificateDer::pem_slice_iter(pem).enumerate() {
        let der = der.map_err(|e| PemError::NotPem {
            origin: origin.to_owned(),
            reason: e.to_string(),
        })?;
        RootCertStore::empty()
            .add(der.clone())
            .map_err(|e| PemError::NotARoot {
                origin: origin.to_owned(),
                index: n + 1,
                reason: e.to_string(),
            })?;
        found.push(der);
    }
    if found.is_empty() {
        return Err(PemError::NotPem {
            origin: origin.to_owned(),
            reason: "it holds no `-----BEGIN CERTIFICATE-----` block".to_owned(),
        });
    }
    Ok(found)
}
