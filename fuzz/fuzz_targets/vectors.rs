//! The vector file reader (`sluice::vectors::parse`) on arbitrary text.
//!
//! Asserts: a file that parses has at least one case, each with a method and with header
//! blocks that read back as valid fields; a file that does not parse is refused with a
//! message that names the file.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sluice::contract::WireOutcome;
use sluice::headers::{encode_fields, field_pairs};
use sluice::vectors::{Given, VectorError, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz-vectors.json");
    match parse(path, text) {
        Ok(file) => {
            assert!(!file.cases.is_empty());
            for case in &file.cases {
                let r = &case.request;
                assert!(!r.method.is_empty());
                assert!(
                    !r.method.bytes().any(|b| b.is_ascii_lowercase()),
                    "{:?}",
                    r.method
                );
                let mut blocks = vec![&r.headers];
                if let Given::Outcome {
                    outcome: WireOutcome::Response(resp),
                    ..
                } = &case.given
                {
                    blocks.push(&resp.headers);
                }
                for block in blocks {
                    let again = encode_fields(field_pairs(block)).expect("a valid block");
                    assert_eq!(&again, block, "a header block that does not read back");
                }
            }
        }
        Err(VectorError::Malformed { path: p, message }) => {
            assert_eq!(p, path);
            assert!(!message.is_empty());
        }
        Err(e @ VectorError::Read { .. }) => panic!("parsing text cannot fail to read: {e}"),
    }
});
