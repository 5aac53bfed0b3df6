//! A listener that defends itself: every connection accepted at once and given a place
//! (`places`: a visitor until its listener seats it, bounded per agent, per tenant and in
//! all, so that no one can fill the listener and the accept loop never waits), each request
//! told its peer's address and its connection's place, and accept failures — a process out
//! of files — logged once a second at most, with how many there were, instead of once each.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use sluice::contract::ErrorShape;

use crate::places::{Bounds, Places};
use crate::reply;
use crate::workers::Workers;

/// The address a request came from, in its extensions (the admin listener's requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Peer(pub IpAddr);

impl Peer {
    /// The peer of `req` (unspecified when it was not set, as in a request built by hand).
    pub(crate) fn of<B>(req: &hyper::Request<B>) -> IpAddr {
        req.extensions()
            .get::<Self>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0)
    }
}

/// What a listener allows each connection.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Its places.
    pub bounds: Bounds,
    /// How long a request's headers may take to arrive.
    pub read_timeout: Duration,
    /// Who a connection is seated as when its first request arrives, for a listener whose
    /// handler does not seat it itself (the admin API's: its operators, one owner); `None`:
    /// the handler seats it (the agents': by the agent its token names).
    pub seat_on_request: Option<&'static str>,
    /// Peers whose `X-Forwarded-For` names the client (`serve.trusted_proxies`).
    pub trusted: Arc<[ipnet::IpNet]>,
}

/// The client of a request from `peer`: `peer` itself, unless it is a trusted proxy, then
/// the nearest address of `X-Forwarded-For` (read from its end, every header together) that
/// is not itself a trusted proxy. A value that is no address stops the reading there: what
/// lies before it was written by someone no proxy vouches for.
pub(crate) fn client(peer: IpAddr, headers: &hyper::HeaderMap, trusted: &[ipnet::IpNet]) -> IpAddr {
    let is_trusted = |a: &IpAddr| trusted.iter().any(|n| n.contains(a));
    if !is_trusted(&peer) {
        return peer;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Ok(addr) = hop.trim().parse::<IpAddr>() else {
            break;
        };
        client = addr;
        if !is_trusted(&addr) {
            break;
        }
    }
    client
}

/// How long accept failures are gathered into one log line.
const FAILURE_LOG_EVERY: Duration = Duration::from_secs(1);

/// Accepts connections until a stop is signalled, each given a place among `limits`'
/// (`what` names the listener in the log and metrics), each served on one of `workers` (else
/// on the runtime this runs on), each request handed to `handler` with the address it came
/// from and its connection's place (`places::Place`) in its extensions; then lets each finish its request
/// in flight. The connections still open when the returned future is dropped are cut.
pub(crate) async fn accept<F, Fut>(
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    limits: Limits,
    what: &'static str,
    workers: Option<Arc<Workers>>,
    handler: F,
) where
    F: Fn(hyper::Request<hyper::body::Incoming>, IpAddr) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<hyper::Response<reply::Body>, std::convert::Infallible>>
        + Send
        + 'static,
{
    let graceful = GracefulShutdown::new();
    let places = Places::new(what, limits.bounds);
    let seat_on_request = limits.seat_on_request;
    let read_timeout = limits.read_timeout;
    let mut failures = Failures::default();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors, or a connection reset before it was
                        // taken: the listener itself is fine.
                        failures.note(what, &e);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let handler = handler.clone();
                let peer_ip = peer.ip();
                let trusted = limits.trusted.clone();
                let watcher = graceful.watcher();
                let place = Arc::new(places.arrive());
                let serve = move |stream: TcpStream| async move {
                    let service = {
                        let place = place.clone();
                        service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            let place = place.clone();
                            let ip = client(peer_ip, req.headers(), &trusted);
                            async move {
                                if let Some(owner) = seat_on_request
                                    && let Err(full) = place.sit(owner, owner)
                                {
                                    return Ok(reply::error(ErrorShape::OpenAi, &full.refusal()));
                                }
                                req.extensions_mut().insert(place);
                                handler(req, ip).await
                            }
                        })
                    };
                    // A client gets `read_timeout` to send a request's headers: a seated
                    // connection that trickles them in (or idles between requests) does not
                    // hold its place for ever; a visitor gets its own, shorter, time.
                    let conn = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(read_timeout)
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        ended = watcher.watch(conn) => if let Err(e) = ended {
                            tracing::debug!("a connection ended with an error: {e}");
                        },
                        () = place.cut() => tracing::debug!("a visitor's connection was cut"),
                    }
                };
                match workers.as_deref() {
                    // Handed to a worker, which takes it into its own runtime.
                    Some(workers) => match stream.into_std() {
                        Ok(stream) => workers.spawn(async move {
                            match TcpStream::from_std(stream) {
                                Ok(stream) => serve(stream).await,
                                Err(e) => tracing::debug!("a connection was lost: {e}"),
                            }
                        }),
                        Err(e) => tracing::debug!("a connection was lost: {e}"),
                    },
                    None => drop(tokio::spawn(serve(stream))),
                }
            }
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Accept failures since the last line logged.
#[derive(Debug, Default)]
struct Failures {
    since: Option<tokio::time::Instant>,
    count: u64,
}

impl Failures {
    fn note(&mut self, what: &'static str, e: &std::io::Error) {
        self.count += 1;
        metrics::counter!(crate::metric_names::ACCEPT_FAILURES, "listener" => what).increment(1);
        #[allow(
            clippy::disallowed_methods,
            reason = "a log's own pace, not the host's time"
        )]
        let now = tokio::time::Instant::now();
        if self
            .since
            .is_some_and(|s| now.duration_since(s) < FAILURE_LOG_EVERY)
        {
            return;
        }
        tracing::warn!(
            listener = what,
            failures = self.count,
            "accepting connections failed ({e}); connections wait to be accepted"
        );
        self.since = Some(now);
        self.count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_client_is_read_from_x_forwarded_for_only_behind_a_trusted_proxy() {
        let trusted: Vec<ipnet::IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let mut headers = hyper::HeaderMap::new();
        headers.append(
            "x-forwarded-for",
            "203.0.113.9, 198.51.100.7".parse().unwrap(),
        );
        headers.append("x-forwarded-for", "10.1.2.3".parse().unwrap());
        // Behind two trusted hops, the nearest untrusted address.
        assert_eq!(
            client(addr("10.0.0.1"), &headers, &trusted),
            addr("198.51.100.7")
        );
        // From anyone else, the header is the client's own word: ignored.
        assert_eq!(
            client(addr("192.0.2.1"), &headers, &trusted),
            addr("192.0.2.1")
        );
        // With none trusted, every request is its peer's.
        assert_eq!(client(addr("10.0.0.1"), &headers, &[]), addr("10.0.0.1"));
        // A value that is no address stops the reading.
        let mut forged = hyper::HeaderMap::new();
        forged.append(
            "x-forwarded-for",
            "1.2.3.4, junk, 10.9.9.9".parse().unwrap(),
        );
        assert_eq!(
            client(addr("10.0.0.1"), &forged, &trusted),
            addr("10.9.9.9")
        );
        // No header: the proxy itself.
        assert_eq!(
            client(addr("10.0.0.1"), &hyper::HeaderMap::new(), &trusted),
            addr("10.0.0.1")
        );
    }
}
