//! The exporter's HTTP client: hyper's, over rustls on ring trusting Mozilla's roots, run on
//! `sluice serve`'s runtime. The SDK exports from threads of its own, outside any runtime;
//! each request is handed to the runtime and awaited from there.
//!
//! The table's `headers` are set here, on each request, over what the exporter put there:
//! the exporter adds `OTEL_EXPORTER_OTLP_HEADERS` after any header it is given, and the
//! table is to win where both name a header.

use opentelemetry_http::hyper::HyperClient;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// A connector that speaks plain HTTP or HTTPS, TLS by rustls on ring.
type Connector = hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// An OTLP/HTTP client whose requests run on a tokio runtime.
#[derive(Debug, Clone)]
pub struct OnRuntime {
    client: HyperClient<Connector>,
    runtime: tokio::runtime::Handle,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
}

impl OnRuntime {
    /// A client that sends on `runtime`, each request given at most `timeout` and `headers`
    /// (the table's) in place of any it has of their names.
    ///
    /// # Errors
    /// A header that is not one (the configuration checked them; the message names it).
    pub fn new(
        runtime: tokio::runtime::Handle,
        timeout: std::time::Duration,
        headers: &[(String, String)],
    ) -> anyhow::Result<Self> {
        let headers = headers
            .iter()
            .map(|(n, v)| {
                let name = http::HeaderName::from_bytes(n.as_bytes());
                let value = http::HeaderValue::from_str(v).map(|mut v| {
                    v.set_sensitive(true);
                    v
                });
                match (name, value) {
                    (Ok(n), Ok(v)) => Ok((n, v)),
                    _ => Err(anyhow::anyhow!("telemetry.headers.{n}: not an HTTP header")),
                }
            })
            .collect::<anyhow::Result<_>>()?;
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
        Ok(Self {
            client: HyperClient::new(connector, timeout, None),
            runtime,
            headers,
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, mut request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        for (name, value) in &self.headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let client = self.client.clone();
        self.runtime
            .spawn(async move { client.send_bytes(request).await })
            .await?
    }
}
