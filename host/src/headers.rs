//! Credentials and header blocks: which request headers carry credentials, how their values
//! are kept from plugins, logs and escalations, and the `fields` blocks (`name:value\n`)
//! that carry headers across the contract ([`crate::contract`]).

use std::borrow::Cow;

use crate::contract::{Request, UncertainWrite};

/// Request headers that carry credentials, by name. Their values never reach a plugin, a log or
/// an escalation; [`is_credential`] also catches vendors' own names by their words.
pub const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "cookie2",
    "x-api-key",
    "api-key",
    "openai-api-key",
    "x-goog-api-key",
    "ocp-apim-subscription-key",
];

/// Words that make any header a credential wherever they appear in its name
/// (`x-auth-token`, `private-token`, `x-amz-security-token`, `x-vendor-apikey`, ...): a
/// header a plugin needs never has them, and a credential header whose name sluice does not
/// know must not slip through.
const CREDENTIAL_WORDS: &[&str] = &["token", "secret", "password", "apikey", "api-key", "x-auth"];

/// Request headers that choose whose account a call bills on a key that serves several
/// (OpenAI's organisation and project): not secrets, but an agent that sets them may bill
/// another project of its operator's key. The sidecar strips them unless an agent's entry
/// lets it set them (`[serve.agents.NAME] pass_headers`).
/// Google's billing project (`x-goog-user-project`) and Stripe's connected account and
/// context (`stripe-account`, `stripe-context`) choose an account the same way.
pub const ACCOUNT_HEADERS: &[&str] = &[
    "openai-organization",
    "openai-project",
    "x-goog-user-project",
    "stripe-account",
    "stripe-context",
];

/// Whether `name` is one of [`ACCOUNT_HEADERS`], in any case.
pub fn is_account(name: &str) -> bool {
    ACCOUNT_HEADERS.iter().any(|c| c.eq_ignore_ascii_case(name))
}

/// Request headers that say where a request came from or how a proxy should route it
/// (`forwarded`, `via`, a client address, an original URL, a method override), by name.
const ROUTING_HEADERS: &[&str] = &[
    "forwarded",
    "via",
    "x-real-ip",
    "x-client-ip",
    "client-ip",
    "true-client-ip",
    "x-cluster-client-ip",
    "fastly-client-ip",
    "x-original-url",
    "x-original-uri",
    "x-original-host",
    "x-rewrite-url",
    "x-host",
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
];

/// Families of routing headers, by prefix: every `x-forwarded-*`, Cloudflare's `cf-*`
/// (`cf-connecting-ip`, `cf-access-*`) and Envoy's `x-envoy-*`.
const ROUTING_PREFIXES: &[&str] = &["x-forwarded-", "cf-", "x-envoy-"];

/// Whether `name` is a routing header: one that identifies a client or steers a proxy,
/// in any case. An agent's routing headers are never the provider's business: the sidecar
/// strips each, whatever the agent's entry allows.
pub fn is_routing(name: &str) -> bool {
    ROUTING_HEADERS.iter().any(|c| c.eq_ignore_ascii_case(name))
        || ROUTING_PREFIXES.iter().any(|p| {
            name.get(..p.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(p))
        })
}

/// The placeholder that replaces a credential's value.
pub const REDACTED: &str = "[redacted]";

/// Whether `name` is a credential header: one of [`CREDENTIAL_HEADERS`], or a name holding a
/// credential word (`token`, `secret`, `password`, `apikey`, `api-key`, `x-auth`), in any case.
///
/// Asked of every header of every request, more than once (the sidecar's agent check, then
/// each plugin call's redaction): one pass over the name, a word compared only where the
/// name has its first letter.
pub fn is_credential(name: &str) -> bool {
    if CREDENTIAL_HEADERS
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name))
    {
        return true;
    }
    let name = name.as_bytes();
    (0..name.len()).any(|i| {
        let first = name[i].to_ascii_lowercase();
        CREDENTIAL_WORDS.iter().any(|w| {
            let w = w.as_bytes();
            w[0] == first
                && name
                    .get(i..i + w.len())
                    .is_some_and(|part| part.eq_ignore_ascii_case(w))
        })
    })
}

pub use sluice_plugin_sdk::headers::{InvalidField, encode as encode_fields, pairs as field_pairs};

/// `block` (a WIT `fields` block) with the value of every credential header replaced by
/// [`REDACTED`]; borrowed as is when it holds none.
pub fn redact_credentials(block: &str) -> Cow<'_, str> {
    if !field_pairs(block).any(|(name, _)| is_credential(name)) {
        return Cow::Borrowed(block);
    }
    let mut out = String::with_capacity(block.len());
    for (name, value) in field_pairs(block) {
        out.push_str(name);
        out.push(':');
        out.push_str(if is_credential(name) { REDACTED } else { value });
        out.push('\n');
    }
    Cow::Owned(out)
}

/// Query parameters that carry a credential, by exact name in any case, besides those whose
/// name holds a credential word ([`is_credential`]): Google's `key`, OAuth's `access_token`,
/// signed URLs' signatures (Azure's `sig`, AWS's `X-Amz-*`).
const CREDENTIAL_PARAMS: &[&str] = &[
    "key",
    "api_key",
    "access_token",
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "client_secret",
];

/// Whether the query parameter `name` carries a credential.
fn is_credential_param(name: &str) -> bool {
    CREDENTIAL_PARAMS
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name))
        || is_credential(name)
}

