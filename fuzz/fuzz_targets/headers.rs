//! The header block reader (`sluice_plugin_sdk::headers`) and the host's credential
//! redaction, on arbitrary blocks.
//!
//! Asserts: the one-pass reader sees exactly the fields the plain line split sees; `get`
//! answers only when every value of a field agrees; a block re-encoded from its fields reads
//! back the same; after redaction no credential header keeps its value, and nothing else
//! changes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::headers::{REDACTED, is_credential, redact_credentials};
use sluice_plugin_sdk::headers::{Headers, encode, pairs, parse_u64};

fuzz_target!(|data: &[u8]| {
    let Ok(block) = std::str::from_utf8(data) else {
        return;
    };
    let h = Headers::parse(block);
    let fields: Vec<(&str, &str)> = pairs(block).collect();
    assert_eq!(
        format!("{h:?}"),
        format!("{:?}", Headers::new(fields.iter().copied())),
        "the one-pass reader and the line split disagree"
    );

    // Each distinct name once, and at most 64 of them: the checks stay linear in the block.
    let mut names: Vec<&str> = Vec::new();
    for &(name, _) in &fields {
        if names.len() < 64 && !names.contains(&name) {
            names.push(name);
        }
    }
    for &name in &names {
        let all: Vec<&str> = h.all(name).collect();
        assert!(!all.is_empty());
        let agreed = all.iter().all(|v| *v == all[0]);
        assert_eq!(h.get(name), agreed.then_some(all[0]), "get({name:?})");
        assert_eq!(h.get_u64(name), h.get(name).and_then(parse_u64));
        if let Some(b) = h.get_bool(name) {
            assert!(
                h.get(name)
                    .unwrap()
                    .eq_ignore_ascii_case(if b { "true" } else { "false" })
            );
        }
    }

    // What can be encoded reads back as it was written.
    if let Ok(again) = encode(fields.iter().copied()) {
        let back: Vec<(&str, &str)> = pairs(&again).collect();
        assert_eq!(back, fields, "an encoded block reads back differently");
    }

    let redacted = redact_credentials(block);
    let before: Vec<(&str, &str)> = fields;
    let after: Vec<(&str, &str)> = pairs(&redacted).collect();
    assert_eq!(before.len(), after.len(), "redaction lost or added fields");
    for ((n0, v0), (n1, v1)) in before.iter().zip(&after) {
        assert_eq!(n0, n1);
        if is_credential(n1) {
            assert_eq!(*v1, REDACTED, "the credential {n1:?} kept its value");
        } else {
            assert_eq!(v0, v1, "redaction changed the value of {n1:?}");
        }
    }
});
