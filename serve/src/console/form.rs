//! The console's forms as a browser posts them (`application/x-www-form-urlencoded`): read
//! whole, within a bound, and decoded (`+` is a space, `%XX` a byte). What a field may hold
//! is checked where it is used — an operator's note by the journal, as the CLI's is.

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::{HeaderMap, Request};

/// The largest form taken.
const MAX_FORM: usize = 16 * 1024;

/// A posted form's fields, in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Form(Vec<(String, String)>);

impl Form {
    /// The first value of field `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Decodes a urlencoded body.
    ///
    /// # Errors
    /// A field that is not UTF-8 once decoded, or a `%` not followed by two hex digits.
    pub(crate) fn parse(body: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(body).map_err(|_| "the form is not UTF-8".to_owned())?;
        let mut fields = Vec::new();
        for pair in text.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            fields.push((decode(name)?, decode(value)?));
        }
        Ok(Self(fields))
    }

    /// Reads and decodes the form `req` posts.
    ///
    /// # Errors
    /// Why the body is not a form the console takes, for the person to read.
    pub(crate) async fn read(req: Request<Incoming>) -> Result<(HeaderMap, Self), String> {
        let (parts, body) = req.into_parts();
        let urlencoded = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
        if !urlencoded {
            return Err(
                "the console takes its own forms only (application/x-www-form-urlencoded)".into(),
            );
        }
        let bytes = Limited::new(body, MAX_FORM)
            .collect()
            .await
            .map_err(|e| format!("the form could not be read (at most {MAX_FORM} bytes): {e}"))?
            .to_bytes();
        Ok((parts.headers, Self::parse(&bytes)?))
    }
}

fn decode(raw: &str) -> Result<String, String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or("the form has a `%` not followed by two hex digits")?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "a form field is not UTF-8 once decoded".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_form_is_decoded_field_by_field() {
        let f = Form::parse(b"option=query-existing&note=found+it%21&csrf=ab&empty=").unwrap();
        assert_eq!(f.get("option"), Some("query-existing"));
        assert_eq!(f.get("note"), Some("found it!"));
        assert_eq!(f.get("empty"), Some(""));
        assert_eq!(f.get("missing"), None);
        assert_eq!(Form::parse(b"n=caf%C3%A9").unwrap().get("n"), Some("café"));
        for bad in [&b"n=%zz"[..], b"n=%4", b"n=%ff"] {
            assert!(Form::parse(bad).is_err(), "{bad:?}");
        }
    }
}
