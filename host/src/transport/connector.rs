//! Opening a connection to where an attempt goes: straight to the provider, to a proxy that
//! is handed the whole URL (`http://` calls), or through a proxy's `CONNECT` tunnel
//! (`https://` calls, so the proxy never sees inside them); TLS, when the call is
//! `https://`, is layered on top by the client. The whole of it — DNS, TCP, the tunnel, the
//! TLS handshake — is bounded by [`Timeouts::connect`](super::Timeouts::connect): failing
//! there sent nothing.

use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Connecting<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

/// TCP keepalive probes on idle connections, so a pooled connection that a middlebox
/// dropped is noticed before a call is sent on it.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);

/// Opens the TCP connection of an attempt: to the provider, to its proxy, or through the
/// proxy's tunnel.
#[derive(Clone, Debug)]
pub(super) struct Connector {
    tcp: HttpConnector,
    /// Which calls go through which proxy; `None`: every call goes straight.
    proxies: Option<Arc<Matcher>>,
}

impl Connector {
    pub(super) fn new(proxies: Option<Arc<Matcher>>) -> Self {
        let mut tcp = HttpConnector::new();
        // TLS is layered on top for `https://`, so the TCP connector takes either scheme.
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_keepalive(Some(TCP_KEEPALIVE));
        Self { tcp, proxies }
    }
}

impl Service<Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Connecting<Conn>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The TCP connector is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let proxy = self.proxies.as_ref().and_then(|m| m.intercept(&dst));
        let mut tcp = self.tcp.clone();
        Box::pin(async move {
            let Some(proxy) = proxy else {
                return Ok(Conn::new(tcp.call(dst).await?, false));
            };
            if proxy.uri().scheme_str() != Some("http") {
                return Err(format!(
                    "the proxy {} is not an http:// proxy, the only kind this client speaks \
                     to (https:// calls go through it in a CONNECT tunnel); set it as \
                     http://host:port",
                    proxy.uri()
                )
                .into());
            }
            if dst.scheme_str() == Some("https") {
                let mut tunnel = Tunnel::new(proxy.uri().clone(), tcp);
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                Ok(Conn::new(tunnel.call(dst).await?, false))
            } else {
                Ok(Conn::new(tcp.call(proxy.uri().clone()).await?, true))
            }
        })
    }
}

/// A connector whose whole opening of a connection is bounded in time.
#[derive(Clone, Debug)]
pub(super) struct Bounded<C> {
    inner: C,
    limit: Duration,
}

impl<C> Bounded<C> {
    pub(super) fn new(inner: C, limit: Duration) -> Self {
        Self { inner, limit }
    }
}

/// A connection that was not open within the connect limit.
#[derive(Debug, thiserror::Error)]
#[error("the connection was not open within {0:?}")]
pub(super) struct ConnectTimedOut(pub(super) Duration);

impl<C> Service<Uri> for Bounded<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Connecting<C::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let limit = self.limit;
        let connecting = self.inner.call(dst);
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(done) => done.map_err(Into::into),
                Err(_) => Err(ConnectTimedOut(limit).into()),
            }
        })
    }
}

/// An open TCP connection; `proxied` when it goes to a proxy that is handed whole URLs, so
/// that requests on it are written in absolute form (`POST http://host/path`).
#[derive(Debug)]
pub(super) struct Conn {
    io: TokioIo<TcpStream>,
    proxied: bool,
}

impl Conn {
    fn new(io: TokioIo<TcpStream>, proxied: bool) -> Self {
        Self { io, proxied }
    }
}

impl Connection for Conn {
    /// Without the addresses (`HttpInfo`) the plain TCP stream would give: the client puts
    /// those in every response's extensions, an allocation or three a response, and nothing
    /// here reads them.
    fn connected(&self) -> Connected {
        Connected::new().proxy(self.proxied)
    }
}

impl Read for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
