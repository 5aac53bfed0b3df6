//! Building the HTTP client the host sends with, from a [`TransportConfig`].
//!
//! One client per [`Transport`], shared by every call (and every clone): its pool keeps
//! connections for reuse, and over HTTP/2 one connection carries all the concurrent calls to
//! a host. A single-threaded runtime sends on a client of its own, built alike
//! ([`super::local`]). TLS is rustls on ring, checked against the built-in roots (Mozilla's
//! and the operating system's) and the configured extra ones; ALPN offers HTTP/2 and
//! HTTP/1.1, and the server picks. Plain `http://` is HTTP/1.1.
//!
//! The client is hyper's pooled client and nothing around it: it follows no redirects (a
//! redirect is another attempt) and retries nothing the host could count, since the host's
//! budgets must count every attempt. (A request given an idle pooled connection that turns
//! out closed before any of the request is written is sent on a new connection: nothing of
//! it left.) It keeps only the connect timeout of [`Timeouts`]; the other limits of an
//! attempt (time to the first byte, idle time between chunks) are kept by the attempt itself,
//! on the host's clock.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::ClientConfig;

use super::connector::{Bounded, Connector};
use super::{ProxySetting, TransportConfig, roots};

/// The client an attempt is sent with.
pub(super) type HttpClient = Client<Bounded<HttpsConnector<Connector>>, Full<Bytes>>;

/// The variables the environment's proxies are read from.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// Why a transport could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// An extra root file could not be read: missing, not a regular file, or larger than any
    /// bundle of CA certificates (`super::MAX_ROOT_FILE_BYTES`).
    #[error(
        "the root certificate file {error}; check the path given in the transport's \
         extra_roots (a PEM file of CA certificates)"
    )]
    RootUnreadable {
        /// Why, naming the file.
        error: crate::input_file::InputFileError,
    },
    /// An extra root is not PEM, holds no certificate, or holds one that cannot be a trust
    /// anchor.
    #[error(transparent)]
    Root(#[from] crate::tls::pem::PemError),
    /// The explicit proxy's URL is not one.
    #[error("the proxy `{url}` is not a proxy URL ({reason}); write it as http://host:port")]
    BadProxy {
        /// The URL, without its password.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The TLS settings were refused.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// What a client is built from, the files it names already read: the transport's first
/// client, and each one of its single-threaded runtimes' own ([`super::local`]), are built
/// alike.
#[derive(Debug)]
pub(super) struct Recipe {
    pub(super) config: TransportConfig,
    tls: Arc<ClientConfig>,
    /// Which calls go through which proxy; `None`: none does.
    pub(super) proxies: Option<Arc<Matcher>>,
}

impl Recipe {
    /// The recipe of `config`: its extra roots read, its proxy setting checked.
    pub(super) fn new(config: TransportConfig) -> Result<Self, TransportError> {
        let roots = roots::load(&config.extra_roots)?;
        let tls = roots::client_config(&roots, config.built_in_roots)?;
        let proxies = match &config.proxy {
            ProxySetting::Direct => None,
            // The environment read now, as when the process started; a process that sets
            // none of the variables sends every call straight.
            ProxySetting::Environment => PROXY_VARIABLES
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
                .then(|| Arc::new(Matcher::from_env())),
            ProxySetting::Explicit { url, no_proxy } => {
                check_proxy_url(url)?;
                let matcher = Matcher::builder()
                    .all(url.clone())
                    .no(no_proxy.join(","))
                    .build();
                Some(Arc::new(matcher))
            }
        };
        Ok(Self {
            config,
            tls,
            proxies,
        })
    }

    /// A client as the recipe says.
    pub(super) fn build(&self) -> HttpClient {
        let config = &self.config;
        let https = HttpsConnectorBuilder::new()
            .with_tls_config(ClientConfig::clone(&self.tls))
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(Connector::new(self.proxies.clone()));
        Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(config.pool.idle_timeout)
            .pool_max_idle_per_host(config.pool.max_idle_per_host)
            .build(Bounded::new(https, config.timeouts.connect))
    }
}

/// Refuses an explicit proxy URL that is not `http://host[:port]` (with `user:password@` if
/// the proxy asks for it), naming it without its password.
fn check_proxy_url(url: &str) -> Result<(), TransportError> {
    let refuse = |reason: String| TransportError::BadProxy {
        url: without_password(url),
        reason,
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| refuse(e.to_string()))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some(other) => {
            return Err(refuse(format!(
                "`{other}://` proxies are not spoken to; https:// calls go through an http:// \
                 proxy in a CONNECT tunnel"
            )));
        }
        None => return Err(refuse("no scheme".to_owned())),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(refuse("no host".to_owned()));
    }
    Ok(())
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
    use crate::transport::{ExtraRoot, Timeouts, Transport};

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
        for (bad, why) in [
            ("socks5://proxy:1080", "socks5"),
            ("https://proxy:3128", "https"),
            ("proxy:3128", "scheme"),
            ("http:///x", "host"),
        ] {
            let err = Transport::with_config(TransportConfig {
                proxy: ProxySetting::Explicit {
                    url: bad.into(),
                    no_proxy: Vec::new(),
                },
                ..TransportConfig::default()
            })
            .unwrap_err();
            assert!(err.to_string().contains(why), "{bad}: {err}");
        }
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
