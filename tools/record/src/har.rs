//! Reading a HAR file (HTTP Archive 1.2, as browsers and proxies export it): every entry of
//! `log.entries`, or those whose request URL starts with one of the URLs asked for.
//!
//! Read leniently where exporters differ (fields they add are ignored) and strictly where a
//! case would be wrong: an entry without a response (status 0), a body exported as base64
//! (binary: a vector holds text) and a header HTTP forbids are errors that name the entry.

use serde::Deserialize;

use super::Capture;

#[derive(Debug, Deserialize)]
struct Har {
    log: Log,
}

#[derive(Debug, Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: Option<String>,
    request: HarRequest,
    response: HarResponse,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarRequest {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    post_data: Option<PostData>,
}

#[derive(Debug, Deserialize)]
struct PostData {
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HarResponse {
    status: u16,
    #[serde(default)]
    headers: Vec<Header>,
    content: Option<Content>,
}

#[derive(Debug, Deserialize)]
struct Content {
    text: Option<String>,
    encoding: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Header {
    name: String,
    value: String,
}

/// The entries of a HAR file's text; `urls` selects them by the start of their URL (every
/// entry when empty). Errors name the entry by its index in `log.entries`.
pub(super) fn parse(text: &str, urls: &[String]) -> Result<Vec<Capture>, String> {
    let har: Har = serde_json::from_str(text).map_err(|e| {
        format!("not a HAR file (JSON with log.entries[].request and .response): {e}")
    })?;
    let total = har.log.entries.len();
    let mut out = Vec::new();
    for (i, e) in har.log.entries.into_iter().enumerate() {
        if !urls.is_empty() && !urls.iter().any(|u| e.request.url.starts_with(u.as_str())) {
            continue;
        }
        let origin = format!("entry {i}");
        if e.response.status == 0 {
            return Err(format!(
                "{origin} ({} {}): status 0, no response was captured",
                e.request.method, e.request.url
            ));
        }
        let content = e.response.content.unwrap_or(Content {
            text: None,
            encoding: None,
        });
        if let Some(enc) = content.encoding.as_deref().filter(|e| !e.is_empty()) {
            return Err(format!(
                "{origin} ({} {}): the response body is exported as {enc} (binary); a vector \
                 holds a text body",
                e.request.method, e.request.url
            ));
        }
        let now_ms = e
            .started_date_time
            .as_deref()
            .and_then(sluice_plugin_sdk::time::parse_rfc3339_ms);
        out.push(Capture {
            origin,
            method: e.request.method,
            url: e.request.url,
            request_headers: headers(e.request.headers),
            request_body: e.request.post_data.and_then(|p| p.text).unwrap_or_default(),
            status: e.response.status,
            response_headers: headers(e.response.headers),
            response_body: content.text.unwrap_or_default(),
            now_ms,
        });
    }
    if out.is_empty() {
        return Err(if total == 0 {
            "log.entries is empty: nothing to record".into()
        } else {
            format!(
                "none of the {total} entries has a URL starting with {}",
                urls.join(" or ")
            )
        });
    }
    Ok(out)
}

/// HTTP/2 captures list pseudo-headers (`:authority`, `:status`): they are not fields, and
/// the URL and status already say what they do.
fn headers(h: Vec<Header>) -> Vec<(String, String)> {
    h.into_iter()
        .filter(|h| !h.name.starts_with(':'))
        .map(|h| (h.name, h.value))
        .collect()
}
