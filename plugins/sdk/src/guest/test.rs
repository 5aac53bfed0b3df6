//! Test helpers: a request, a response or an outcome in one line, for a plugin's native unit
//! tests.
//!
//! The contract's records carry headers as one `fields` block (`name:value\n` per field) and
//! bodies as bytes, which is cheap to send into a component and tedious to write by hand.
//! These helpers take headers as pairs and a body as anything byte-like, and build the record
//! the host would pass:
//!
//! ```
//! use sluice_plugin_sdk::test::{request, response};
//! use sluice_plugin_sdk::{Plugin, ResponsePart, Verdict};
//!
//! # struct Acme;
//! # impl Plugin for Acme {
//! #     fn describe() -> sluice_plugin_sdk::Description { unimplemented!() }
//! # }
//! let req = request(
//!     "POST",
//!     "https://api.acme.example/v1/chat",
//!     &[("content-type", "application/json")],
//!     r#"{"model":"m"}"#,
//! );
//! let resp = response(429, &[("retry-after", "2")], "");
//! let reading = Acme::read_response(&req, &resp.into(), ResponsePart::Complete).unwrap();
//! assert_eq!(reading.classification.verdict, Verdict::RateLimited);
//! assert_eq!(reading.classification.retry_after_ms, Some(2_000));
//! ```
//!
//! A request is a read (`RequestClass::Read`) at `now_ms` 0, with the body's prefix and its
//! digest as the host makes them (the first [`BODY_PREFIX`](crate::digest::BODY_PREFIX)
//! bytes, and [`digest`](crate::digest::digest) of the whole body); set the fields for another
//! class or clock (`req.class = RequestClass::UncertainWrite; req.now_ms = ...`), or use
//! [`request_at`] for the clock. The helpers are plain functions with no test framework
//! behind them, so they work the same in `#[test]` functions and in doctests.

use super::{Request, RequestClass, Response};

/// A `fields` block from name/value pairs, in the order given: `name:value\n` per pair.
///
/// # Panics
/// When a name is empty or holds a colon, CR or LF, or a value holds CR or LF: HTTP forbids
/// them, and the block could not be read back as the pairs given.
pub fn fields(pairs: &[(&str, &str)]) -> String {
    let mut block = String::with_capacity(pairs.iter().map(|(n, v)| n.len() + v.len() + 2).sum());
    for (name, value) in pairs {
        assert!(
            !name.is_empty() && !name.contains([':', '\r', '\n']),
            "header name {name:?}: HTTP forbids an empty name and colons or line ends in one"
        );
        assert!(
            !value.contains(['\r', '\n']),
            "header {name:?} has the value {value:?}: HTTP forbids line ends in a value"
        );
        block.push_str(name);
        block.push(':');
        block.push_str(value);
        block.push('\n');
    }
    block
}

/// A read request (`RequestClass::Read`) with the host's clock at 0 ms.
///
/// # Panics
/// On a header that HTTP forbids (see [`fields`]).
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: impl AsRef<[u8]>,
) -> Request {
    request_at(0, method, url, headers, body)
}

/// A read request with the host's clock at `now_ms` (milliseconds since the Unix epoch): for
/// a plugin that reads dates (an HTTP-date `Retry-After`, an RFC 3339 reset).
///
/// # Panics
/// On a header that HTTP forbids (see [`fields`]).
pub fn request_at(
    now_ms: i64,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: impl AsRef<[u8]>,
) -> Request {
    let body = body.as_ref();
    Request {
        method: method.to_owned(),
        url: url.to_owned(),
        class: RequestClass::Read,
        headers: fields(headers),
        body: body[..body.len().min(crate::digest::BODY_PREFIX)].to_vec(),
        digest: crate::digest::digest(body).into(),
        now_ms,
    }
}

/// A PNG of `width` × `height` pixels, `size` bytes long (its header, then filler): what a
/// plugin's cost is tested with, since only its header and its size count.
pub fn png(width: u32, height: u32, size: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    v.extend(width.to_be_bytes());
    v.extend(height.to_be_bytes());
    v.extend([8, 6, 0, 0, 0]);
    v.resize(size.max(v.len()), 0x55);
    v
}

/// `bytes` as base64 (the standard alphabet, padded).
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `bytes` as a data URL of `media_type`: `data:image/png;base64,...`.
pub fn data_url(media_type: &str, bytes: &[u8]) -> String {
    format!("data:{media_type};base64,{}", base64(bytes))
}

/// A response with its status, headers and body. `.into()` makes it an [`Outcome`](crate::Outcome).
///
/// # Panics
/// On a header that HTTP forbids (see [`fields`]).
pub fn response(status: u16, headers: &[(&str, &str)], body: impl AsRef<[u8]>) -> Response {
    Response {
        status,
        headers: fields(headers),
        body: body.as_ref().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Outcome;
    use crate::headers::Headers;

    #[test]
    fn pairs_become_a_block_that_reads_back_as_the_same_pairs() {
        let block = fields(&[("Retry-After", "2"), ("x-a", " spaced "), ("x-a", "")]);
        assert_eq!(block, "Retry-After:2\nx-a: spaced \nx-a:\n");
        let h = Headers::parse(&block);
        assert_eq!(h.get("retry-after"), Some("2"));
    }

    #[test]
    fn a_request_is_a_read_at_time_zero_with_its_body_as_bytes() {
        let req = request("POST", "https://x.test/v1", &[("a", "b")], "{}");
        assert_eq!(req.class, RequestClass::Read);
        assert_eq!((req.now_ms, req.headers.as_str()), (0, "a:b\n"));
        assert_eq!(req.body, b"{}");
        assert_eq!(request_at(7, "GET", "u", &[], Vec::new()).now_ms, 7);
    }

    #[test]
    fn a_response_converts_into_an_outcome() {
        let outcome: Outcome = response(503, &[], b"down").into();
        let Outcome::Response(r) = outcome else {
            panic!("not a response")
        };
        assert_eq!((r.status, r.body.as_slice()), (503, &b"down"[..]));
    }

    #[test]
    #[should_panic(expected = "HTTP forbids line ends in a value")]
    fn a_value_with_a_line_feed_is_refused_not_smuggled_in() {
        fields(&[("x-a", "1\nx-injected:2")]);
    }

    #[test]
    #[should_panic(expected = "header name \"a:b\"")]
    fn a_name_with_a_colon_is_refused() {
        fields(&[("a:b", "1")]);
    }
}
