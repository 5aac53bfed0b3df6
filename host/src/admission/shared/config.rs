//! How a host reaches the shared store, and what it assumes when it cannot.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use crate::tls::files::{self, CaFile, CertFileError, Identity};

/// The shared store's settings: `[store]` in `sluice.toml`, or
/// [`crate::embed::SluiceBuilder::shared_store`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedConfig {
    /// The Redis server, 7.0 or later: `redis://HOST:PORT[/DB]`, or `rediss://HOST:PORT[/DB]`
    /// over TLS (its certificate checked against [`Self::ca_file`], and its host name).
    pub url: String,
    /// The CA certificates (a PEM file) a `rediss://` server's certificate must be signed
    /// by. `None`: the operating system's roots.
    pub ca_file: Option<PathBuf>,
    /// The certificate (a PEM file: the client's first, then any intermediates) this host
    /// shows a `rediss://` server that asks for one (`tls-auth-clients`), with
    /// [`Self::client_key_file`]. `None`: none.
    pub client_cert_file: Option<PathBuf>,
    /// The private key of [`Self::client_cert_file`] (a PEM file).
    pub client_key_file: Option<PathBuf>,
    /// How many hosts share the quotas. When Redis cannot be reached, each host paces every
    /// quota at its limit divided by this, so that together they stay within it.
    pub hosts: NonZeroU32,
    /// This host's name in the store: it owns the actions it claims. Default: the machine's
    /// host name and the journal's path, so two hosts on one machine differ by their journals.
    pub host_id: Option<String>,
    /// Prefix of every key the store writes. Default: `sluice`.
    pub key_prefix: String,
    /// How long a concurrency lease lives without renewal: a host that dies gives its slots
    /// back after this. Its live leases are renewed every third of it. Default: 10 s.
    pub lease_ttl: Duration,
    /// How long one store command may take before the host falls back to local pacing.
    /// Default: 250 ms.
    pub timeout: Duration,
    /// How long a slice of a quota lives: each host takes a slice of every rate quota from
    /// the store in one call, admits its calls against it locally, and gives back what it
    /// did not use when the slice ends (see `docs/shared-state.md`). The store grants a
    /// quota's burst less this much pace, so calls sent up to this long after their slice
    /// was granted stay within the limit. A quota whose burst cannot hold a slice for each
    /// host, and every scope with a concurrency limit, is admitted call by call.
    /// `Duration::ZERO`: every call asks the store. Default: 250 ms.
    pub slice: Duration,
    /// How long an action's claim is kept after it is made. Default: 30 days.
    pub claim_ttl: Duration,
    /// Claim actions even in a store that can lose a claim (one that evicts keys, or keeps
    /// no append-only file): the operator accepts that an evicted claim lets a second host
    /// send its action again. Default: `false`, and writes are refused while the store
    /// can lose one (see `super::Vanishing`).
    pub accept_claim_loss: bool,
}

impl SharedConfig {
    /// A store at `url` shared by `hosts` hosts, with the defaults.
    pub fn new(url: impl Into<String>, hosts: NonZeroU32) -> Self {
        Self {
            url: url.into(),
            ca_file: None,
            client_cert_file: None,
            client_key_file: None,
            hosts,
            host_id: None,
            key_prefix: "sluice".into(),
            lease_ttl: Duration::from_secs(10),
            timeout: Duration::from_millis(250),
            slice: Duration::from_millis(250),
            claim_ttl: Duration::from_secs(30 * 24 * 3600),
            accept_claim_loss: false,
        }
    }

    /// The URL without its password, to print.
    pub fn shown_url(&self) -> String {
        shown(&self.url)
    }

    /// Checks what can be checked without connecting.
    ///
    /// # Errors
    /// [`SharedConfigError`] naming the setting.
    pub fn validate(&self) -> Result<(), SharedConfigError> {
        if !(self.url.starts_with("redis://") || self.url.starts_with("rediss://")) {
            return Err(SharedConfigError::Url(shown(&self.url)));
        }
        if self.url.contains('#') {
            return Err(SharedConfigError::Fragment(shown(&self.url)));
        }
        #[cfg(feature = "redis")]
        if ::redis::Client::open(self.url.as_str()).is_err() {
            return Err(SharedConfigError::Url(shown(&self.url)));
        }
        self.tls()?;
        if self.lease_ttl < Duration::from_millis(300) {
            return Err(SharedConfigError::LeaseTtl(self.lease_ttl));
        }
        if self.slice > Duration::ZERO && self.slice < Duration::from_millis(10) {
            return Err(SharedConfigError::Slice(self.slice));
        }
        if self.key_prefix.is_empty() || self.key_prefix.contains(char::is_whitespace) {
            return Err(SharedConfigError::Prefix(self.key_prefix.clone()));
        }
        Ok(())
    }
}

/// What a `rediss://` store's connections are made with: the CA to check its server's
/// certificate against (`None`: the operating system's roots), and the client certificate
/// to show it.
#[derive(Debug)]
pub struct StoreTls {
    /// The CA file, read.
    pub ca: Option<CaFile>,
    /// The client certificate and key, read.
    pub identity: Option<Identity>,
}

