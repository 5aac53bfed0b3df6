//! A plain reverse-proxy hop, the yardstick for what a hop itself costs: HTTP/1.1 in,
//! every request passed on unread to one upstream through hyper's keep-alive pool (the
//! client the sidecar sends with, and nothing around it), the answer passed back. No
//! admission, no plugin, no journal: what any proxy in front of a provider adds. It runs in
//! a process of its own (this bench binary, started again with `hop`), as `sluice serve`
//! does, so each is measured with its own CPU.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// The hop's client: plain HTTP/1.1 to the upstream, connections kept.
type Upstream = Client<HttpConnector, Full<Bytes>>;

/// Headers about one connection, not passed back.
const HOP_BY_HOP: [&str; 4] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
];

/// The argument that starts this binary as the hop: `hop UPSTREAM`.
pub const HOP: &str = "hop";

/// Serves the hop to `upstream` on a free loopback port until killed; prints `listening
/// ADDR` on standard output once it accepts.
pub fn serve(upstream: String) -> Result<(), Box<dyn std::error::Error>> {
    // One worker thread, as a one-worker nginx.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        println!("listening {}", listener.local_addr()?);
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        let client: Upstream = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(256)
            .build(tcp);
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let (client, upstream) = (client.clone(), upstream.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req| pass(client.clone(), upstream.clone(), req));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

/// One request passed on and its answer passed back; a failure upstream is a 502.
async fn pass(
    client: Upstream,
    upstream: String,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let answer = async {
        let uri: Uri = format!(
            "{upstream}{}",
            parts.uri.path_and_query().map_or("/", |p| p.as_str())
        )
        .parse()?;
        let body = body.collect().await?.to_bytes();
        let mut out = Request::builder().method(parts.method).uri(uri);
        for (name, value) in &parts.headers {
            if name != hyper::header::HOST {
                out = out.header(name, value);
            }
        }
        let r = client.request(out.body(Full::new(body))?).await?;
        let (head, body) = r.into_parts();
        let mut back = Response::builder().status(head.status);
        for (name, value) in &head.headers {
            if !HOP_BY_HOP.contains(&name.as_str()) {
                back = back.header(name, value);
            }
        }
        let body = body.collect().await?.to_bytes();
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(back.body(Full::new(body))?)
    };
    Ok(answer.await.unwrap_or_else(|e| {
        let mut r = Response::new(Full::new(Bytes::from(e.to_string())));
        *r.status_mut() = hyper::StatusCode::BAD_GATEWAY;
        r
    }))
}
