//! Case-insensitive access to header fields in wire order.
//!
//! Providers repeat fields, vary their case and pad their values. Every parser in this crate
//! reads headers through [`Headers`], so those rules live in one place:
//!
//! - names compare ASCII case-insensitively;
//! - values are trimmed of surrounding whitespace;
//! - a singleton field (a number, a date) that appears more than once with *different*
//!   values is malformed, and [`Headers::get`] ignores it rather than guess which is right.
//!
//! On the wire of the contract, headers travel as one `fields` block (`name:value\n` per
//! field, see `wit/policy.wit`): [`encode`] writes one, [`Headers::parse`] reads one.

/// A header field that cannot be put in a `fields` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidField {
    /// The field's name (possibly the offending part).
    pub name: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl std::fmt::Display for InvalidField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "header {:?}: {}", self.name, self.reason)
    }
}

impl std::error::Error for InvalidField {}

/// Encodes `(name, value)` pairs as a `fields` block.
///
/// # Errors
/// When a name is empty or holds a colon, whitespace, CR or LF, or a value holds CR or LF:
/// such a field is not valid HTTP and could not be read back unambiguously.
pub fn encode<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<String, InvalidField> {
    let pairs = pairs.into_iter();
    // Room for the fields, at 64 bytes each (8 of them when the iterator does not say how
    // many; at most 64, whatever it says), made once: this runs for the request and the
    // answer of every attempt, and growing field by field allocated several times for each.
    let (fewest, most) = pairs.size_hint();
    let fields = most.unwrap_or(fewest.max(8)).min(64);
    let mut block = String::with_capacity(fields.saturating_mul(64));
    for (name, value) in pairs {
        let bad = |reason| InvalidField {
            name: name.to_owned(),
            reason,
        };
        if name.is_empty() {
            return Err(bad("the name is empty"));
        }
        if name
            .bytes()
            .any(|b| b == b':' || b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(bad(
                "the name holds a colon, whitespace or a control character",
            ));
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(bad("the value holds a line break"));
        }
        block.reserve(name.len() + value.len() + 2);
        block.push_str(name);
        block.push(':');
        block.push_str(value);
        block.push('\n');
    }
    Ok(block)
}

/// The `(name, value)` pairs of a `fields` block, values as received. Lines without a colon
/// are skipped.
pub fn pairs(block: &str) -> impl Iterator<Item = (&str, &str)> {
    block.split('\n').filter_map(|line| line.split_once(':'))
}

/// A borrowed view of a header list.
#[derive(Debug, Clone, Default)]
pub struct Headers<'a> {
    fields: Vec<(&'a str, &'a str)>,
}

impl<'a> Headers<'a> {
    /// Reads a `fields` block (`name:value\n` per field). Line ends and colons are found in
    /// one `memchr2` pass over the whole block, which reads several bytes at a time and is
    /// set up once rather than twice per line: this runs on every plugin call.
    pub fn parse(block: &'a str) -> Self {
        let mut fields = Vec::with_capacity(32);
        let mut start = 0;
        let mut colon = None;
        for i in memchr::memchr2_iter(b':', b'\n', block.as_bytes()) {
            if block.as_bytes()[i] == b'\n' {
                if let Some(c) = colon.take() {
                    // Both cuts are at ASCII bytes, so they are character boundaries.
                    fields.push((&block[start..c], &block[c + 1..i]));
                }
                start = i + 1;
            } else if colon.is_none() {
                colon = Some(i);
            }
        }
        if let Some(c) = colon {
            fields.push((&block[start..c], &block[c + 1..]));
        }
        Self { fields }
    }