/// `url` with the value of every credential query parameter (`?key=`, `access_token`, a
/// signature) replaced by [`REDACTED`]; borrowed as is when it holds none.
pub fn redact_query(url: &str) -> Cow<'_, str> {
    let Some((base, rest)) = url.split_once('?') else {
        return Cow::Borrowed(url);
    };
    let (query, fragment) = match rest.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (rest, None),
    };
    // A parameter's name, and whether it has a value that is a credential.
    fn secret(pair: &str) -> (&str, bool) {
        match pair.split_once('=') {
            Some((name, _)) => (name, is_credential_param(name)),
            None => (pair, false),
        }
    }
    if !query.split('&').any(|p| secret(p).1) {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    out.push_str(base);
    for (i, pair) in query.split('&').enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        match secret(pair) {
            (name, true) => {
                out.push_str(name);
                out.push('=');
                out.push_str(REDACTED);
            }
            (_, false) => out.push_str(pair),
        }
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    Cow::Owned(out)
}

/// `req` with the value of every credential header ([`redact_credentials`]) and credential
/// query parameter ([`redact_query`]) redacted; borrowed as is when it has none. Every
/// request passes here before a plugin sees it, whoever makes the call and however the
/// plugin runs. A copy keeps only the body's prefix (all a plugin is shown) and its digest,
/// so a long body is never copied whole.
pub(crate) fn without_credentials(req: &Request) -> Cow<'_, Request> {
    match (redact_credentials(&req.headers), redact_query(&req.url)) {
        (Cow::Borrowed(_), Cow::Borrowed(_)) => Cow::Borrowed(req),
        (headers, url) => Cow::Owned(Request {
            method: req.method.clone(),
            url: url.into_owned(),
            class: req.class,
            headers: headers.into_owned(),
            body: req.body.slice(..req.body_prefix().len()),
            digest: req.digest.clone(),
            now_ms: req.now_ms,
        }),
    }
}

/// `write` with the value of every credential query parameter of its URL redacted
/// ([`redact_query`]); borrowed as is when it has none. Every uncertain write passes here
/// before a plugin sees it.
pub(crate) fn write_without_credentials(write: &UncertainWrite) -> Cow<'_, UncertainWrite> {
    match redact_query(&write.url) {
        Cow::Borrowed(_) => Cow::Borrowed(write),
        Cow::Owned(url) => Cow::Owned(UncertainWrite {
            url,
            ..write.clone()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_query_parameters_are_redacted_and_the_rest_kept() {
        let cases = [
            (
                "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=AIza123&alt=sse",
                "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=[redacted]&alt=sse",
            ),
            (
                "https://x.example/v1?alt=sse&ACCESS_TOKEN=t&x-vendor-token=v#frag",
                "https://x.example/v1?alt=sse&ACCESS_TOKEN=[redacted]&x-vendor-token=[redacted]#frag",
            ),
            (
                "https://s3.example/o?X-Amz-Credential=a&X-Amz-Signature=b&partNumber=2",
                "https://s3.example/o?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&partNumber=2",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(redact_query(url), want);
        }
        for url in [
            "https://api.openai.com/v1/models",
            "https://api.example.com/v1/things?limit=3&keyword=k&monkey=1",
        ] {
            assert!(matches!(redact_query(url), Cow::Borrowed(_)), "{url}");
        }
    }

    #[test]
    fn vendor_credential_headers_are_known_by_their_words_and_plain_headers_are_not() {
        for name in [
            "X-Auth-Token",
            "PRIVATE-TOKEN",
            "x-amz-security-token",
            "Ocp-Apim-Subscription-Key",
            "x-vendor-apikey",
            "x-client-secret",
            "Cookie2",
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in [
            "content-type",
            "idempotency-key",
            "anthropic-version",
            "openai-organization",
            "accept",
            "user-agent",
        ] {
            assert!(!is_credential(name), "{name}");
        }
    }

    #[test]
    fn routing_headers_are_known_by_name_and_family_and_plain_headers_are_not() {
        for name in [
            "Forwarded",
            "x-forwarded-for",
            "X-Forwarded-Host",
            "x-forwarded-proto",
            "cf-access-client-id",
            "CF-Connecting-IP",
            "x-envoy-original-path",
            "x-real-ip",
            "true-client-ip",
            "x-http-method-override",
            "via",
        ] {
            assert!(is_routing(name), "{name}");
        }
        for name in [
            "content-type",
            "idempotency-key",
            "anthropic-version",
            "x-stainless-retry-count",
            "user-agent",
            "cf",
            "x-forwarded",
        ] {
            assert!(!is_routing(name), "{name}");
        }
    }

    proptest::proptest! {
        /// The one-pass check finds a credential word exactly where comparing the word at
        /// every position of the name does.
        #[test]
        fn the_one_pass_check_agrees_with_a_word_compared_everywhere(
            name in "[a-zA-Z-]{0,6}(token|SECRET|Password|apikey|api-key|x-Auth|pass|api|x-a|tok)?[a-zA-Z-]{0,6}"
        ) {
            let everywhere = CREDENTIAL_HEADERS.iter().any(|c| c.eq_ignore_ascii_case(&name))
                || CREDENTIAL_WORDS.iter().any(|w| {
                    name.as_bytes()
                        .windows(w.len())
                        .any(|part| part.eq_ignore_ascii_case(w.as_bytes()))
                });
            proptest::prop_assert_eq!(is_credential(&name), everywhere, "{}", name);
        }
    }

    #[test]
    fn credentials_are_redacted_whatever_their_case() {
        let block = encode_fields([
            ("Authorization", "Bearer sk-secret"),
            ("X-Api-Key", "k"),
            ("content-type", "application/json"),
        ])
        .unwrap();
        let redacted = redact_credentials(&block);
        assert_eq!(
            redacted,
            "Authorization:[redacted]\nX-Api-Key:[redacted]\ncontent-type:application/json\n"
        );
        assert!(matches!(redact_credentials("a:1\n"), Cow::Borrowed(_)));
    }
}
