//! What an embedder says about the connections: timeouts, which certificate authorities to
//! trust, which proxy to go through, how long to keep idle connections.
//!
//! The defaults are what a user of any HTTP client expects, so most embedders never build a
//! [`TransportConfig`] by hand ([`Transport::new`](super::Transport::new) takes only the
//! timeouts): the public roots (Mozilla's, compiled in, and the operating system's store),
//! the proxy of the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`), and a
//! pool that keeps idle connections for a minute and a half. What they change is what a
//! private deployment needs: the root of a gateway's private certificate authority, and a
//! proxy setting that does not depend on the process environment.

use std::path::PathBuf;
use std::time::Duration;

use super::Timeouts;

/// How the host's client connects. `Default` is the public internet as any client sees it.
///
/// ```
/// use sluice::{ExtraRoot, ProxySetting, Timeouts, Transport, TransportConfig};
///
/// let config = TransportConfig {
///     // Also trust the certificate authority of a private gateway; its file is read and
///     // checked when the transport is built.
///     extra_roots: vec![ExtraRoot::PemFile("/etc/sluice/gateway-ca.pem".into())],
///     // Go through the company's proxy, except for the gateway.
///     proxy: ProxySetting::Explicit {
///         url: "http://proxy.internal:3128".into(),
///         no_proxy: vec!["gateway.internal".into()],
///     },
///     ..TransportConfig::new(Timeouts::default())
/// };
/// // Here the file does not exist, and the error names it.
/// let err = Transport::with_config(config).unwrap_err();
/// assert!(err.to_string().contains("/etc/sluice/gateway-ca.pem"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransportConfig {
    /// The timeouts of each attempt.
    pub timeouts: Timeouts,
    /// Certificate authorities trusted besides the built-in ones: a private gateway's, a test
    /// server's.
    pub extra_roots: Vec<ExtraRoot>,
    /// Whether the built-in roots are trusted too (by default they are). A deployment that
    /// talks to its gateway alone can trust [`extra_roots`](Self::extra_roots) only.
    pub built_in_roots: BuiltInRoots,
    /// Which proxy calls go through.
    pub proxy: ProxySetting,
    /// How idle connections are kept for reuse.
    pub pool: PoolConfig,
}

impl TransportConfig {
    /// The defaults with `timeouts`.
    pub fn new(timeouts: Timeouts) -> Self {
        Self {
            timeouts,
            ..Self::default()
        }
    }
}

/// Whether the built-in root certificates are trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BuiltInRoots {
    /// Mozilla's roots (compiled in) and the operating system's store: what a server on the
    /// public internet is checked against.
    #[default]
    Trusted,
    /// None of them: only the extra roots are trusted.
    Ignored,
}

/// A certificate authority to trust besides the built-in ones, as PEM (one or more
/// `-----BEGIN CERTIFICATE-----` blocks; anything around them is ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtraRoot {
    /// A PEM file, read when the transport is built.
    PemFile(PathBuf),
    /// PEM text.
    Pem(String),
}

/// Which proxy the host's calls go through. Its `Debug` output masks a password in the URL.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum ProxySetting {
    /// As the process environment says, read once, when the transport is built:
    /// `HTTPS_PROXY` for `https://` calls, `HTTP_PROXY` for `http://` calls, `ALL_PROXY` for
    /// both (each also in lower case; the first set wins), and `NO_PROXY` for the hosts that
    /// bypass them. Without them, no proxy. A proxy URL must be `http://` (or carry no
    /// scheme); one the client cannot speak to (`https://`, `socks5://`) fails each call it
    /// would carry, naming it. In a CGI process (`REQUEST_METHOD` set) the environment's
    /// proxies are ignored, since a request's `Proxy:` header would set `HTTP_PROXY`.
    #[default]
    Environment,
    /// No proxy, whatever the environment says.
    Direct,
    /// Every call through `url` (`http://host:port`, with `user:password@` if the proxy asks
    /// for it), whatever the environment says; `https://` calls are tunnelled with `CONNECT`,
    /// so the proxy never sees inside them.
    Explicit {
        /// The proxy.
        url: String,
        /// The hosts that bypass it, as `NO_PROXY` writes them: a domain (`example.com` or
        /// `.example.com`, either covering its subdomains), an IP address, a CIDR block such
        /// as `10.0.0.0/8`, or `*` for every host.
        no_proxy: Vec<String>,
    },
}

impl std::fmt::Debug for ProxySetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Environment => f.write_str("Environment"),
            Self::Direct => f.write_str("Direct"),
            Self::Explicit { url, no_proxy } => f
                .debug_struct("Explicit")
                .field("url", &super::client::without_password(url))
                .field("no_proxy", no_proxy)
                .finish(),
        }
    }
}

/// How idle connections are kept. Every call of a [`Transport`](super::Transport) (and of
/// its clones) shares one pool, so consecutive calls to a host reuse a connection instead
/// of paying for a TCP and TLS handshake each; a single-threaded runtime has a pool of its
/// own (as the sidecar's connection workers do), each kept as this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// How long an idle connection is kept before it is closed.
    pub idle_timeout: Duration,
    /// How many idle connections are kept per host; more may be open while calls are under
    /// way. Over HTTP/2 one connection carries every concurrent call to a host.
    pub max_idle_per_host: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(90),
            max_idle_per_host: 32,
        }
    }
}
