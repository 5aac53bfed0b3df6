//! TLS to a group's journal, as libpq's URL parameters say it (`postgres://…?sslmode=
//! verify-full&sslrootcert=/etc/sluice/db-ca.pem`), so that the URL a managed database's
//! console gives works as it is, in the configuration and in an operator's command alike.
//!
//! | `sslmode` | encrypted | the server's certificate |
//! |---|---|---|
//! | `disable` | never | – |
//! | `prefer` (the default) | when the server offers TLS | as `require` |
//! | `require` | always | unchecked; with `sslrootcert`, as `verify-ca` (as libpq) |
//! | `verify-ca` | always | signed by the CA in `sslrootcert` |
//! | `verify-full` | always | signed by it, and for the host name the URL names |
//!
//! `sslrootcert` names the CA's PEM file, or `system` for the operating system's roots
//! (with `verify-full` only, as libpq 16). `sslcert` and `sslkey` name the client
//! certificate and its key, both or neither. Unlike libpq, nothing is read from
//! `~/.postgresql`: `verify-ca` and `verify-full` need `sslrootcert`. `allow` is not
//! offered (`prefer` is what it would fall back to). A certificate refused is named in the
//! journal's error ([`crate::tls::refusal`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode as WireMode;

use crate::tls::files::{self, Identity};
use crate::tls::refusal::Peer;

/// libpq's `sslmode`, less `allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            "allow" => {
                return Err(
                    "sslmode=allow is not offered: write prefer (TLS when the server \
                            offers it) or require"
                        .to_owned(),
                );
            }
            other => {
                return Err(format!(
                    "sslmode={other:?} is none of disable, prefer, require, verify-ca, verify-full"
                ));
            }
        })
    }
}

/// Where the server's certificate must chain to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RootCert {
    /// A CA's PEM file.
    File(PathBuf),
    /// The operating system's roots (`sslrootcert=system`).
    System,
}

/// What a URL asks of TLS, its files not read yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsParams {
    pub mode: SslMode,
    pub root: Option<RootCert>,
    /// The client certificate and its key.
    pub client: Option<(PathBuf, PathBuf)>,
}

impl TlsParams {
    /// The files the parameters name.
    pub fn files(&self) -> impl Iterator<Item = (&'static str, &Path)> {
        let root = match &self.root {
            Some(RootCert::File(p)) => Some(("sslrootcert", p.as_path())),
            _ => None,
        };
        let client = self
            .client
            .as_ref()
            .into_iter()
            .flat_map(|(c, k)| [("sslcert", c.as_path()), ("sslkey", k.as_path())]);
        root.into_iter().chain(client)
    }
}

/// The TLS parameters `url` names, and `url` without them (what tokio-postgres parses).
///
/// # Errors
/// A parameter that cannot work, in words that name it.
pub(crate) fn split(url: &str) -> Result<(String, TlsParams), String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let (mut mode, mut root, mut cert, mut key) = (None, None, None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_encoding::percent_decode_str(value)
            .decode_utf8()
            .map_err(|_| format!("{name}: its value is not UTF-8"))?
            .into_owned();
        match name {
            "sslmode" => mode = Some(SslMode::parse(&value)?),
            "sslrootcert" if value == "system" => root = Some(RootCert::System),
            "sslrootcert" => root = Some(RootCert::File(PathBuf::from(value))),
            "sslcert" => cert = Some(PathBuf::from(value)),
            "sslkey" => key = Some(PathBuf::from(value)),
            _ => kept.push(pair),
        }
    }
    // As libpq 16: the system's roots are for checking the host name too.
    let mode = match (mode, &root) {
        (None, Some(RootCert::System)) => SslMode::VerifyFull,
        (Some(m), Some(RootCert::System)) if m != SslMode::VerifyFull => {
            return Err(
                "sslrootcert=system checks the server against the operating system's \
                        roots, which any host can have a certificate from: use it with \
                        sslmode=verify-full"
                    .to_owned(),
            );
        }
        (m, _) => m.unwrap_or(SslMode::Prefer),
    };
    if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) && root.is_none() {
        return Err(
            "sslmode=verify-ca and verify-full need sslrootcert: the PEM file of the CA \
                    that signed the server's certificate (or sslrootcert=system for the \
                    operating system's roots)"
                .to_owned(),
        );
    }
    let client = match (cert, key) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        (Some(_), None) => return Err("sslcert needs sslkey, the certificate's key".to_owned()),
        (None, Some(_)) => return Err("sslkey needs sslcert, its certificate".to_owned()),
    };
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, TlsParams { mode, root, client }))
}

