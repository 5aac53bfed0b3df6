//! Why the sidecar cannot start.

/// Why the sidecar cannot start. Each message names the key or the address to fix.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The configuration does not let the sidecar serve (a provider with no base URL).
    #[error("{0}")]
    Config(String),
    /// An agent's or the admin API's token cannot be read.
    #[error("`{key}`: {why}")]
    Token {
        /// The configuration key.
        key: String,
        /// Why.
        why: String,
    },
    /// An address cannot be listened on.
    #[error(
        "cannot listen on {addr} ({what}): {source}; pick another address in the configuration"
    )]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// `serve.listen` or `serve.admin.listen`.
        what: &'static str,
        /// The system's error.
        source: std::io::Error,
    },
    /// The threads that serve agent connections cannot be started.
    #[error("cannot start the connection workers: {0}; the system is out of threads or memory")]
    Workers(#[source] std::io::Error),
}
