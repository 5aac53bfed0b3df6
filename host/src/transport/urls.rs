//! Each attempt's URL, made from its origin parsed once: a host sends to a handful of
//! origins, and parsing a whole URL (its host through IDNA) at every send costs more than
//! the rest of the request's making. A URL is split at the end of its authority and its
//! origin's parsed form is kept. When the rest (path and query) is plain — no character a
//! URL parser would escape, no dot segment, no fragment — it is set on the origin as it
//! is; otherwise it is parsed onto a copy of the origin. A URL this cannot take apart
//! plainly (another scheme, user information, spaces or control characters, more origins
//! than are kept) is parsed whole. Either way the client is handed the URL's normal form
//! (its host in lower case and in ASCII, its path's dots resolved and its other characters
//! escaped), as a browser would send it.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use http::uri::{Authority, Scheme};
use http::{HeaderValue, Uri};
use url::Url;

/// The most origins kept; a URL of another origin is parsed whole.
const MAX_ORIGINS: usize = 256;

/// Origins already parsed, by the text they were parsed from (`https://api.example.com`).
#[derive(Debug, Default)]
pub(super) struct Origins {
    parsed: RwLock<HashMap<Box<str>, Origin>>,
}

/// One origin, parsed.
#[derive(Debug, Clone)]
struct Origin {
    url: Url,
    /// Its scheme and authority in normal form, as the client is handed them.
    scheme: Scheme,
    authority: Authority,
    /// The `Host` header of an HTTP/1.1 request to it, made once (the client formats one
    /// for every such request that has none).
    host: Option<HeaderValue>,
}

impl Origin {
    fn parse(origin: &str) -> Option<Self> {
        let url = Url::parse(origin).ok()?;
        let normal = Uri::try_from(url.as_str()).ok()?;
        let (scheme, authority) = (normal.scheme()?.clone(), normal.authority()?.clone());
        // The authority without a default port, as the client writes `Host` itself.
        let host = HeaderValue::from_str(authority.as_str()).ok();
        Some(Self {
            url,
            scheme,
            authority,
            host,
        })
    }

    /// The URI of `rest` (a plain path and query, see [`plain`]) at this origin, and the
    /// `Host` header to send it with.
    fn uri(&self, rest: &str) -> Option<(Uri, Option<HeaderValue>)> {
        let uri = Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(if rest.is_empty() { "/" } else { rest })
            .build()
            .ok()?;
        Some((uri, self.host.clone()))
    }
}

impl Origins {
    /// [`Origins::target`]'s URI alone.
    #[cfg(test)]
    pub(super) fn uri(&self, url: &str) -> Result<Uri, String> {
        self.target(url).map(|(uri, _)| uri)
    }

    /// `url` as the client sends it, with the `Host` header for it when the rest of the
    /// URL is plain (see [`plain`]); else `None`, and the client writes its own where the
    /// protocol wants one.
    ///
    /// # Errors
    /// What is wrong with `url`, naming it: not a URL, not `http://` or `https://`, or with
    /// a `user:password@` (credentials go in a header).
    pub(super) fn target(&self, url: &str) -> Result<(Uri, Option<HeaderValue>), String> {
        if let Some((origin, rest)) = split(url)
            && plain(rest)
            && let Some(Some(sent)) = self.with_origin(origin, |o| o.uri(rest))
        {
            return Ok(sent);
        }
        let parsed = match self.url(url) {
            Some(parsed) => parsed,
            None => Url::parse(url).map_err(|e| format!("`{url}` is not a URL ({e})"))?,
        };
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("`{url}` is not an http:// or https:// URL"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(format!(
                "the URL of `{}` carries a user name or password; send credentials in a \
                 header instead",
                parsed.host_str().unwrap_or_default()
            ));
        }
        let uri =
            Uri::try_from(parsed.as_str()).map_err(|e| format!("`{url}` cannot be sent ({e})"))?;
        Ok((uri, None))
    }

    /// `url` parsed, from its origin's kept form when it has a plain one; `None`: let the
    /// caller parse it whole (and say what is wrong with it, if anything).
    pub(super) fn url(&self, url: &str) -> Option<Url> {
        let (origin, rest) = split(url)?;
        let mut parsed = self.with_origin(origin, |o| o.url.clone())?;
        let (rest, fragment) = match rest.split_once('#') {
            Some((rest, fragment)) => (rest, Some(fragment)),
            None => (rest, None),
        };
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        parsed.set_path(path);
        parsed.set_query(query);
        parsed.set_fragment(fragment);
        Some(parsed)
    }

