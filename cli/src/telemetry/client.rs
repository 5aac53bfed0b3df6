//! The exporter's HTTP client: hyper's, over rustls on ring trusting Mozilla's roots, run on
//! `sluice serve`'s runtime. The SDK exports from threads of its own, outside any runtime;
//! each request is handed to the runtime and awaited from there.

use opentelemetry_http::hyper::HyperClient;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// A connector that speaks plain HTTP or HTTPS, TLS by rustls on ring.
type Connector = hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// An OTLP/HTTP client whose requests run on a tokio runtime.
#[derive(Debug, Clone)]
pub struct OnRuntime {
    client: HyperClient<Connector>,
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    /// A client that sends on `runtime`, each request given at most `timeout`.
    pub fn new(runtime: tokio::runtime::Handle, timeout: std::time::Duration) -> Self {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let roots =
            rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Self {
            client: HyperClient::new(connector, timeout, None),
            runtime,
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        self.runtime
            .spawn(async move { client.send_bytes(request).await })
            .await?
    }
}
