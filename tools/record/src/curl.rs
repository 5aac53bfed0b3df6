//! Reading a `curl -i` dump: a status line, header lines, a blank line, the body. Redirects
//! (`-L`) and `100 Continue` put several header blocks one after another; the last one is
//! the answer. A dump taken with `-v` as well (`curl -i -v URL > dump 2>&1`) also holds
//! curl's own lines — `> ` the request it sent, `< ` the headers it received, `* ` its
//! notes, `{ `/`} ` data counts — which are taken out of the way and give what `-i` alone
//! does not: the request's method, target, `Host` and headers. A `-v` dump without `-i` has
//! its status and headers on `< ` lines only, and those are read instead.
//!
//! The request's body is not in either dump; a case recorded from one has none.

use super::Capture;

/// A request or response head: its first line and its fields.
#[derive(Debug, Default)]
struct Head {
    first: String,
    fields: Vec<(String, String)>,
}

/// The capture a dump holds. `url` and `method` override what the dump says of its request;
/// without `-v` lines, `url` is needed.
pub(super) fn parse(
    text: &str,
    url: Option<&str>,
    method: Option<&str>,
) -> Result<Capture, String> {
    let verbose = text.lines().any(|l| {
        l.strip_prefix("> ")
            .is_some_and(|r| request_line(r).is_some())
    });
    let mut rest = String::with_capacity(text.len());
    let (mut sent, mut received): (Vec<Head>, Vec<Head>) = (Vec::new(), Vec::new());
    for piece in text.split_inclusive('\n') {
        let line = piece.trim_end_matches(['\r', '\n']);
        if !verbose || !is_curl_line(line) {
            rest.push_str(piece);
            continue;
        }
        let (heads, content) = match line.split_at(1) {
            (">", c) => (&mut sent, c.trim_start()),
            ("<", c) => (&mut received, c.trim_start()),
            _ => continue,
        };
        match heads.last_mut() {
            _ if content.is_empty() => {}
            Some(h) if !starts_head(content) => {
                h.fields.push(field(content)?);
            }
            _ => heads.push(Head {
                first: content.to_owned(),
                fields: Vec::new(),
            }),
        }
    }
    if verbose {
        // curl's closing note goes to a new line of its own output, which is the body's
        // last line when the body does not end with a line feed.
        for note in ["* Connection #", "* Closing connection"] {
            if let Some(i) = rest.rfind(note).filter(|&i| !rest[i..].contains("\n\n")) {
                rest.truncate(i);
            }
        }
    }
    let (status, fields, body) = match answers(&rest)? {
        Some((status, fields, body)) => (status, fields, body),
        None => {
            let head = received
                .last()
                .ok_or("no status line (like HTTP/1.1 200 OK): record the response with curl -i")?;
            let status = status_line(&head.first).ok_or_else(|| {
                format!(
                    "{:?} is not a status line (like HTTP/1.1 200 OK)",
                    head.first
                )
            })?;
            let body = rest.trim_start_matches(['\r', '\n']).to_owned();
            (status, head.fields.clone(), body)
        }
    };
    let request = sent.last();
    let (sent_method, target) = request.and_then(|r| request_line(&r.first)).unzip();
    let host = request.and_then(|r| {
        r.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.clone())
    });
    let url = match (url, host, target) {
        (Some(u), _, _) => u.to_owned(),
        (None, Some(host), Some(target)) => format!("https://{host}{target}"),
        _ => {
            return Err(
                "the dump does not show the request's URL: give --request-url URL (or record \
                 with curl -i -v)"
                    .into(),
            );
        }
    };
    let now_ms = fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("date"))
        .and_then(|(_, v)| sluice_plugin_sdk::time::parse_http_date_ms(v));
    Ok(Capture {
        origin: "the last response".into(),
        method: method.or(sent_method).unwrap_or("GET").to_owned(),
        url,
        request_headers: request.map(|r| r.fields.clone()).unwrap_or_default(),
        request_body: String::new(),
        status,
        response_headers: fields,
        response_body: body,
        now_ms,
    })
}

type Answer = (u16, Vec<(String, String)>, String);

/// The last of the header blocks `-i` wrote and the body after it, or `None` when the text
/// does not start with a status line.
fn answers(text: &str) -> Result<Option<Answer>, String> {
    let mut rest = text.trim_start_matches(['\r', '\n']);
    let mut last = None;
    loop {
        let (line, after) = split_line(rest);
        let Some(status) = status_line(line) else {
            break;
        };
        rest = after;
        let mut fields = Vec::new();
        loop {
            let (line, after) = split_line(rest);
            rest = after;
            if line.is_empty() {
                break;
            }
            fields.push(field(line)?);
        }
        last = Some((status, fields));
    }
    Ok(last.map(|(status, fields)| (status, fields, rest.to_owned())))
}

