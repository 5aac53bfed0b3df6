//! A tiny forward proxy on loopback that counts what it carries: the request line that
//! opened each connection through it (`GET http://127.0.0.1:8080/path HTTP/1.1` for a plain
//! call, `CONNECT 127.0.0.1:8443 HTTP/1.1` for a TLS tunnel). It forwards only to loopback.

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
    seen: Arc<Mutex<Vec<String>>>,
    accept: JoinHandle<()>,
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
async fn carry(mut client: TcpStream, seen: Arc<Mutex<Vec<String>>>) {
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
    seen.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(line.clone());
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