    /// Builds a view over `(name, value)` pairs in wire order.
    pub fn new(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            fields: fields.into_iter().collect(),
        }
    }

    /// Every value of the field `name`, trimmed, in wire order.
    pub fn all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a str> + 's {
        self.fields
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }

    /// The value of a singleton field: `None` when it is absent, or when it is repeated with
    /// values that disagree (a malformed field is ignored, never guessed at).
    pub fn get(&self, name: &str) -> Option<&'a str> {
        let mut found = None;
        for &(n, v) in &self.fields {
            // Lengths first: most names differ in length, and that check is one comparison.
            if n.len() == name.len() && n.eq_ignore_ascii_case(name) {
                let v = v.trim();
                match found {
                    None => found = Some(v),
                    Some(f) if f != v => return None,
                    Some(_) => {}
                }
            }
        }
        found
    }

    /// The singleton field `name` parsed as a non-negative integer. Signs, fractions, junk and
    /// values beyond `u64` are ignored.
    pub fn get_u64(&self, name: &str) -> Option<u64> {
        parse_u64(self.get(name)?)
    }

    /// A field holding a boolean as `true`/`false` (any case). Anything else is ignored.
    pub fn get_bool(&self, name: &str) -> Option<bool> {
        let v = self.get(name)?;
        if v.eq_ignore_ascii_case("true") {
            Some(true)
        } else if v.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        }
    }
}

/// Parses a plain non-negative decimal integer (digits only, at most `u64::MAX`).
pub fn parse_u64(value: &str) -> Option<u64> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive_and_values_trimmed() {
        let h = Headers::new([("X-RateLimit-Limit", " 60 ")]);
        assert_eq!(h.get("x-ratelimit-limit"), Some("60"));
        assert_eq!(h.get_u64("X-RATELIMIT-LIMIT"), Some(60));
    }

    #[test]
    fn repeated_agreeing_values_are_one_value() {
        let h = Headers::new([("a", "1"), ("A", "1")]);
        assert_eq!(h.get("a"), Some("1"));
    }

    #[test]
    fn repeated_disagreeing_values_are_ignored() {
        let h = Headers::new([("a", "1"), ("A", "2")]);
        assert_eq!(h.get("a"), None);
        assert_eq!(h.all("a").collect::<Vec<_>>(), vec!["1", "2"]);
    }

    #[test]
    fn integers_reject_signs_fractions_and_overflow() {
        for junk in ["-1", "+1", "1.5", "", "abc", "99999999999999999999999"] {
            assert_eq!(parse_u64(junk), None, "{junk:?}");
        }
        assert_eq!(parse_u64("0"), Some(0));
    }

    #[test]
    fn blocks_round_trip() {
        let block = encode([
            ("Retry-After", "20"),
            ("x-empty", ""),
            ("Date", "Sun, 29 Nov 2026 12:00:00 GMT"),
        ])
        .unwrap();
        assert_eq!(
            block,
            "Retry-After:20\nx-empty:\nDate:Sun, 29 Nov 2026 12:00:00 GMT\n"
        );
        let h = Headers::parse(&block);
        assert_eq!(h.get("retry-after"), Some("20"));
        assert_eq!(h.get("x-empty"), Some(""));
        assert_eq!(h.get("date"), Some("Sun, 29 Nov 2026 12:00:00 GMT"));
        assert_eq!(pairs(&block).count(), 3);
        let unterminated = Headers::parse("a:1\nno colon\nb:2");
        assert_eq!(
            (unterminated.get("a"), unterminated.get("b")),
            (Some("1"), Some("2"))
        );
        assert_eq!(unterminated.fields.len(), 2);
        let colons = Headers::parse("date:Sun, 29 Nov 2026 12:00:00 GMT\nx:a:b\n:empty\nlast:1:2");
        assert_eq!(colons.get("date"), Some("Sun, 29 Nov 2026 12:00:00 GMT"));
        assert_eq!(colons.get("x"), Some("a:b"));
        assert_eq!(colons.get(""), Some("empty"));
        assert_eq!(colons.get("last"), Some("1:2"));
    }

    #[test]
    fn fields_that_would_break_the_block_are_refused() {
        assert!(encode([("a:b", "1")]).is_err());
        assert!(encode([("a b", "1")]).is_err());
        assert!(encode([("", "1")]).is_err());
        assert!(encode([("a", "1\nb:2")]).is_err());
        assert!(encode([("a", "1\r")]).is_err());
    }

    #[test]
    fn booleans() {
        let h = Headers::new([("x-should-retry", "TRUE"), ("y", "yes")]);
        assert_eq!(h.get_bool("x-should-retry"), Some(true));
        assert_eq!(h.get_bool("y"), None);
    }
}
