//! The JSON readers (`sluice_plugin_sdk::json`) on arbitrary bodies.
//!
//! Asserts: the one-pass error reader and the model reader agree with the generic path
//! reader whenever both read the body; a normalized error code is at most 128 bytes of lower-case
//! letters, digits and single inner underscores, and normalizing it again changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_plugin_sdk::json::{
    error_body, model, normalize_code, parse, string_at, text_chars, tokens_for_chars,
};

fuzz_target!(|body: &[u8]| {
    // Where the generic reader reads the body, the one-pass readers read the same. (They may
    // also read a body it refuses: one with a number beyond f64, which they skip unread.)
    if let Some(v) = parse(body) {
        if let Some(e) = error_body(body) {
            assert_eq!(e.code(), string_at(body, &["error", "code"]).as_deref());
            assert_eq!(e.kind(), string_at(body, &["error", "type"]).as_deref());
            if let Some(m) = &e.message {
                assert_eq!(Some(m.as_ref()), string_at(body, &["message"]).as_deref());
            }
        }
        if let Some(m) = model(body) {
            assert_eq!(Some(m.as_ref()), string_at(body, &["model"]).as_deref());
        }
        let chars = text_chars(&v, &["model", "role"]);
        assert!(chars <= body.len() as u64, "more characters than bytes");
        assert!(tokens_for_chars(chars) <= chars);
    }

    let code = normalize_code(&String::from_utf8_lossy(body));
    assert!(code.len() <= 128, "{code:?}");
    assert!(
        code.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "{code:?}"
    );
    assert!(
        !code.starts_with('_') && !code.ends_with('_') && !code.contains("__"),
        "{code:?}"
    );
    assert_eq!(
        normalize_code(&code),
        code,
        "normalizing twice changed {code:?}"
    );
});
