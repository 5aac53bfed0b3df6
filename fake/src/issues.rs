//! GitHub-style objects: create endpoints that ignore `Idempotency-Key`, and the lists that
//! find what they created.
//!
//! GitHub's create endpoints (`POST /repos/{owner}/{repo}/issues`, and the like) take no
//! idempotency key: every POST they accept creates a new object, so resending a write whose
//! answer was lost creates a second one. The only way to learn whether such a write happened
//! is to look for it — the client puts its own reference in the body and reads the
//! collection back. The fake is as strict, and serves the reads a client looks with:
//!
//! - a POST stores a new object in its path's collection whatever key it carries, numbered
//!   from 1 within the collection, and answers `201 Created` with the object (`id`,
//!   `number`, `title`, `body`, `state`, `url`);
//! - `GET <collection>` lists it newest first (`direction=asc`: oldest first), `per_page`
//!   objects at a time (30 by default, at most 100) from `page` (from 1), with a `Link`
//!   header naming the first, previous, next and last pages where they exist, as GitHub
//!   paginates;
//! - `GET <collection>/<number>` answers one object, or 404.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::ledger::{Ledger, Stored};
use crate::style::{Headers, Style};

/// Objects per page when the request names no `per_page`, as GitHub's default.
const PER_PAGE: usize = 30;
/// The most objects a page holds, as GitHub's.
const MAX_PER_PAGE: usize = 100;

/// An answer: status, headers, body.
pub(crate) type Answer = (u16, Headers, String);

/// A POST to `path`: a new object, whatever the request's key.
pub(crate) fn create(ledger: &mut Ledger, path: &str, body: Bytes, origin: &str) -> Answer {
    let i = ledger.create(path, body);
    // The write just created is kept: a record lets go only its oldest.
    let Some(created) = ledger.stored.get(i) else {
        return (
            500,
            Headers::new(),
            Style::GitHub.error_body(500, "not kept"),
        );
    };
    let object = object(created, origin);
    let location = object["url"].as_str().unwrap_or_default().to_owned();
    (201, vec![("location".into(), location)], object.to_string())
}

/// A GET of `path`: one object (`<collection>/<number>`), or a page of a collection.
pub(crate) fn read(ledger: &Ledger, path: &str, query: &str, origin: &str) -> Answer {
    if let Some((collection, number)) = path.rsplit_once('/')
        && let Ok(number) = number.parse::<u64>()
    {
        let found = ledger
            .stored
            .iter()
            .find(|s| s.path == collection && s.number == number);
        return match found {
            Some(s) => (200, Headers::new(), object(s, origin).to_string()),
            None => (
                404,
                Headers::new(),
                Style::GitHub.error_body(404, "Not Found"),
            ),
        };
    }
    let mut items: Vec<&Stored> = ledger.stored.iter().filter(|s| s.path == path).collect();
    if param(query, "direction") != Some("asc") {
        items.reverse();
    }
    let per_page = param(query, "per_page")
        .and_then(|n| n.parse::<usize>().ok())
        .map_or(PER_PAGE, |n| n.clamp(1, MAX_PER_PAGE));
    let page = param(query, "page")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let shown: Vec<Value> = items
        .iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .map(|s| object(s, origin))
        .collect();
    let mut headers = Headers::new();
    if last > 1 {
        headers.push(("link".into(), links(origin, path, query, page, last)));
    }
    (200, headers, Value::Array(shown).to_string())
}