impl SharedConfig {
    /// Reads the certificate files the store's TLS needs: `None` for a `redis://` store,
    /// which names none.
    ///
    /// # Errors
    /// [`SharedConfigError`] naming the setting and the file.
    pub fn tls(&self) -> Result<Option<StoreTls>, SharedConfigError> {
        let named = [
            ("ca_file", &self.ca_file),
            ("client_cert_file", &self.client_cert_file),
            ("client_key_file", &self.client_key_file),
        ];
        if !self.url.starts_with("rediss://") {
            return match named.iter().find(|(_, p)| p.is_some()) {
                Some((key, _)) => Err(SharedConfigError::NotTls(key)),
                None => Ok(None),
            };
        }
        let ca = match &self.ca_file {
            Some(path) => {
                Some(files::ca(path).map_err(|e| SharedConfigError::CaFile(e.to_string()))?)
            }
            None => None,
        };
        let identity = match (&self.client_cert_file, &self.client_key_file) {
            (Some(cert), Some(key)) => Some(files::identity(cert, key).map_err(|e| match &e {
                CertFileError::Key { .. } | CertFileError::Mismatch { .. } => {
                    SharedConfigError::ClientKey(e.to_string())
                }
                CertFileError::Unreadable(u) if u.path() == key => {
                    SharedConfigError::ClientKey(e.to_string())
                }
                _ => SharedConfigError::ClientCert(e.to_string()),
            })?),
            (None, None) => None,
            (Some(_), None) => return Err(SharedConfigError::Pair("client_key_file")),
            (None, Some(_)) => return Err(SharedConfigError::Pair("client_cert_file")),
        };
        Ok(Some(StoreTls { ca, identity }))
    }
}

/// `url` with the user and password it may carry replaced by `***`.
fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// A shared-store setting that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SharedConfigError {
    /// Not a `redis://` or `rediss://` URL.
    #[error(
        "{0:?} is not a Redis URL: write redis://HOST:PORT (for example redis://127.0.0.1:6379), \
         or rediss://HOST:PORT for TLS"
    )]
    Url(String),
    /// A URL with a fragment: `#insecure` would connect without checking the certificate.
    #[error(
        "{0:?} ends in a #fragment: sluice always checks a rediss:// server's certificate (and \
         #insecure would not): give the CA that signed it in ca_file"
    )]
    Fragment(String),
    /// A certificate file named for a store reached in clear text.
    #[error("{0} is for a rediss:// store (TLS); this store's URL is redis://, in clear text")]
    NotTls(&'static str),
    /// A client certificate without its key, or the other way round.
    #[error("a client certificate takes both client_cert_file and client_key_file: {0} is missing")]
    Pair(&'static str),
    /// The CA file cannot be used: why, naming it.
    #[error("{0}")]
    CaFile(String),
    /// The client certificate cannot be used: why, naming it.
    #[error("{0}")]
    ClientCert(String),
    /// The client certificate's key cannot be used, or is not its key: why, naming it.
    #[error("{0}")]
    ClientKey(String),
    /// A lease so short that renewing it would be most of the traffic.
    #[error("a lease of {0:?} is too short: at least 300 ms (the default is 10 s)")]
    LeaseTtl(Duration),
    /// A slice so short that taking it would cost a store call per call anyway.
    #[error(
        "a slice of {0:?} is too short: 0 (no slices) or at least 10 ms (the default is 250 ms)"
    )]
    Slice(Duration),
    /// An empty prefix, or one with spaces.
    #[error("the key prefix {0:?} must be non-empty, without spaces")]
    Prefix(String),
}

impl SharedConfigError {
    /// The `[store]` key it is about.
    pub fn key(&self) -> &'static str {
        match self {
            Self::Url(_) | Self::Fragment(_) => "url",
            Self::NotTls(key) | Self::Pair(key) => key,
            Self::CaFile(_) => "ca_file",
            Self::ClientCert(_) => "client_cert_file",
            Self::ClientKey(_) => "client_key_file",
            Self::LeaseTtl(_) => "lease_ttl_ms",
            Self::Slice(_) => "slice_ms",
            Self::Prefix(_) => "key_prefix",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_never_shown() {
        let c = SharedConfig::new("redis://:hunter2@10.0.0.5:6379/0", NonZeroU32::MIN);
        assert_eq!(c.shown_url(), "redis://***@10.0.0.5:6379/0");
        let bad = SharedConfig::new("http://user:hunter2@x", NonZeroU32::MIN);
        assert!(!bad.validate().unwrap_err().to_string().contains("hunter2"));
    }

    #[test]
    fn a_lease_shorter_than_300_ms_is_refused() {
        let mut c = SharedConfig::new("redis://127.0.0.1:6379", NonZeroU32::MIN);
        c.lease_ttl = Duration::from_millis(100);
        assert!(matches!(c.validate(), Err(SharedConfigError::LeaseTtl(_))));
    }
}