/// The first line of `text` (without its line end) and what follows it.
fn split_line(text: &str) -> (&str, &str) {
    let (line, rest) = text.split_once('\n').unwrap_or((text, ""));
    (line.strip_suffix('\r').unwrap_or(line), rest)
}

/// `HTTP/1.1 200 OK`, `HTTP/2 429`: the status.
fn status_line(line: &str) -> Option<u16> {
    let rest = line.strip_prefix("HTTP/")?;
    let mut words = rest.split(' ');
    words.next()?;
    let code = words.next()?;
    (code.len() == 3)
        .then(|| code.parse().ok())
        .flatten()
        .filter(|c| (100..=599).contains(c))
}

/// `POST /v1/chat/completions HTTP/1.1`: the method and the target.
fn request_line(line: &str) -> Option<(&str, &str)> {
    let mut words = line.split(' ');
    let (method, target, version) = (words.next()?, words.next()?, words.next()?);
    let token = !method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase());
    (token && version.starts_with("HTTP/") && words.next().is_none()).then_some((method, target))
}

fn starts_head(content: &str) -> bool {
    status_line(content).is_some() || request_line(content).is_some()
}

fn is_curl_line(line: &str) -> bool {
    matches!(line, ">" | "<")
        || ["> ", "< ", "* ", "{ ", "} "]
            .iter()
            .any(|p| line.starts_with(p))
}

/// `name: value`, the value trimmed as HTTP does.
fn field(line: &str) -> Result<(String, String), String> {
    let (name, value) = line
        .split_once(':')
        .filter(|(n, _)| !n.is_empty() && !n.contains(' '))
        .ok_or_else(|| format!("{line:?} is not a header line (name: value)"))?;
    Ok((name.to_owned(), value.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_of_several_answers_is_the_one_recorded() {
        let dump = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 301 Moved\r\nLocation: /b\r\n\r\n\
                    HTTP/2 429\r\nretry-after: 2\r\ndate: Sun, 29 Nov 2026 12:00:00 GMT\r\n\r\n\
                    {\"error\":1}\r\n";
        let c = parse(dump, Some("https://x.test/b"), Some("POST")).unwrap();
        assert_eq!(c.status, 429);
        assert_eq!(
            c.response_headers,
            [
                ("retry-after".to_owned(), "2".to_owned()),
                (
                    "date".to_owned(),
                    "Sun, 29 Nov 2026 12:00:00 GMT".to_owned()
                )
            ]
        );
        assert_eq!(c.response_body, "{\"error\":1}\r\n");
        assert_eq!(c.method, "POST");
        assert_eq!(c.now_ms, Some(1_795_953_600_000));
    }

    #[test]
    fn a_verbose_dump_names_the_request_and_its_lines_are_not_the_body() {
        let dump = "* Connected to api.openai.com\n\
                    > POST /v1/chat/completions HTTP/2\n> Host: api.openai.com\n\
                    > authorization: Bearer sk-x\n>\n\
                    < HTTP/2 200\n< x-ratelimit-remaining-requests: 9\n<\n\
                    HTTP/2 200\nx-ratelimit-remaining-requests: 9\n\n{\"ok\":true}\
                    * Connection #0 left intact\n";
        let c = parse(dump, None, None).unwrap();
        assert_eq!(c.method, "POST");
        assert_eq!(c.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(c.request_headers.len(), 2);
        assert_eq!(c.status, 200);
        assert_eq!(
            c.response_body, "{\"ok\":true}",
            "curl's note is not the body's"
        );
    }

    #[test]
    fn a_verbose_dump_without_i_reads_the_received_lines() {
        let dump = "> GET /v1/items HTTP/1.1\n> Host: api.example.com\n>\n\
                    < HTTP/1.1 503 Service Unavailable\n< Retry-After: 5\n<\n{}";
        let c = parse(dump, None, None).unwrap();
        assert_eq!((c.status, c.response_body.as_str()), (503, "{}"));
        assert_eq!(
            c.response_headers,
            [("Retry-After".to_owned(), "5".to_owned())]
        );
    }

    #[test]
    fn a_dump_without_a_status_line_or_a_url_is_refused_saying_why() {
        let err = parse("{\"a\":1}", Some("https://x.test/"), None).unwrap_err();
        assert!(err.contains("no status line"), "{err}");
        let err = parse("HTTP/1.1 200 OK\n\n", None, None).unwrap_err();
        assert!(err.contains("--request-url"), "{err}");
        let err = parse(
            "HTTP/1.1 200 OK\nbad header\n\n",
            Some("https://x.test/"),
            None,
        )
        .unwrap_err();
        assert!(err.contains("\"bad header\" is not a header line"), "{err}");
    }
}