/// An object as GitHub shows an issue: the `title` and `body` it was created with.
fn object(s: &Stored, origin: &str) -> Value {
    let sent: Option<Value> = serde_json::from_slice(&s.body).ok();
    let field = |k: &str| {
        sent.as_ref()
            .and_then(|v| v.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let id: u64 = s.id.parse().unwrap_or_default();
    json!({
        "id": id,
        "node_id": format!("I_fake{id}"),
        "number": s.number,
        "title": field("title"),
        "body": field("body"),
        "state": "open",
        "url": format!("{origin}{}/{}", s.path, s.number),
    })
}

/// The value of `name` in a query string.
fn param<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Link` header: the first, previous, next and last pages around `page`.
fn links(origin: &str, path: &str, query: &str, page: usize, last: usize) -> String {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("page="))
        .collect();
    let url = |n: usize| {
        let mut q = kept.clone();
        let page = format!("page={n}");
        q.push(&page);
        format!("<{origin}{path}?{}>", q.join("&"))
    };
    let mut rels = Vec::new();
    if page > 1 {
        rels.push(format!("{}; rel=\"prev\"", url(page - 1)));
        rels.push(format!("{}; rel=\"first\"", url(1)));
    }
    if page < last {
        rels.push(format!("{}; rel=\"next\"", url(page + 1)));
        rels.push(format!("{}; rel=\"last\"", url(last)));
    }
    rels.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUES: &str = "/repos/o/r/issues";

    fn ledger(n: usize) -> Ledger {
        let mut l = Ledger::default();
        for i in 0..n {
            let body = json!({"title": format!("t{i}"), "body": format!("sluice-{i:04x}")});
            l.create(ISSUES, Bytes::from(body.to_string()));
        }
        l
    }

    fn numbers(body: &str) -> Vec<u64> {
        let v: Value = serde_json::from_str(body).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|o| o["number"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn every_post_is_a_new_object_answered_201() {
        let mut l = Ledger::default();
        let body = || Bytes::from_static(br#"{"title":"x","body":"sluice-ab"}"#);
        let (status, headers, first) = create(&mut l, ISSUES, body(), "http://h");
        let (_, _, second) = create(&mut l, ISSUES, body(), "http://h");
        assert_eq!(status, 201);
        assert_eq!(headers[0].1, "http://h/repos/o/r/issues/1");
        let (a, b): (Value, Value) = (
            serde_json::from_str(&first).unwrap(),
            serde_json::from_str(&second).unwrap(),
        );
        assert_eq!(
            (a["number"].as_u64(), b["number"].as_u64()),
            (Some(1), Some(2))
        );
        assert_ne!(a["id"], b["id"]);
        assert_eq!(b["body"], "sluice-ab");
    }

    #[test]
    fn a_collection_is_listed_newest_first_a_page_at_a_time() {
        let l = ledger(5);
        let (status, headers, body) = read(&l, ISSUES, "per_page=2", "http://h");
        assert_eq!(status, 200);
        assert_eq!(numbers(&body), [5, 4]);
        assert_eq!(
            headers[0].1,
            "<http://h/repos/o/r/issues?per_page=2&page=2>; rel=\"next\", \
             <http://h/repos/o/r/issues?per_page=2&page=3>; rel=\"last\""
        );
        let (_, headers, body) = read(&l, ISSUES, "per_page=2&page=3", "http://h");
        assert_eq!(numbers(&body), [1]);
        assert!(!headers[0].1.contains("rel=\"next\""), "{headers:?}");
        let (_, _, body) = read(&l, ISSUES, "direction=asc&per_page=100", "http://h");
        assert_eq!(numbers(&body), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_whole_list_on_one_page_has_no_link_and_an_empty_one_is_an_empty_array() {
        let (_, headers, body) = read(&ledger(3), ISSUES, "", "http://h");
        assert!(headers.is_empty());
        assert_eq!(numbers(&body), [3, 2, 1]);
        let (status, headers, body) = read(&ledger(0), ISSUES, "", "http://h");
        assert_eq!((status, headers.len(), body.as_str()), (200, 0, "[]"));
    }

    #[test]
    fn one_object_by_number_or_404() {
        let l = ledger(2);
        let (status, _, body) = read(&l, "/repos/o/r/issues/2", "", "http://h");
        assert_eq!(status, 200);
        assert!(body.contains("\"t1\""), "{body}");
        assert_eq!(read(&l, "/repos/o/r/issues/9", "", "http://h").0, 404);
    }
}
