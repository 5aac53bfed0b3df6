//! The body digest (`sluice_plugin_sdk::digest`) on arbitrary bodies: the host runs it
//! outside the sandbox on every request body an agent sends.
//!
//! Asserts: it never panics; the length is the body's; a body it could not read to its end
//! has nothing but its length; it never counts more characters of text than the body has
//! bytes, nor describes more media parts or fields than its bounds; every field's value
//! fits its bound; and reading the same body twice gives the same digest.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_plugin_sdk::digest::{MAX_FIELD_BYTES, MAX_FIELDS, MAX_MEDIA, digest};

fuzz_target!(|body: &[u8]| {
    let d = digest(body);
    assert_eq!(d.length, body.len() as u64);
    if !d.json {
        assert!(d.media.is_empty() && d.fields.is_empty() && d.text_chars == 0);
        assert_eq!(d.media_omitted, 0);
    }
    assert!(
        d.text_chars <= body.len() as u64,
        "more characters than bytes"
    );
    assert!(d.media.len() <= MAX_MEDIA);
    assert!(d.fields.len() <= MAX_FIELDS);
    for (name, value) in &d.fields {
        assert!(value.len() <= MAX_FIELD_BYTES, "{name}: {value}");
        assert!(
            serde_json::from_str::<serde_json::Value>(value).is_ok(),
            "{name}: {value}"
        );
    }
    for m in &d.media {
        if let Some(bytes) = m.bytes {
            assert!(bytes <= body.len() as u64, "{m:?}");
        }
    }
    assert_eq!(digest(body), d);
});
