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
    // Read in place, without a lowered copy: this runs on every request.
    let bytes = path.as_bytes();
    let encoded = |code: &[u8]| {
        bytes
            .windows(3)
            .any(|w| w[0] == b'%' && w[1..].eq_ignore_ascii_case(code))
    };
    if encoded(b"2f") || encoded(b"5c") || encoded(b"00") {
        return Err(BadPath("an encoded `/`, `\\` or NUL"));
    }
    if path.contains('\\') {
        return Err(BadPath("a `\\`"));
    }
    if path.split('/').any(is_dots) {
        return Err(BadPath("a `.` or `..` segment"));
    }
    Ok(())
}

/// Whether `segment` is `.` or `..`, each dot written as itself or as `%2e` (any case).
fn is_dots(segment: &str) -> bool {
    let mut rest = segment.as_bytes();
    let mut dots = 0;
    while !rest.is_empty() {
        if rest[0] == b'.' {
            rest = &rest[1..];
        } else if rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(b"%2e") {
            rest = &rest[3..];
        } else {
            return false;
        }
        dots += 1;
    }
    matches!(dots, 1 | 2)
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

    /// The check as it was first written: on a lowered copy, each segment's `%2e` replaced.
    fn by_copies(path: &str) -> bool {
        let lower = path.to_ascii_lowercase();
        ["%2f", "%5c", "%00"].iter().all(|e| !lower.contains(e))
            && !path.contains('\\')
            && lower.split('/').all(|segment| {
                let dots = segment.replace("%2e", ".");
                dots != "." && dots != ".."
            })
    }

    proptest::proptest! {
        /// Read in place, the check refuses exactly the paths the copying one refused.
        #[test]
        fn the_check_in_place_agrees_with_the_one_on_copies(
            path in "(/|\\.|%2[eEfF]|%5[cC]|%00|%|2|e|E|a|\\\\){0,12}"
        ) {
            proptest::prop_assert_eq!(check(&path).is_ok(), by_copies(&path), "{}", path);
        }
    }
}
