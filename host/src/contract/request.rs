//! What the host hands a plugin about one request and its attempts: the request, the
//! caller's declaration of what repeating it would do, and what came back.

use bytes::Bytes;

/// How the caller declared the request. The class decides whether the host may ever send
/// the request a second time; a plugin cannot change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestClass {
    /// Safe to repeat: no side effect at the provider.
    Read,
    /// A write the provider deduplicates (for example by an idempotency key), so a resend
    /// with the same key cannot create a second effect.
    IdempotentWrite,
    /// A write that may create a second effect if it is sent twice.
    UncertainWrite,
}

/// An outbound request, as the host is about to send it or has sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The HTTP method, upper case (`GET`, `POST`, ...).
    pub method: String,
    /// The absolute URL, including the query string.
    pub url: String,
    /// The caller's declaration of what repeating this request would do.
    pub class: RequestClass,
    /// Request headers in the order they will be (or were) sent, as one `fields` block
    /// (`name:value\n` per field; see [`crate::headers::encode_fields`]). Credentials are
    /// redacted by the host before they reach a plugin.
    pub headers: String,
    /// The request body. The host sends it whole; a plugin is shown its first
    /// [`BODY_PREFIX`] bytes and its [`digest`](Self::digest).
    pub body: Bytes,
    /// What the whole body says about its cost (see [`BodyDigest`]).
    pub digest: BodyDigest,
    /// The host's wall clock: milliseconds since the Unix epoch, UTC.
    pub now_ms: i64,
}

/// The longest prefix of a request body a plugin is shown: 64 KiB.
pub const BODY_PREFIX: usize = sluice_plugin_sdk::digest::BODY_PREFIX;

impl Request {
    /// A request whose digest is read from `body` (see [`BodyDigest::of`]).
    pub fn new(
        method: impl Into<String>,
        url: impl Into<String>,
        class: RequestClass,
        headers: String,
        body: impl Into<Bytes>,
        now_ms: i64,
    ) -> Self {
        let body = body.into();
        let digest = BodyDigest::of(&body);
        Self::digested(method, url, class, headers, body, digest, now_ms)
    }

    /// A request whose body's digest was read already: `digest` must be `body`'s.
    pub fn digested(
        method: impl Into<String>,
        url: impl Into<String>,
        class: RequestClass,
        headers: String,
        body: Bytes,
        digest: BodyDigest,
        now_ms: i64,
    ) -> Self {
        Self {
            method: method.into(),
            url: url.into(),
            class,
            headers,
            body,
            digest,
            now_ms,
        }
    }

    /// The same request with `body`, its digest read anew.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        let body = body.into();
        self.digest = BodyDigest::of(&body);
        self.body = body;
        self
    }

    /// The whole body's length in bytes, also for a plugin-facing copy that keeps only the
    /// prefix (its digest knows the whole).
    pub fn body_length(&self) -> u64 {
        u64::try_from(self.body.len()).map_or(u64::MAX, |n| n.max(self.digest.length))
    }

    /// The body as a plugin is shown it: its first [`BODY_PREFIX`] bytes.
    pub fn body_prefix(&self) -> &[u8] {
        &self.body[..self.body.len().min(BODY_PREFIX)]
    }
}

/// What a request's whole body says about its cost, read in one pass outside the sandbox
/// (its length, text, media parts and small fields): the SDK's reader's own plain types,
/// shared by the host and the plugins it builds, so both read a body the same way. See
/// `sluice_plugin_sdk::digest` for what counts as media.
pub use sluice_plugin_sdk::digest::{BodyDigest, DEFAULT_MAX_OUTPUT, MediaKind, MediaPart};

/// A response the provider sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Response headers in wire order, as one `fields` block.
    pub headers: String,
    /// A prefix of the response body, at most the host's body cap (64 KiB by default); for
    /// the end of a stream, its first and last bytes (see `ResponsePart::StreamEnd`).
    pub body: Vec<u8>,
}

