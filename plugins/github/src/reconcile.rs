//! Settling an uncertain GitHub write by a lookup.
//!
//! GitHub's create endpoints take no idempotency key: a POST sent twice creates two issues.
//! So a write whose answer was lost is never resent on the chance that it did not happen: it
//! is looked for. Its body carries the action's client reference (the host passes the
//! reference only when the body holds it), and the plugin reads the repository's issues,
//! newest first, for one whose body (or title) holds it:
//!
//! - an issue holds it: done, with the issue's `id`;
//! - the whole list was read — one complete page, no `Link` to a next one — and no issue
//!   holds it: not done (the host looks a second time, once no attempt can still be at
//!   GitHub, before it sends the write again);
//! - anything else is unknown, and a person decides: more issues than one page, an answer
//!   cut at the host's body cap that does not show the reference, another status.
//!
//! The issue list, not search: GitHub's search index lags behind writes, so a search that
//! finds nothing proves nothing. Only issue creation (`POST /repos/{owner}/{repo}/issues`)
//! can be looked up this way; any other write is unsupported, and goes to a person.

use sluice_plugin_sdk::json::{self, Value};
use sluice_plugin_sdk::{
    ReconcilePlan, Reconciliation, Response, StatusQuery, UncertainWrite, headers,
};

/// Issues read in one lookup: GitHub's largest page.
pub const PER_PAGE: u32 = 100;

/// How to settle `write`: read the newest issues of its repository, looking for its client
/// reference.
pub fn plan(write: &UncertainWrite) -> ReconcilePlan {
    let Some(issues) = issues_url(&write.method, &write.url) else {
        return ReconcilePlan::Unsupported(format!(
            "GitHub takes no idempotency key and the plugin knows no lookup for {} {}: only \
             issue creation (POST /repos/{{owner}}/{{repo}}/issues) is looked up",
            write.method,
            path(&write.url)
        ));
    };
    if !write.client_reference.as_deref().is_some_and(is_reference) {
        return ReconcilePlan::Unsupported(
            "the issue's body carries no client reference to look for, and GitHub takes no \
             idempotency key: only a person can tell whether it was created"
                .into(),
        );
    }
    ReconcilePlan::Query(StatusQuery {
        method: "GET".into(),
        url: format!("{issues}?state=all&sort=created&direction=desc&per_page={PER_PAGE}"),
        headers: "accept:application/vnd.github+json\n".into(),
        body: Vec::new(),
    })
}

/// Reads the issue list that [`plan`] asked for.
pub fn read(write: &UncertainWrite, resp: &Response) -> Reconciliation {
    let Some(reference) = write
        .client_reference
        .as_deref()
        .filter(|r| is_reference(r))
    else {
        return Reconciliation::Unknown("the write carries no client reference".into());
    };
    if resp.status != 200 {
        return Reconciliation::Unknown(format!("the issue list answered {}", resp.status));
    }
    let list = json::parse(&resp.body);
    let Some(issues) = list.as_ref().and_then(Value::as_array) else {
        if holds(&String::from_utf8_lossy(&resp.body), reference) {
            // Cut at the body cap, but an issue shows the reference before the cut.
            return Reconciliation::Found(None);
        }
        return Reconciliation::Unknown(
            "the issue list could not be read whole (cut at the host's body cap, or not a \
             JSON list), and what was read does not show the reference"
                .into(),
        );
    };
    let carries = |issue: &&Value| {
        ["body", "title"]
            .iter()
            .filter_map(|k| issue.get(k).and_then(Value::as_str))
            .any(|text| holds(text, reference))
    };
    if let Some(issue) = issues.iter().find(carries) {
        return Reconciliation::Found(issue.get("id").and_then(id_text));
    }
    if has_next_page(resp) {
        return Reconciliation::Unknown(format!(
            "none of the {} newest issues carries the reference, and the list goes on: older \
             issues were not read",
            issues.len()
        ));
    }
    Reconciliation::NotFound
}

/// `scheme://host/repos/{owner}/{repo}/issues` when `method` `url` creates an issue.
fn issues_url(method: &str, url: &str) -> Option<String> {
    if !method.eq_ignore_ascii_case("POST") {
        return None;
    }
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme, "https" | "http") {
        return None;
    }
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..split];
    match path(url).trim_matches('/').split('/').collect::<Vec<_>>()[..] {
        ["repos", owner, repo, "issues"] if is_name(owner) && is_name(repo) && !host.is_empty() => {
            Some(format!("{scheme}://{host}/repos/{owner}/{repo}/issues"))
        }
        _ => None,
    }
}

/// The path of an absolute URL, without its query or fragment.
fn path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or_default()
}

/// An owner's or repository's name as GitHub allows them: letters, digits, `-`, `_`, `.`
/// (not dots alone, which would climb the path).
fn is_name(s: &str) -> bool {
    s.len() <= 100
        && s.bytes().any(|b| b != b'.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A client reference worth looking for: letters, digits, `-` and `_`, at least 8 of them
/// (a shorter one could stand in ordinary text).
fn is_reference(s: &str) -> bool {
    (8..=255).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// Whether `text` holds `reference` as a word of its own (not inside a longer reference).
fn holds(text: &str, reference: &str) -> bool {
    let word =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    text.match_indices(reference).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + reference.len()..].chars().next())
    })
}

/// An issue's `id` (a number on GitHub) as text.
fn id_text(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() && s.len() <= 255 => Some(s.clone()),
        _ => None,
    }
}

