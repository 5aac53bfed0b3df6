//! The path an agent's request names after `/{provider}`, checked before it is joined to
//! the provider's base URL: a `.` or `..` segment, in any spelling (`%2e`, `%2E%2e`…), an
//! encoded `/` or `\` (`%2f`, `%5c`), a raw `\`, or a NUL would let a request walk out of
//! the base URL's path (`/gw/openai/../../secret` reaching `/secret` with the provider key
//! attached), so each is refused.

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPath(pub &'static str);

/// Checks `path` (what follows `/{provider}`).
///
/// # Errors
/// [`BadPath`] saying what it holds.
pub fn check(path: &str) -> Result<(), BadPath> {
    let lower = path.to_ascii_lowercase();
    for encoded in ["%2f", "%5c", "%00"] {
        if lower.contains(encoded) {
            return Err(BadPath("an encoded `/`, `\\` or NUL"));
        }
    }
    if path.contains('\\') {
        return Err(BadPath("a `\\`"));
    }
    for segment in lower.split('/') {
        let dots = segment.replace("%2e", ".");
        if dots == "." || dots == ".." {
            return Err(BadPath("a `.` or `..` segment"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_walk_out_of_the_base_url_are_refused_in_every_spelling() {
        for bad in [
            "/../../secret",
            "/v1/../x",
            "/./v1",
            "/%2e%2e/secret",
            "/%2E%2e/secret",
            "/.%2e/secret",
            "/v1/%2E",
            "/v1%2f..%2fsecret",
            "/v1%5c..",
            "/v1\\..\\secret",
            "/v1/%00",
            "/..",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
        for good in [
            "/v1/chat/completions",
            "/v1/files/file-abc.json",
            "/v1/models/gpt-4.1",
            "/",
            "",
            "/v1/...three",
            "/v1/a..b",
            "/v1/objects?x=..",
        ] {
            assert_eq!(check(good), Ok(()), "{good}");
        }
    }
}
