//! `Retry-After`, `retry-after-ms` and the date and duration readers under them
//! (`sluice_plugin_sdk::{retry_after, time}`), on arbitrary values.
//!
//! Asserts: every delay is within a day, and a date's at least the past-date minimum; a
//! value parsed, reformatted and parsed again gives the same milliseconds (seconds, Go
//! durations, HTTP-dates, RFC 3339); a repeated field yields its longest valid delay.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use sluice_fuzz::NOW_MS;
use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::retry_after::{parse_retry_after, retry_after_any_ms, retry_after_ms};
use sluice_plugin_sdk::time::{
    MAX_DELAY_MS, PAST_DATE_DELAY_MS, parse_go_duration_ms, parse_http_date_ms, parse_millis,
    parse_rfc3339_ms, parse_seconds_ms, until,
};

const NOWS: [i64; 4] = [NOW_MS, 0, i64::MIN, i64::MAX];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Each line is one value; all of them, as repeated fields, make one header list.
    let values: Vec<&str> = text.lines().collect();
    for &v in &values {
        one_value(v);
    }
    let fields: Vec<(&str, &str)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            (
                if i % 3 == 2 {
                    "retry-after-ms"
                } else {
                    "Retry-After"
                },
                *v,
            )
        })
        .collect();
    let h = Headers::new(fields.iter().copied());
    for now in NOWS {
        let longest = fields
            .iter()
            .filter(|(n, _)| *n == "Retry-After")
            .filter_map(|(_, v)| parse_retry_after(v.trim(), now))
            .max();
        assert_eq!(retry_after_ms(&h, now), longest);
        let ms = fields
            .iter()
            .filter(|(n, _)| *n == "retry-after-ms")
            .filter_map(|(_, v)| parse_millis(v.trim()))
            .max();
        assert_eq!(retry_after_any_ms(&h, now), ms.or(longest));
    }
});

fn one_value(v: &str) {
    for now in NOWS {
        if let Some(d) = parse_retry_after(v, now) {
            assert!(d <= MAX_DELAY_MS, "{v:?} at {now}: {d} ms");
        }
    }
    if let Some(ms) = parse_seconds_ms(v) {
        assert!(ms <= MAX_DELAY_MS);
        let again = format!("{}.{:03}", ms / 1000, ms % 1000);
        assert_eq!(parse_seconds_ms(&again), Some(ms), "{v:?} -> {again:?}");
    }
    if let Some(ms) = parse_millis(v) {
        assert!(ms <= MAX_DELAY_MS);
        assert_eq!(parse_millis(&ms.to_string()), Some(ms));
    }
    if let Some(ms) = parse_go_duration_ms(v) {
        assert!(ms <= MAX_DELAY_MS);
        let again = format!("{ms}ms");
        assert_eq!(parse_go_duration_ms(&again), Some(ms), "{v:?} -> {again:?}");
    }
    if let Some(at) = parse_http_date_ms(v) {
        assert_eq!(at % 1000, 0, "an HTTP-date has whole seconds");
        let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(at).expect("after the epoch"));
        let again = httpdate::fmt_http_date(t);
        assert_eq!(parse_http_date_ms(&again), Some(at), "{v:?} -> {again:?}");
        for now in NOWS {
            let d = parse_retry_after(v, now);
            // A value that reads as seconds too is read as seconds.
            if parse_seconds_ms(v).is_none() {
                assert_eq!(d, Some(until(at, now)));
                assert!(d >= Some(PAST_DATE_DELAY_MS));
            }
        }
    }
    if let Some(at) = parse_rfc3339_ms(v) {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000)
            .expect("a parsed time is in range");
        let again = t
            .format(&time::format_description::well_known::Rfc3339)
            .expect("a parsed time formats");
        assert_eq!(parse_rfc3339_ms(&again), Some(at), "{v:?} -> {again:?}");
    }
}
