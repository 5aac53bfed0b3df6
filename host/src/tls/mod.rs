//! TLS pieces every client of the library shares: the certificate files an operator names
//! (a CA to trust, a client certificate and its key), read and checked before anything
//! connects, and the words for a handshake that failed on a certificate.
//!
//! The outbound transport trusts extra roots through [`pem`]; the shared store
//! (`rediss://`, `[store] ca_file`) and a group's journal (`sslmode`, `sslrootcert` in
//! `[journal] url`) read their CA and client certificate through [`files`], and name a
//! refused certificate through [`refusal`]. rustls on ring, as everywhere in sluice.

pub mod files;
pub mod pem;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod refusal;

/// The crypto every TLS connection of sluice uses: rustls on ring.
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}
