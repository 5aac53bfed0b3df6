//! The roots the client trusts: the built-in ones (Mozilla's, compiled in, and the
//! operating system's store) and the extra ones. Each extra root is parsed and checked
//! here, before the client is built, so that a missing file, a file that is not PEM, or a
//! certificate that cannot be a trust anchor is refused with its name, instead of the
//! client's one anonymous error (or, worse, every call to the gateway failing later for its
//! certificate).

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};

use super::{BuiltInRoots, ExtraRoot, TransportError};

/// The largest extra root file read, in bytes: the whole Mozilla bundle is about 250 KB.
pub const MAX_ROOT_FILE_BYTES: u64 = crate::tls::files::MAX_FILE_BYTES;

/// The certificates of every root in `roots`, in order.
///
/// # Errors
/// [`TransportError::RootUnreadable`] or [`TransportError::Root`], naming the root.
pub(super) fn load(roots: &[ExtraRoot]) -> Result<Vec<CertificateDer<'static>>, TransportError> {
    let mut all = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let (origin, pem) = match root {
            ExtraRoot::PemFile(path) => {
                let pem = crate::input_file::read(path, MAX_ROOT_FILE_BYTES)
                    .map_err(|error| TransportError::RootUnreadable { error })?;
                (path.display().to_string(), pem)
            }
            ExtraRoot::Pem(text) => (
                format!("extra root #{} (PEM text)", i + 1),
                text.clone().into_bytes(),
            ),
        };
        all.extend(crate::tls::pem::roots(&origin, &pem)?);
    }
    Ok(all)
}

/// The TLS settings of every connection: rustls on ring, TLS 1.2 and 1.3, trusting `extra`
/// and, unless `built_in` says not to, Mozilla's roots and the operating system's store
/// (read now: its files, or `SSL_CERT_FILE` and `SSL_CERT_DIR` when set). A store's
/// certificate that cannot be a trust anchor is skipped, as stores often hold some.
///
/// # Errors
/// [`TransportError::Client`] when rustls refuses the settings (which it does not for these).
pub(super) fn client_config(
    extra: &[CertificateDer<'static>],
    built_in: BuiltInRoots,
) -> Result<Arc<ClientConfig>, TransportError> {
    let mut store = RootCertStore::empty();
    if built_in == BuiltInRoots::Trusted {
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let native = rustls_native_certs::load_native_certs();
        let (added, skipped) = store.add_parsable_certificates(native.certs);
        if added == 0 && skipped > 0 {
            tracing::warn!(
                "none of the {skipped} certificates of the operating system's root store is \
                 usable; trusting Mozilla's roots and the extra ones"
            );
        }
        for error in &native.errors {
            tracing::debug!("the operating system's root store: {error}");
        }
    }
    for root in extra {
        // Each was checked by `load`.
        store
            .add(root.clone())
            .map_err(|e| TransportError::Client(e.to_string()))?;
    }
    let config = ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TransportError::Client(e.to_string()))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::tls::pem::PemError;

    /// A CA certificate made for the test, PEM.
    fn ca() -> String {
        sluice_fake_provider::tls::TestCa::new()
            .expect("a test CA")
            .ca_pem()
            .to_owned()
    }

    fn pem(text: &str) -> ExtraRoot {
        ExtraRoot::Pem(text.to_owned())
    }

    #[test]
    fn every_certificate_of_every_root_is_loaded() {
        let (a, b) = (ca(), ca());
        let mut file = tempfile::NamedTempFile::new().unwrap();
        write!(file, "a bundle may carry comments\n{a}{b}").unwrap();
        let roots = [ExtraRoot::PemFile(file.path().to_owned()), pem(&a)];
        assert_eq!(load(&roots).unwrap().len(), 3);
    }

    #[test]
    fn a_missing_root_file_is_named_with_what_to_do() {
        let err = load(&[ExtraRoot::PemFile("/nonexistent/gateway-ca.pem".into())]).unwrap_err();
        assert!(
            matches!(err, TransportError::RootUnreadable { .. }),
            "{err}"
        );
        let msg = err.to_string();
        assert!(msg.contains("/nonexistent/gateway-ca.pem"), "{msg}");
        assert!(msg.contains("extra_roots"), "{msg}");
    }

    #[test]
    fn a_device_as_a_root_file_is_refused_without_reading_it() {
        let err = load(&[ExtraRoot::PemFile("/dev/zero".into())]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("/dev/zero: not a regular file"), "{msg}");
    }

    #[test]
    fn a_root_file_that_is_not_pem_is_named() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"\x30\x82\x01\x0a binary DER, not PEM")
            .unwrap();
        let err = load(&[ExtraRoot::PemFile(file.path().to_owned())]).unwrap_err();
        assert!(
            matches!(err, TransportError::Root(PemError::NotPem { .. })),
            "{err}"
        );
        let msg = err.to_string();
        assert!(msg.contains(&file.path().display().to_string()), "{msg}");
        assert!(msg.contains("BEGIN CERTIFICATE"), "{msg}");
    }

    #[test]
    fn a_pem_block_with_broken_base64_is_refused() {
        let broken = "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n";
        let err = load(&[pem(&ca()), pem(broken)]).unwrap_err();
        assert!(
            matches!(err, TransportError::Root(PemError::NotPem { .. })),
            "{err}"
        );
        assert!(err.to_string().contains("extra root #2"), "{err}");
    }

    #[test]
    fn a_pem_block_that_is_no_certificate_is_refused_with_its_place() {
        // Valid base64 of bytes that are not a DER certificate.
        let junk = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
        let err = load(&[pem(&format!("{}{junk}", ca()))]).unwrap_err();
        match &err {
            TransportError::Root(PemError::NotARoot { index, .. }) => assert_eq!(*index, 2),
            other => panic!("expected NotARoot, got {other}"),
        }
        assert!(err.to_string().contains("certificate 2"), "{err}");
    }
}