/// Whether the answer's `Link` header names a next page.
fn has_next_page(resp: &Response) -> bool {
    headers(&resp.headers)
        .all("link")
        .flat_map(|v| v.split(','))
        .any(|link| {
            link.split(';')
                .skip(1)
                .any(|p| p.trim().eq_ignore_ascii_case("rel=\"next\""))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REF: &str = "sluice-0a1b2c3d4e5f60718293a4b5";

    fn write(method: &str, url: &str, reference: Option<&str>) -> UncertainWrite {
        UncertainWrite {
            method: method.into(),
            url: url.into(),
            idempotency_key: Some("sluice-key".into()),
            client_reference: reference.map(str::to_owned),
            operation_id: None,
            now_ms: 0,
        }
    }

    fn issue_write() -> UncertainWrite {
        write("POST", "https://api.github.com/repos/o/r/issues", Some(REF))
    }

    fn list(status: u16, headers: &str, body: &str) -> Response {
        Response {
            status,
            headers: headers.into(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn an_issue_is_looked_for_in_its_repository_newest_first_never_resent_blindly() {
        let ReconcilePlan::Query(q) = plan(&issue_write()) else {
            panic!("a lookup")
        };
        assert_eq!(q.method, "GET");
        assert_eq!(
            q.url,
            "https://api.github.com/repos/o/r/issues?state=all&sort=created&direction=desc&per_page=100"
        );
        let local = write(
            "POST",
            "http://127.0.0.1:4000/repos/o/r/issues?x=1",
            Some(REF),
        );
        let ReconcilePlan::Query(q) = plan(&local) else {
            panic!("a lookup")
        };
        assert!(
            q.url.starts_with("http://127.0.0.1:4000/repos/o/r/issues?"),
            "{}",
            q.url
        );
    }

    #[test]
    fn without_a_reference_or_for_another_route_a_person_decides() {
        for w in [
            write("POST", "https://api.github.com/repos/o/r/issues", None),
            write(
                "POST",
                "https://api.github.com/repos/o/r/issues",
                Some("short"),
            ),
            write(
                "POST",
                "https://api.github.com/repos/o/r/issues/1/comments",
                Some(REF),
            ),
            write(
                "PATCH",
                "https://api.github.com/repos/o/r/issues",
                Some(REF),
            ),
            write(
                "POST",
                "https://api.github.com/repos/o/../issues",
                Some(REF),
            ),
            write("POST", "ftp://api.github.com/repos/o/r/issues", Some(REF)),
        ] {
            assert!(
                matches!(plan(&w), ReconcilePlan::Unsupported(_)),
                "{} {}",
                w.method,
                w.url
            );
        }
    }

    #[test]
    fn an_issue_carrying_the_reference_is_the_write_done() {
        let body = format!(
            r#"[{{"id":7,"number":3,"body":"other"}},{{"id":1296269,"number":2,"body":"Pay.\n<!-- {REF} -->"}}]"#
        );
        assert_eq!(
            read(&issue_write(), &list(200, "", &body)),
            Reconciliation::Found(Some("1296269".into()))
        );
        let in_title = format!(r#"[{{"id":"I_x","title":"{REF}","body":null}}]"#);
        assert_eq!(
            read(&issue_write(), &list(200, "", &in_title)),
            Reconciliation::Found(Some("I_x".into()))
        );
    }

    #[test]
    fn a_whole_list_without_it_is_the_write_not_done() {
        let body = r#"[{"id":7,"number":1,"body":"other"},{"id":8,"number":2,"body":null}]"#;
        assert_eq!(
            read(&issue_write(), &list(200, "", body)),
            Reconciliation::NotFound
        );
        assert_eq!(
            read(&issue_write(), &list(200, "", "[]")),
            Reconciliation::NotFound
        );
        let last_page = "link:<https://api.github.com/repositories/1/issues?page=1>; rel=\"first\", <https://api.github.com/repositories/1/issues?page=1>; rel=\"prev\"\n";
        assert_eq!(
            read(&issue_write(), &list(200, last_page, "[]")),
            Reconciliation::NotFound
        );
    }

    #[test]
    fn a_list_that_goes_on_or_is_cut_or_refused_settles_nothing() {
        let more = "Link:<https://api.github.com/repositories/1/issues?page=2>; rel=\"next\", <https://api.github.com/repositories/1/issues?page=9>; rel=\"last\"\n";
        for (status, headers, body) in [
            (200, more, "[]"),
            (200, "", r#"[{"id":7,"body":"oth"#),
            (200, "", r#"{"message":"not a list"}"#),
            (404, "", r#"{"message":"Not Found"}"#),
            (403, "", "[]"),
        ] {
            assert!(
                matches!(
                    read(&issue_write(), &list(status, headers, body)),
                    Reconciliation::Unknown(_)
                ),
                "{status} {headers} {body}"
            );
        }
        let cut = format!(r#"[{{"id":7,"body":"x"}},{{"id":8,"body":"{REF} and more te"#);
        assert_eq!(
            read(&issue_write(), &list(200, "", &cut)),
            Reconciliation::Found(None),
            "cut, but the reference shows before the cut"
        );
    }

    #[test]
    fn a_longer_reference_that_starts_with_this_one_is_not_it() {
        let body = format!(r#"[{{"id":7,"body":"{REF}ff"}},{{"id":8,"body":"x{REF}"}}]"#);
        assert_eq!(
            read(&issue_write(), &list(200, "", &body)),
            Reconciliation::NotFound
        );
    }
}
