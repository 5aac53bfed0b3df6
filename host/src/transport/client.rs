//! Building the HTTP client the host sends with, from a [`TransportConfig`].
//!
//! One client per [`Transport`], shared by every call (and every clone): its pool keeps
//! connections for reuse, and over HTTP/2 one connection carries all the concurrent calls to
//! a host. A single-threaded runtime sends on a client of its own, built alike
//! ([`super::local`]). TLS is rustls on ring, checked against the built-in roots (Mozilla's
//! and the operating system's) and the configured extra ones; ALPN offers HTTP/2 and
//! HTTP/1.1, and the server picks. Plain `http://` is HTTP/1.1.
//!
//! The client keeps none of the decisions the host makes: it follows no redirects (a
//! redirect is another attempt) and retries nothing, not even what it could prove unsent
//! (an HTTP/2 stream the server refused), since the host's budgets must count every
//! attempt. It keeps only the connect timeout of [`Timeouts`]; the other limits of an
//! attempt (time to the first byte, idle time between chunks) are kept by the attempt itself,
//! on the host's clock.

use std::sync::Arc;
use std::time::Duration;

use super::local::LocalClients;
use super::{BuiltInRoots, ProxySetting, Timeouts, Transport, TransportConfig, roots};

/// TCP keepalive probes on idle connections, so a pooled connection that a middlebox
/// dropped is noticed before a call is sent on it.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);

/// Why a transport could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// An extra root file could not be read: missing, not a regular file, or larger than any
    /// bundle of CA certificates ([`super::MAX_ROOT_FILE_BYTES`]).
    #[error(
        "the root certificate file {error}; check the path given in the transport's \
         extra_roots (a PEM file of CA certificates)"
    )]
    RootUnreadable {
        /// Why, naming the file.
        error: crate::input_file::InputFileError,
    },
    /// An extra root is not PEM, or holds no certificate.
    #[error(
        "{origin} is not a PEM file of certificates ({reason}); give the CA certificate as \
         PEM, `-----BEGIN CERTIFICATE-----` blocks (convert DER with `openssl x509 -inform der`)"
    )]
    RootNotPem {
        /// The file, or which in-memory root.
        origin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A certificate in an extra root cannot be a trust anchor.
    #[error(
        "{origin}: certificate {index} cannot be used as a root ({reason}); give the \
         certificate of the certificate authority itself"
    )]
    RootInvalid {
        /// The file, or which in-memory root.
        origin: String,
        /// Which certificate in it, from 1.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The explicit proxy's URL is not one.
    #[error("the proxy `{url}` is not a proxy URL ({error}); write it as http://host:port")]
    BadProxy {
        /// The URL, without its password.
        url: String,
        /// Why the client refused it (in the message, so not also a `source`).
        error: reqwest::Error,
    },
    /// The client refused its configuration (an unreadable platform root store, say).
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

impl Transport {
    /// A client with `timeouts` and the defaults of [`TransportConfig`]: the built-in roots,
    /// the environment's proxy, no redirects, no retries.
    ///
    /// # Errors
    /// [`TransportError`] when the client cannot be built.
    pub fn new(timeouts: Timeouts) -> Result<Self, TransportError> {
        Self::with_config(TransportConfig::new(timeouts))
    }

    /// A client as `config` says; no redirects, no retries.
    ///
    /// # Errors
    /// [`TransportError`] naming the extra root or the proxy that is wrong, or when the
    /// client cannot be built.
    pub fn with_config(config: TransportConfig) -> Result<Self, TransportError> {
        let recipe = Recipe::new(config)?;
        Ok(Self {
            client: recipe.build()?,
            timeouts: recipe.config.timeouts,
            origins: Arc::default(),
            local: Arc::new(LocalClients::new(recipe)),
        })
    }
}

/// What a client is built from, the files it names already read: the transport's first
/// client, and each one of its [`LocalClients`], are built alike.
#[derive(Debug)]
pub(super) struct Recipe {
    config: TransportConfig,
    roots: Vec<reqwest::Certificate>,
    proxy: Option<reqwest::Proxy>,
}

impl Recipe {
    fn new(config: TransportConfig) -> Result<Self, TransportError> {
        let roots = roots::load(&config.extra_roots)?;
        let proxy = match &config.proxy {
            ProxySetting::Environment | ProxySetting::Direct => None,
            ProxySetting::Explicit { url, no_proxy } => {
                let proxy = reqwest::Proxy::all(url.as_str()).map_err(|error| {
                    TransportError::BadProxy {
                        url: without_password(url),
                        error,
                    }
                })?;
                Some(proxy.no_proxy(reqwest::NoProxy::from_string(&no_proxy.join(","))))
            }
        };
        Ok(Self {
            config,
            roots,
            proxy,
        })
    }

    /// A client as the recipe says.
    pub(super) fn build(&self) -> Result<reqwest::Client, reqwest::Error> {
        let config = &self.config;
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .connect_timeout(config.timeouts.connect)
            .pool_idle_timeout(config.pool.idle_timeout)
            .pool_max_idle_per_host(config.pool.max_idle_per_host)
            .tcp_keepalive(TCP_KEEPALIVE)
            .tls_built_in_root_certs(config.built_in_roots == BuiltInRoots::Trusted);
        for root in &self.roots {
            builder = builder.add_root_certificate(root.clone());
        }
        builder = match (&config.proxy, &self.proxy) {
            (ProxySetting::Direct, _) => builder.no_proxy(),
            (_, Some(proxy)) => builder.proxy(proxy.clone()),
            (_, None) => builder,
        };
        builder.build()
    }
}

/// `url` with the password of its `user:password@`, if any, masked: errors and debug output
/// are logged.
pub(super) fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{scheme}://{user}:***@{host}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::ExtraRoot;

    #[test]
    fn a_proxy_url_in_an_error_never_shows_its_password() {
        assert_eq!(
            without_password("http://ops:hunter2@proxy:3128"),
            "http://ops:***@proxy:3128"
        );
        assert_eq!(without_password("http://proxy:3128"), "http://proxy:3128");
        let err = Transport::with_config(TransportConfig {
            proxy: ProxySetting::Explicit {
                url: "http://ops:hunter2@bad host:3128".into(),
                no_proxy: Vec::new(),
            },
            ..TransportConfig::default()
        })
        .unwrap_err();
        assert!(matches!(err, TransportError::BadProxy { .. }), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn the_simple_tier_builds_with_the_defaults() {
        assert!(Transport::new(Timeouts::default()).is_ok());
    }

    #[test]
    fn a_bad_extra_root_stops_the_build_and_is_named() {
        let err = Transport::with_config(TransportConfig {
            extra_roots: vec![ExtraRoot::Pem("no certificate here".into())],
            ..TransportConfig::default()
        })
        .unwrap_err();
        assert!(err.to_string().contains("extra root #1"), "{err}");
    }
}
