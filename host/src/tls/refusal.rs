//! Words for a TLS connection that failed on a certificate: which server, what was wrong
//! with its certificate (or with this host's), and what was trusted. The clients of the
//! shared store and of a group's journal each wrap the handshake's error in their own
//! (an I/O error, a pool's, the Redis client's); [`Peer::explain`] finds it under them.

use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::{AlertDescription, CertificateError};

/// A server a host connects to over TLS, as the words of a refusal name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The server: `the Redis server`, `the PostgreSQL server`.
    pub server: &'static str,
    /// What its certificate must be signed by: `the CA in /etc/sluice/redis-ca.pem`.
    pub trusted: String,
    /// The client certificate this host shows it, if any.
    pub client_cert: Option<PathBuf>,
}

impl Peer {
    /// `server`, whose certificate must be signed by the CA in `ca_file` (`None`: by one
    /// of the operating system's roots), shown `client_cert` if any.
    pub fn new(
        server: &'static str,
        ca_file: Option<&std::path::Path>,
        client_cert: Option<PathBuf>,
    ) -> Self {
        Self {
            server,
            trusted: ca_file.map_or_else(
                || "any of the operating system's root CAs".to_owned(),
                |p| format!("the CA in {}", p.display()),
            ),
            client_cert,
        }
    }

    /// What `error` (a failed connection, the TLS failure anywhere among its causes) says
    /// of TLS, naming the certificate at fault and what was trusted; `None` when no TLS
    /// failure is among them.
    pub fn explain(&self, error: &(dyn Error + 'static)) -> Option<String> {
        let tls = tls_cause(error)?;
        let server = self.server;
        Some(match tls {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
                "{server}'s certificate is not signed by {} ({tls})",
                self.trusted
            ),
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => {
                format!("{server}'s certificate is not for the host name it was reached at ({tls})")
            }
            rustls::Error::InvalidCertificate(
                CertificateError::Expired | CertificateError::ExpiredContext { .. },
            ) => format!("{server}'s certificate has expired ({tls})"),
            rustls::Error::InvalidCertificate(_) => {
                format!("{server}'s certificate is refused ({tls})")
            }
            rustls::Error::AlertReceived(alert) => self.alert(*alert, tls),
            rustls::Error::InvalidMessage(_) => {
                format!("{server} does not answer in TLS: is this its TLS port? ({tls})")
            }
            _ => format!("the TLS handshake with {server} failed ({tls})"),
        })
    }

    /// The server ended the handshake with `alert`: most often, over this host's
    /// certificate.
    fn alert(&self, alert: AlertDescription, tls: &rustls::Error) -> String {
        let server = self.server;
        let about_client = matches!(
            alert,
            AlertDescription::CertificateRequired
                | AlertDescription::BadCertificate
                | AlertDescription::UnknownCA
                | AlertDescription::CertificateUnknown
                | AlertDescription::CertificateExpired
                | AlertDescription::CertificateRevoked
                | AlertDescription::UnsupportedCertificate
                | AlertDescription::AccessDenied
        );
        match (&self.client_cert, about_client) {
            (None, true) => {
                format!("{server} asks for a client certificate, and none is configured ({tls})")
            }
            (Some(cert), true) => format!(
                "{server} refused this host's client certificate in {} ({tls})",
                cert.display()
            ),
            (_, false) => format!("{server} ended the TLS handshake ({tls})"),
        }
    }
}

/// The rustls error among `error`'s causes. An I/O error hides the error it carries from
/// `source` (it is its `get_ref`), and the Redis client keeps its causes behind an `Arc`:
/// both are opened on the way down.
fn tls_cause<'e>(mut error: &'e (dyn Error + 'static)) -> Option<&'e rustls::Error> {
    loop {
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        let carried: Option<&(dyn Error + 'static)> =
            if let Some(io) = error.downcast_ref::<std::io::Error>() {
                io.get_ref().map(|e| e as &(dyn Error + 'static))
            } else if let Some(shared) = error.downcast_ref::<Arc<dyn Error + Send + Sync>>() {
                Some(&**shared as &(dyn Error + 'static))
            } else {
                None
            };
        error = carried.or_else(|| error.source())?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(client: Option<&str>) -> Peer {
        Peer::new(
            "the Redis server",
            Some(std::path::Path::new("/etc/sluice/ca.pem")),
            client.map(PathBuf::from),
        )
    }

    fn io(e: rustls::Error) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn an_unknown_issuer_names_the_ca_trusted_under_every_wrapping() {
        let tls = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let shared: Arc<dyn Error + Send + Sync> = Arc::new(io(tls));
        let said = peer(None).explain(&shared).unwrap();
        assert_eq!(
            said,
            "the Redis server's certificate is not signed by the CA in /etc/sluice/ca.pem \
             (invalid peer certificate: UnknownIssuer)"
        );
        let roots = Peer::new("the PostgreSQL server", None, None);
        let said = roots
            .explain(&io(CertificateError::UnknownIssuer.into()))
            .unwrap();
        assert!(
            said.contains("any of the operating system's root CAs"),
            "{said}"
        );
    }

    #[test]
    fn a_server_that_refuses_the_client_says_whether_one_was_shown() {
        let alert = || {
            io(rustls::Error::AlertReceived(
                AlertDescription::CertificateRequired,
            ))
        };
        let none = peer(None).explain(&alert()).unwrap();
        assert!(none.contains("none is configured"), "{none}");
        let shown = peer(Some("/etc/sluice/client.pem"))
            .explain(&alert())
            .unwrap();
        assert!(
            shown.contains("client certificate in /etc/sluice/client.pem"),
            "{shown}"
        );
    }

    #[test]
    fn an_error_without_tls_among_its_causes_is_left_alone() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(peer(None).explain(&refused), None);
    }
}
