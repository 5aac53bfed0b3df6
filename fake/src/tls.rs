//! TLS for the fake provider: a certificate authority made at run time, and the server
//! identity it signs for `127.0.0.1` and `localhost`.
//!
//! A client is tested over TLS the way it meets a private gateway: it trusts the test CA's
//! certificate as an extra root ([`TestCa::ca_pem`]) and checks the fake's certificate
//! against it; a client that does not trust it refuses the fake for its certificate. No key
//! or certificate is ever written to the repository, and every run makes new ones.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// Why the test certificates or the TLS server could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key or signing a certificate failed.
    #[error("cannot make the test certificates: {0}")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the server's certificate or key.
    #[error("cannot configure the fake's TLS server: {0}")]
    Server(#[from] rustls::Error),
}

/// Which protocols a TLS fake offers in ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offer {
    /// `h2` and `http/1.1`: a client that speaks HTTP/2 picks it.
    Http2AndHttp1,
    /// `http/1.1` only: the server speaks nothing else.
    Http1Only,
}

/// A certificate authority made at run time, and a server identity it signed for
/// `127.0.0.1` and `localhost`.
///
/// ```
/// use sluice_fake_provider::{FakeConfig, FakeProvider, Style, tls::TestCa};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ca = TestCa::new()?;
/// let fake = FakeProvider::start_tls(FakeConfig::new(Style::OpenAi), &ca).await?;
/// assert!(fake.url("/v1/models").starts_with("https://127.0.0.1:"));
/// // A client that trusts `ca.ca_pem()` as a root can call it.
/// assert!(ca.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct TestCa {
    ca_pem: String,
    server: Arc<ServerConfig>,
}

impl TestCa {
    /// A new CA (ECDSA P-256, on ring) and a server certificate it signed.
    ///
    /// # Errors
    /// [`TlsError`] when a key or a certificate cannot be made.
    pub fn new() -> Result<Self, TlsError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        // A name of its own (from its key), so that two test CAs are two issuers: a client
        // that trusts another one finds no issuer for the fake's certificate.
        let id: String = ca_key.public_key_raw()[1..9]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        ca_params.distinguished_name.push(
            DnType::CommonName,
            format!("sluice fake provider test CA {id}"),
        );
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate()?;
        let mut server_params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
        server_params
            .distinguished_name
            .push(DnType::CommonName, "sluice fake provider");
        server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        server_params.use_authority_key_identifier_extension = true;
        let server_cert = server_params.signed_by(&server_key, &issuer)?;

        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
        let server =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_single_cert(vec![server_cert.der().clone()], key)?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            server: Arc::new(server),
        })
    }

    /// The CA's certificate, PEM: the root a client must trust to call a fake it serves.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The server's TLS configuration, offering `offer` in ALPN.
    pub(crate) fn acceptor(&self, offer: Offer) -> tokio_rustls::TlsAcceptor {
        let mut config = ServerConfig::clone(&self.server);
        config.alpn_protocols = match offer {
            Offer::Http2AndHttp1 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            Offer::Http1Only => vec![b"http/1.1".to_vec()],
        };
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }
}
