//! A tiny forward proxy on loopback that counts what it carries: the request line that
//! opened each connection through it (`GET http://127.0.0.1:8080/path HTTP/1.1` for a plain
//! call, `CONNECT 127.0.0.1:8443 HTTP/1.1` for a TLS tunnel), and the credentials that came
//! with it. It forwards only to loopback.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The longest request head the proxy reads.
const MAX_HEAD: usize = 64 * 1024;

/// A running counting proxy; it stops when dropped.
#[derive(Debug)]
pub struct CountingProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Opened>>>,
    accept: JoinHandle<()>,
}

/// What opened one connection through the proxy.
#[derive(Debug, Clone)]
struct Opened {
    line: String,
    credentials: Option<String>,
}

impl CountingProxy {
    /// Starts a proxy on a free loopback port.
    ///
    /// # Errors
    /// The bind failed.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(carry(client, log.clone()));
            }
        });
        Ok(Self { addr, seen, accept })
    }

    /// Its URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The request line that opened each connection through it, in order.
    pub fn requests(&self) -> Vec<String> {
        self.opened().into_iter().map(|o| o.line).collect()
    }

    /// The `Proxy-Authorization` header that came with each of [`Self::requests`], if any.
    pub fn credentials(&self) -> Vec<Option<String>> {
        self.opened().into_iter().map(|o| o.credentials).collect()
    }

    fn opened(&self) -> Vec<Opened> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Reads the request head from `client`, records its line, and carries the connection to
/// its target: a tunnel for `CONNECT`, the request as it came for an absolute-form one.
async fn carry(mut client: TcpStream, seen: Arc<Mutex<Vec<Opened>>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_HEAD {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next().unwrap_or_default().to_owned();
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let authority = if method == "CONNECT" {
        target
    } else {
        let rest = target.strip_prefix("http://").unwrap_or("");
        rest.split('/').next().unwrap_or("")
    };
    // Loopback only: the tests' providers live there, and nothing else may be reached.
    if !(authority.starts_with("127.0.0.1:") || authority.starts_with("localhost:")) {
        let _ = client
            .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    }
    let credentials = text.lines().skip(1).find_map(|header| {
        let (name, value) = header.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("proxy-authorization")
            .then(|| value.trim().to_owned())
    });
    seen.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Opened {
            line: line.clone(),
            credentials,
        });
    let Ok(mut upstream) = TcpStream::connect(authority).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    let ready = if method == "CONNECT" {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
    } else {
        upstream.write_all(&head).await
    };
    if ready.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}
