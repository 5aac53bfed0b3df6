//! The path an agent's request names after `/{provider}`, checked before it is joined to
//! the provider's base URL: a `.` or `..` segment, in any spelling (`%2e`, `%2E%2e`…), an
//! encoded `/` or `\` (`%2f`, `%5c`), a raw `\`, or a NUL would let a request walk out of
//! the base URL's path (`/gw/openai/../../secret` reaching `/secret` with the provider key
//! attached), so each is refused. So is a `;` (a path parameter: `/..;/secret` is `..` to
//! some servers), and each of these under any number of encodings: the path is checked as
//! it is, then as each decoding of its `%` escapes makes it (`%252e` is `%2e` once
//! decoded, `.` twice), and a path still holding escapes after three decodings is refused.

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPath(pub &'static str);

/// Decodings a path may need before it holds no escape.
const MAX_DECODINGS: usize = 3;

/// Checks `path` (what follows `/{provider}`), as it is and as each decoding makes it.
///
/// # Errors
/// [`BadPath`] saying what it holds.
pub fn check(path: &str) -> Result<(), BadPath> {
    // Read in place, without a copy, when the path has no escape: this runs on every request.
    check_one(path.as_bytes())?;
    if !path.contains('%') {
        return Ok(());
    }
    let mut layer = path.as_bytes().to_vec();
    for _ in 0..MAX_DECODINGS {
        let decoded = decode(&layer);
        if decoded == layer {
            return Ok(());
        }
        check_one(&decoded)?;
        layer = decoded;
    }
    if decode(&layer) == layer {
        Ok(())
    } else {
        Err(BadPath("escapes still encoded after three decodings"))
    }
}

/// Checks one spelling of a path.
fn check_one(bytes: &[u8]) -> Result<(), BadPath> {
    let encoded = |code: &[u8]| {
        bytes
            .windows(3)
            .any(|w| w[0] == b'%' && w[1..].eq_ignore_ascii_case(code))
    };
    if encoded(b"2f") || encoded(b"5c") || encoded(b"00") || bytes.contains(&0) {
        return Err(BadPath("an encoded `/`, `\\` or NUL"));
    }
    if bytes.contains(&b'\\') {
        return Err(BadPath("a `\\`"));
    }
    if bytes.contains(&b';') || encoded(b"3b") {
        return Err(BadPath("a `;` (a path parameter)"));
    }
    if bytes.split(|b| *b == b'/').any(is_dots) {
        return Err(BadPath("a `.` or `..` segment"));
    }
    Ok(())
}

/// `bytes` with each `%XX` escape decoded once (an escape that is not one is kept).
fn decode(bytes: &[u8]) -> Vec<u8> {
    let hex = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push(h * 16 + l);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Whether `segment` is `.` or `..`, each dot written as itself or as `%2e` (any case).
fn is_dots(segment: &[u8]) -> bool {
    let mut rest = segment;
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
            "/v1/..;/secret",
            "/v1;x=1/chat",
            "/v1/%3b",
            "/%252e%252e/secret",
            "/%252E%252e/secret",
            "/v1%252f..%252fsecret",
            "/%25252e%25252e/secret",
            "/%2525252e",
            "/v1/%25%32%65%25%32%65/secret",
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

    /// The check written plainly: on lowered copies, each spelling the decodings make.
    fn by_copies(path: &str) -> bool {
        let fine = |layer: &str| {
            let lower = layer.to_ascii_lowercase();
            ["%2f", "%5c", "%00", "%3b", ";", "\0"]
                .iter()
                .all(|e| !lower.contains(e))
                && !layer.contains('\\')
                && lower.split('/').all(|segment| {
                    let dots = segment.replace("%2e", ".");
                    dots != "." && dots != ".."
                })
        };
        let mut layer = path.to_owned();
        for round in 0..=MAX_DECODINGS {
            if !fine(&layer) {
                return false;
            }
            let next = String::from_utf8_lossy(&decode(layer.as_bytes())).into_owned();
            if next == layer {
                return true;
            }
            if round == MAX_DECODINGS {
                return false;
            }
            layer = next;
        }
        unreachable!()
    }

    proptest::proptest! {
        /// Read in place and decoded as bytes, the check refuses exactly the paths the
        /// plain one refuses.
        #[test]
        fn the_check_in_place_agrees_with_the_one_on_copies(
            path in "(/|\\.|%2[eEfF]|%5[cC]|%00|%3[bB]|%25|%|;|2|5|e|E|a|\\\\){0,14}"
        ) {
            proptest::prop_assert_eq!(check(&path).is_ok(), by_copies(&path), "{}", path);
        }
    }
}