/// TLS as `params` say, its files read: what the pool connects with.
#[derive(Debug)]
pub(crate) struct Tls {
    mode: SslMode,
    /// The roots; `None`: the certificate is not checked.
    roots: Option<Arc<RootCertStore>>,
    identity: Option<Identity>,
    /// The server, in the words of a refusal.
    pub peer: Peer,
}

impl Tls {
    /// Reads the files `params` name.
    ///
    /// # Errors
    /// A file that cannot be used, named with its parameter.
    pub fn read(params: &TlsParams) -> Result<Self, String> {
        let roots = match &params.root {
            Some(RootCert::File(path)) => Some(
                files::ca(path)
                    .map_err(|e| format!("sslrootcert: {e}"))?
                    .roots,
            ),
            Some(RootCert::System) => Some(system_roots()?),
            None => None,
        };
        let identity = match &params.client {
            Some((cert, key)) => {
                Some(files::identity(cert, key).map_err(|e| format!("sslcert, sslkey: {e}"))?)
            }
            None => None,
        };
        let ca_file = match &params.root {
            Some(RootCert::File(path)) => Some(path.as_path()),
            _ => None,
        };
        Ok(Self {
            mode: params.mode,
            roots: roots.map(Arc::new),
            peer: Peer::new(
                "the PostgreSQL server",
                ca_file,
                identity.as_ref().map(|i| i.cert_path.clone()),
            ),
            identity,
        })
    }

    /// Whether and how tokio-postgres asks for TLS.
    pub fn wire_mode(&self) -> WireMode {
        match self.mode {
            SslMode::Disable => WireMode::Disable,
            SslMode::Prefer => WireMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => WireMode::Require,
        }
    }

    /// The connector the pool's connections are made with.
    ///
    /// # Errors
    /// rustls refusing the settings, as text.
    pub fn connector(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
        let provider = crate::tls::provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = match (&self.roots, self.mode) {
            (Some(roots), SslMode::VerifyFull) => builder.with_root_certificates(roots.clone()),
            (roots, _) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Chain {
                    roots: roots.clone(),
                    provider,
                })),
        };
        let config = match &self.identity {
            Some(id) => builder
                .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
                .map_err(|e| e.to_string())?,
            None => builder.with_no_client_auth(),
        };
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }
}

/// The operating system's roots; one it holds that cannot be a root is skipped.
fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert=system: the operating system's root store has no usable certificate ({})",
            found
                .errors
                .first()
                .map_or_else(|| "it is empty".to_owned(), ToString::to_string)
        ));
    }
    Ok(roots)
}

/// A server certificate checked short of `verify-full`: signed by one of `roots` (its host
/// name not checked), or, without roots, not checked at all. The handshake's own
/// signatures are checked either way: the connection is still encrypted to the holder of
/// the certificate's key.
#[derive(Debug)]
struct Chain {
    roots: Option<Arc<RootCertStore>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Chain {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &rustls::server::ParsedCertificate::try_from(end_entity)?,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(query: &str) -> Result<TlsParams, String> {
        split(&format!("postgres://u@db:5432/j?{query}")).map(|(_, p)| p)
    }

    #[test]
    fn the_tls_parameters_leave_the_url_and_the_others_stay() {
        let (url, p) = split(
            "postgres://u:pw@db:5432/j?sslmode=verify-full&application_name=x\
             &sslrootcert=%2Fetc%2Fca%20bundle.pem",
        )
        .unwrap();
        assert_eq!(url, "postgres://u:pw@db:5432/j?application_name=x");
        assert_eq!(p.mode, SslMode::VerifyFull);
        assert_eq!(p.root, Some(RootCert::File("/etc/ca bundle.pem".into())));
        let (url, p) = split("postgres://u@db/j").unwrap();
        assert_eq!(
            (url.as_str(), p.mode),
            ("postgres://u@db/j", SslMode::Prefer)
        );
    }

    #[test]
    fn a_mode_that_checks_needs_a_root_and_the_system_roots_need_the_host_name() {
        let err = params("sslmode=verify-ca").unwrap_err();
        assert!(err.contains("need sslrootcert"), "{err}");
        let err = params("sslmode=require&sslrootcert=system").unwrap_err();
        assert!(err.contains("sslmode=verify-full"), "{err}");
        assert_eq!(
            params("sslrootcert=system").unwrap().mode,
            SslMode::VerifyFull
        );
        assert!(params("sslmode=allow").unwrap_err().contains("not offered"));
        assert!(params("sslcert=/c.pem").unwrap_err().contains("sslkey"));
    }
}
