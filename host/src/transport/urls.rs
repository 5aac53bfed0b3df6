//! Each attempt's URL, made from its origin parsed once: the HTTP client would parse the
//! whole URL at every send, its host through IDNA, though a host sends to a handful of
//! origins. A URL is split at the end of its authority; the origin's parsed form is kept,
//! and only the path, query and fragment are set on a copy of it. A URL this cannot take
//! apart plainly (another scheme, user information, spaces or control characters, more
//! origins than are kept) is left to the client to parse whole.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use reqwest::Url;

/// The most origins kept; a URL of another origin is parsed whole.
const MAX_ORIGINS: usize = 256;

/// Origins already parsed, by the text they were parsed from (`https://api.example.com`).
#[derive(Debug, Default)]
pub(super) struct Origins {
    parsed: RwLock<HashMap<Box<str>, Url>>,
}

impl Origins {
    /// `url` parsed, from its origin's kept form when it has a plain one; `None`: let the
    /// client parse it (and say what is wrong with it, if anything).
    pub(super) fn url(&self, url: &str) -> Option<Url> {
        let (origin, rest) = split(url)?;
        let mut parsed = self.origin(origin)?;
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

    /// A copy of `origin` parsed, kept from an earlier send or parsed now (and kept).
    fn origin(&self, origin: &str) -> Option<Url> {
        let kept = self.parsed.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(url) = kept.get(origin) {
            return Some(url.clone());
        }
        drop(kept);
        let url = Url::parse(origin).ok()?;
        let mut kept = self.parsed.write().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < MAX_ORIGINS {
            kept.insert(origin.into(), url.clone());
        }
        Some(url)
    }
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
    fn no_more_origins_are_kept_than_the_bound() {
        let origins = Origins::default();
        for i in 0..MAX_ORIGINS + 10 {
            let url = format!("http://host{i}.example:8080/x");
            assert_eq!(origins.url(&url).unwrap().as_str(), url);
        }
        assert_eq!(origins.parsed.read().unwrap().len(), MAX_ORIGINS);
    }
}
