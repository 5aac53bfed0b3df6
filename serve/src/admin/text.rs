//! Text taken from a request's path and query: percent-decoded, and refused unless it is
//! UTF-8 without control characters. A task's name reaches the journal, the audit log and an
//! operator's terminal; one that would print as something else is refused here, by name,
//! rather than stored.

use sluice::printable::must_escape;

/// Why a piece of the path or query was refused: what it is and what it may hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {why}")]
pub(super) struct BadText {
    what: &'static str,
    why: &'static str,
}

/// `raw` percent-decoded (`%20` is a space; `+` stays `+`), as UTF-8 without control or
/// invisible characters; `what` names it in the error.
pub(super) fn decode(what: &'static str, raw: &str) -> Result<String, BadText> {
    let bad = |why| BadText { what, why };
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad("has a `%` not followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(out).map_err(|_| bad("is not UTF-8 once percent-decoded"))?;
    if text.is_empty() {
        return Err(bad("is empty"));
    }
    if text.chars().any(must_escape) {
        return Err(bad(
            "holds a control or invisible character: give one line of visible text",
        ));
    }
    Ok(text)
}

/// The query's `name=value` pairs, decoded; a name outside `known` is refused, naming the
/// ones taken.
pub(super) fn query<'a>(
    query: Option<&str>,
    known: &'a [&'a str],
) -> Result<Vec<(&'a str, String)>, String> {
    let mut pairs = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(name) = known.iter().find(|k| **k == name) else {
            let shown = sluice::printable::printable_cut(name, 100);
            return Err(if known.is_empty() {
                format!("this route takes no query parameter (`{shown}` was given)")
            } else {
                format!(
                    "unknown query parameter `{shown}`: this route takes {}",
                    known.join(", ")
                )
            });
        };
        let value = decode("the query parameter's value", value).map_err(|e| e.to_string())?;
        pairs.push((*name, value));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoded_utf8_is_decoded_and_control_characters_are_refused() {
        assert_eq!(decode("t", "job%2042").unwrap(), "job 42");
        assert_eq!(decode("t", "a+b%2Fc").unwrap(), "a+b/c");
        assert_eq!(decode("t", "caf%C3%A9").unwrap(), "café");
        for raw in ["%ff%fe", "a%0Ab", "a%1b[31m", "%", "%4", "%zz", ""] {
            assert!(decode("t", raw).is_err(), "{raw}");
        }
        let e = decode("the task's name", "%C3").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the task's name is not UTF-8 once percent-decoded"
        );
    }

    #[test]
    fn a_query_takes_only_the_names_it_knows() {
        let pairs = query(Some("all=true"), &["all"]).unwrap();
        assert_eq!(pairs, [("all", "true".to_owned())]);
        assert!(query(None, &["all"]).unwrap().is_empty());
        let e = query(Some("everything=1"), &["all"]).unwrap_err();
        assert!(e.contains("`everything`") && e.contains("all"), "{e}");
    }
}
