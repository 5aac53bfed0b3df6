//! Raw HTTP/1.1 to the sidecar as an agent: any headers (the task and action of a write, a
//! deadline, a class hint), any agent token, and the answer whole — status, headers, body.

use std::io::{Read, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

use crate::sidecar::{AGENT_TOKEN, Sidecar};

/// An answer of the sidecar: status, headers (names lower case), body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    /// sluice's account in a Stripe-shaped error: `error.sluice`.
    pub fn sluice(&self) -> Value {
        self.json()["error"]["sluice"].clone()
    }
}

/// `POST path` to `addr` as written on the wire, with the agent token `token`, `headers`
/// beside it, and `body`, asking to close the connection after the answer.
pub fn request(
    addr: SocketAddr,
    token: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let extra: String = headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect();
    format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\
         \r\n{body}",
        body.len()
    )
}

/// A chunked body, decoded.
fn unchunk(mut raw: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = raw.split_once("\r\n") {
        let size =
            usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        raw = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// `POST path` to the sidecar as the agent, with `headers` beside its token, and `body`.
pub fn post(sidecar: &Sidecar, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    post_as(sidecar, AGENT_TOKEN, path, headers, body)
}

/// `POST path` to the sidecar with the agent token `token`, `headers` beside it, and `body`.
pub fn post_as(
    sidecar: &Sidecar,
    token: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let addr: SocketAddr = sidecar
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("the sidecar's address");
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout");
    s.write_all(request(addr, token, path, headers, body).as_bytes())
        .expect("send the request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {raw}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    Answer {
        status,
        headers,
        body: if chunked {
            unchunk(body)
        } else {
            body.to_owned()
        },
    }
}

/// `POST` to the chat route of a body of `len` bytes with the agent token `token`, asking to
/// continue first (as clients do for large bodies): the status, and the `Retry-After` of a
/// refusal.
pub fn post_large(addr: SocketAddr, token: &str, len: usize) -> (u16, Option<String>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout");
    write!(
        s,
        "POST /openai/v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer \
         {token}\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\
         expect: 100-continue\r\nconnection: close\r\n\r\n"
    )
    .expect("send the head");
    let mut head = [0u8; 25];
    if s.read_exact(&mut head).is_err() {
        return (0, None);
    }
    if head.starts_with(b"HTTP/1.1 100") {
        let prefix = br#"{"model":"gpt-4o","max_tokens":8,"messages":[{"role":"user","content":""#;
        let suffix = br#""}]}"#;
        let mut body = Vec::with_capacity(len);
        body.extend_from_slice(prefix);
        body.resize(len - suffix.len(), b'x');
        body.extend_from_slice(suffix);
        if s.write_all(&body).is_err() {
            return (0, None);
        }
        drop(body);
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        let text = String::from_utf8_lossy(&rest);
        let status = text
            .split("HTTP/1.1 ")
            .nth(1)
            .and_then(|t| t.get(..3)?.parse().ok())
            .unwrap_or(0);
        return (status, None);
    }
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let text = String::from_utf8_lossy(&head).into_owned() + &String::from_utf8_lossy(&rest);
    let status = text.get(9..12).and_then(|t| t.parse().ok()).unwrap_or(0);
    let retry_after = text.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("retry-after:")
            .map(|v| v.trim().to_owned())
    });
    (status, retry_after)
}