/// Why no response arrived. The first two mean the provider surely did not act on the
/// request; the last two mean bytes were written and the outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportFailure {
    /// The connection could not be opened (DNS, refused, TLS): nothing was sent.
    ConnectFailed,
    /// The attempt timed out before the request was written: nothing was sent.
    TimeoutBeforeSend,
    /// The attempt timed out after the request was written: the outcome is unknown.
    TimeoutAfterSend,
    /// The connection was reset after the request was written: the outcome is unknown.
    ResetAfterSend,
}

/// What came back from one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireOutcome {
    /// The provider answered.
    Response(Response),
    /// The provider did not answer.
    Transport(TransportFailure),
}

/// Which part of an answer `read-response` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponsePart {
    /// The whole answer: status, headers, and a prefix of the body up to the host's body
    /// cap. Also the part for every transport failure.
    Complete,
    /// A streamed answer has begun: the status and headers are known; the body is empty.
    /// Quota headers are read here.
    StreamStart,
    /// A streamed answer was delivered whole: the same status and headers, and a body
    /// holding the stream's first bytes and its last bytes (each at most half the body cap)
    /// joined at an event boundary; a stream shorter than the cap comes whole. The headers
    /// were already read at [`ResponsePart::StreamStart`]: only what the body adds (usage,
    /// an error event after a success status) is read here.
    StreamEnd,
}

/// What decides a call's cost is read however a body hides it: generated bodies with any
/// number of other fields, nested or not, before and after the ones that decide cost, each
/// key given once or one of them twice.
#[cfg(test)]
mod cost_fields {
    use proptest::prelude::*;

    use super::BodyDigest;

    /// A field that does not decide cost: a key and a JSON value (a scalar, or an object of
    /// scalars one level down, as `logit_bias` and `metadata` are).
    fn other_field() -> impl Strategy<Value = (String, String)> {
        let scalar = prop_oneof![
            any::<i32>().prop_map(|n| n.to_string()),
            "[a-z ]{0,40}".prop_map(|s| format!("{s:?}")),
            any::<bool>().prop_map(|b| b.to_string()),
        ];
        let object =
            proptest::collection::vec(("[0-9]{1,6}", scalar.clone()), 0..40).prop_map(|entries| {
                let mut seen = std::collections::BTreeSet::new();
                let inner: Vec<String> = entries
                    .into_iter()
                    .filter(|(k, _)| seen.insert(k.clone()))
                    .map(|(k, v)| format!("{k:?}:{v}"))
                    .collect();
                format!("{{{}}}", inner.join(","))
            });
        ("x_[a-z_]{1,12}", prop_oneof![scalar, object])
    }

    proptest! {
        #[test]
        fn the_model_and_maximum_are_read_wherever_they_stand(
            others in proptest::collection::vec(other_field(), 0..150),
            model_at in any::<prop::sample::Index>(),
            max_at in any::<prop::sample::Index>(),
            padding in 0usize..100_000,
            twice in proptest::option::of(0usize..3),
        ) {
            let mut fields: Vec<(String, String)> = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            for (k, v) in others {
                if seen.insert(k.clone()) {
                    fields.push((k, v));
                }
            }
            let model_i = model_at.index(fields.len() + 1);
            fields.insert(model_i, ("model".into(), "\"gpt-4o\"".into()));
            let max_i = max_at.index(fields.len() + 1);
            fields.insert(max_i, ("max_tokens".into(), "777".into()));
            let duplicate = twice.and_then(|i| {
                let (k, _) = fields.get(i)?.clone();
                fields.push((k.clone(), "1".into()));
                Some(k)
            });
            let body = format!(
                "{{{}{}}}",
                " ".repeat(padding),
                fields
                    .iter()
                    .map(|(k, v)| format!("{k:?}:{v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let d = BodyDigest::of(body.as_bytes());
            prop_assert!(d.json);
            prop_assert_eq!(d.duplicate_key(), duplicate.clone());
            if duplicate.is_none() {
                let model = d.string("model");
                prop_assert_eq!(model.as_deref(), Some("gpt-4o"));
                prop_assert_eq!(d.number("max_tokens"), Some(777));
            }
        }
    }
}