    /// `f` of `origin` parsed, kept from an earlier send or parsed now (and kept).
    fn with_origin<R>(&self, origin: &str, f: impl FnOnce(&Origin) -> R) -> Option<R> {
        let kept = self.parsed.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(parsed) = kept.get(origin) {
            return Some(f(parsed));
        }
        drop(kept);
        let parsed = Origin::parse(origin)?;
        let out = f(&parsed);
        let mut kept = self.parsed.write().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < MAX_ORIGINS {
            kept.insert(origin.into(), parsed);
        }
        Some(out)
    }
}

/// Whether `rest` (what follows a URL's authority) is a path and query that a URL parser
/// leaves as it is: empty or from `/`, without a fragment, made only of the characters a
/// path or query may hold unescaped (letters, digits, `-._~!$&()*+,;=:@/?` and `%`), and
/// without a dot segment (`.`, `..`, or one written with `%2e`).
fn plain(rest: &str) -> bool {
    if !(rest.is_empty() || rest.starts_with('/')) {
        return false;
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&()*+,;=:@/?%".contains(&b);
    if !rest.bytes().all(allowed) {
        return false;
    }
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    let dotted = |segment: &str| {
        segment == "." || segment == ".." || segment.contains("%2e") || segment.contains("%2E")
    };
    !path.split('/').any(dotted)
}

/// `url` split at the end of its authority (`https://host:port`, then the rest) when it is
/// an HTTP(S) URL with a plain authority and nothing the URL parser would remove or
/// rewrite before it reads it (spaces, control characters, backslashes).
fn split(url: &str) -> Option<(&str, &str)> {
    let after_scheme = if url.starts_with("https://") {
        "https://".len()
    } else if url.starts_with("http://") {
        "http://".len()
    } else {
        return None;
    };
    if url.bytes().any(|b| b <= b' ' || b == b'\\' || b == 0x7f) {
        return None;
    }
    let end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after_scheme + i);
    let authority = &url[after_scheme..end];
    let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']');
    if authority.is_empty() || !authority.bytes().all(plain) {
        return None;
    }
    Some((&url[..end], &url[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_made_from_its_kept_origin_is_the_url_parsed_whole() {
        let origins = Origins::default();
        for url in [
            "http://127.0.0.1:8080/v1/chat/completions",
            "https://api.openai.com/v1/chat/completions",
            "https://api.openai.com/v1/models?limit=10&after=x#part",
            "https://api.openai.com",
            "https://api.openai.com?x=1",
            "https://api.openai.com#frag",
            "https://API.OpenAI.com:443/v1/./a/../b/%7Eme",
            "http://[::1]:9000/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
            "https://api.github.com/repos/o/r/issues/1/comments?per_page=100",
            "https://api.stripe.com/v1/charges/ch_1/refunds",
            "https://example.com/ünïcode/path?q=ü&r=a%20b",
            "https://example.com/a?b?c#d#e",
            "https://example.com/a//b/",
            "http://example.com:80/x",
        ] {
            // Twice: once parsed and kept, once from what was kept.
            for _ in 0..2 {
                let made = origins.url(url).expect(url);
                assert_eq!(made, Url::parse(url).unwrap(), "{url}");
                assert_eq!(made.as_str(), Url::parse(url).unwrap().as_str(), "{url}");
            }
        }
    }

    #[test]
    fn a_url_it_cannot_take_apart_plainly_is_left_to_the_client() {
        let origins = Origins::default();
        for url in [
            "ftp://example.com/file",
            "https://user:secret@example.com/",
            "https://exa mple.com/",
            "https://example.com/a b",
            " https://example.com/",
            "https://example.com\\a",
            "https:///path",
            "https://bücher.example/x",
            "/v1/chat/completions",
            "not a url",
        ] {
            assert!(origins.url(url).is_none(), "{url}");
        }
    }

    #[test]
    fn the_host_header_is_the_authority_without_a_default_port() {
        let origins = Origins::default();
        for (url, host) in [
            ("https://API.OpenAI.com:443/v1/chat", Some("api.openai.com")),
            ("http://example.com:80/x", Some("example.com")),
            ("http://127.0.0.1:8080/v1/chat", Some("127.0.0.1:8080")),
            ("https://[::1]:8443/x", Some("[::1]:8443")),
            // Not kept (parsed whole at each send): the client writes its `Host`.
            ("https://bücher.example/x", None),
        ] {
            // Twice: parsed, then kept.
            for _ in 0..2 {
                let (_, sent) = origins.target(url).unwrap();
                let sent = sent.as_ref().map(|h| h.to_str().unwrap());
                assert_eq!(sent, host, "{url}");
            }
        }
    }

    #[test]
    fn the_client_is_handed_the_normal_form_and_refused_urls_are_named() {
        let origins = Origins::default();
        for (url, sent) in [
            (
                "https://API.OpenAI.com:443/v1/./a/../b/%7Eme",
                "https://api.openai.com/v1/b/%7Eme",
            ),
            (
                "https://example.com/ünïcode/path?q=ü#part",
                "https://example.com/%C3%BCn%C3%AFcode/path?q=%C3%BC",
            ),
            (
                "https://bücher.example/x",
                "https://xn--bcher-kva.example/x",
            ),
            (
                "http://127.0.0.1:8080/v1/chat",
                "http://127.0.0.1:8080/v1/chat",
            ),
        ] {
            assert_eq!(origins.uri(url).unwrap().to_string(), sent, "{url}");
        }
        for (url, named) in [
            ("ftp://example.com/file", "not an http:// or https:// URL"),
            ("/v1/chat/completions", "is not a URL"),
            ("https://user:secret@example.com/", "user name or password"),
        ] {
            let err = origins.uri(url).unwrap_err();
            assert!(err.contains(named), "{url}: {err}");
            assert!(!err.contains("secret"), "{err}");
        }
    }

    #[test]
    fn no_more_origins_are_kept_than_the_bound() {
        let origins = Origins::default();
        for i in 0..MAX_ORIGINS + 10 {
            let url = format!("http://host{i}.example:8080/x");
            assert_eq!(origins.url(&url).unwrap().as_str(), url);
        }
        assert_eq!(origins.parsed.read().unwrap().len(), MAX_ORIGINS);
    }

    /// `url` as the client is handed it when parsed whole, the slow way (`None`: refused,
    /// as one with a user name or password is).
    fn parsed_whole(url: &str) -> Option<String> {
        let parsed = Url::parse(url).ok()?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return None;
        }
        Some(Uri::try_from(parsed.as_str()).ok()?.to_string())
    }

    #[test]
    fn a_plain_rest_is_set_as_it_is_and_anything_else_is_parsed() {
        for (rest, is_plain) in [
            ("", true),
            ("/v1/chat/completions", true),
            ("/repos/o/r/issues?per_page=100&state=open", true),
            ("/v1/files/file-abc%2Fdef", true),
            ("/a?b?c", true),
            ("/a/./b", false),
            ("/a/../b", false),
            ("/a/%2E%2e/b", false),
            ("/a/b/.", false),
            ("/a#frag", false),
            ("/a b", false),
            ("/a?q='x'", false),
            ("/ü", false),
            ("?x=1", false),
            ("/a\\b", false),
        ] {
            assert_eq!(plain(rest), is_plain, "{rest}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_url_is_handed_to_the_client_as_parsing_it_whole_would(
            origin in proptest::sample::select(&[
                "http://127.0.0.1:8080",
                "https://API.OpenAI.com:443",
                "https://api.github.com",
                "http://[::1]:9000",
                "http://example.com:80",
            ][..]),
            // Any rest, and rests from `/` made of what a plain one may hold (so that the
            // plain path is taken often, and its near misses too).
            rest in proptest::prop_oneof![
                "[/a.?%2eE#'~ü:@=&+\\-]{0,16}",
                "/[a.?%2eE~:@=&+/-]{0,16}",
            ],
        ) {
            let url = format!("{origin}{rest}");
            let origins = Origins::default();
            // Twice: once with the origin parsed now, once from what was kept.
            for _ in 0..2 {
                let made = origins.uri(&url).ok().map(|u| u.to_string());
                proptest::prop_assert_eq!(made, parsed_whole(&url), "{}", url);
            }
        }
    }
}
