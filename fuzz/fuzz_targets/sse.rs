//! The server-sent events reader (`sluice_plugin_sdk::sse`) on arbitrary stream ends.
//!
//! Asserts: an event's type holds no line break and its data no carriage return; the events
//! do not depend on how lines end (LF, CRLF or CR); and bytes added after a body never
//! change the events already read from it (the events of a prefix are a prefix of the
//! events).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_plugin_sdk::sse::{Event, events};

fuzz_target!(|body: &[u8]| {
    let all: Vec<Event<'_>> = events(body).collect();
    for e in &all {
        assert!(!e.data.contains('\r'), "{e:?}");
        assert!(e.event.is_none_or(|t| !t.contains(['\r', '\n'])), "{e:?}");
    }

    if !body.contains(&b'\r') {
        for ending in [&b"\r\n"[..], b"\r"] {
            let other: Vec<u8> = body.split(|&b| b == b'\n').collect::<Vec<_>>().join(ending);
            let again: Vec<Event<'_>> = events(&other).collect();
            assert_eq!(again, all, "line endings {ending:?} changed the events");
        }
    }

    for cut in [body.len() / 3, body.len() / 2, body.len().saturating_sub(1)] {
        let head: Vec<Event<'_>> = events(&body[..cut]).collect();
        assert!(
            head.len() <= all.len() && head[..] == all[..head.len()],
            "the first {cut} bytes read as {head:?}, the whole body as {all:?}"
        );
    }
});
