//! `Retry-After` (RFC 9110 §10.2.3) and its millisecond cousin `retry-after-ms`.
//!
//! The field is either delay-seconds or an HTTP-date. What a careful client does with the
//! odd cases:
//! - a date already in the past asks for a small minimum delay, never zero (a zero would turn
//!   every client of the scope into a tight loop);
//! - negative numbers and junk are ignored (as if the field were absent);
//! - absurd values (beyond a day) are clamped to a day;
//! - when the field is repeated, the longest valid delay wins: waiting a little longer never
//!   causes a 429 storm, while the shorter guess might;
//! - when a valid `retry-after-ms` is given beside `Retry-After`, it wins: it is the precise
//!   one, and `Retry-After` is the same delay rounded up to whole seconds (Azure OpenAI sends
//!   `retry-after-ms: 1500` with `retry-after: 2`).

use crate::headers::Headers;
use crate::time::{parse_http_date_ms, parse_millis, parse_seconds_ms, until};

/// Parses one `Retry-After` value into a delay in milliseconds relative to `now_ms`.
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<u64> {
    parse_seconds_ms(value).or_else(|| parse_http_date_ms(value).map(|at| until(at, now_ms)))
}

/// The delay asked for by every `Retry-After` field: the longest valid one.
pub fn retry_after_ms(headers: &Headers<'_>, now_ms: i64) -> Option<u64> {
    headers
        .all("retry-after")
        .filter_map(|v| parse_retry_after(v, now_ms))
        .max()
}

/// The delay asked for by `retry-after-ms` (OpenAI and Anthropic SDK style) when it holds a
/// valid value (the longest, when repeated), else by `Retry-After`.
pub fn retry_after_any_ms(headers: &Headers<'_>, now_ms: i64) -> Option<u64> {
    let ms = headers.all("retry-after-ms").filter_map(parse_millis).max();
    ms.or_else(|| retry_after_ms(headers, now_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MAX_DELAY_MS, PAST_DATE_DELAY_MS};

    const NOW: i64 = 1_795_953_600_000; // 2026-11-29T12:00:00Z

    #[test]
    fn seconds_and_dates() {
        assert_eq!(parse_retry_after("10", NOW), Some(10_000));
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 12:00:30 GMT", NOW),
            Some(30_000)
        );
        assert_eq!(
            parse_retry_after("Sunday, 29-Nov-26 12:00:30 GMT", NOW),
            Some(30_000)
        );
        assert_eq!(
            parse_retry_after("Sun Nov 29 12:00:30 2026", NOW),
            Some(30_000)
        );
    }

    #[test]
    fn past_dates_wait_a_little() {
        assert_eq!(
            parse_retry_after("Sat, 28 Nov 2026 12:00:00 GMT", NOW),
            Some(PAST_DATE_DELAY_MS)
        );
    }

    #[test]
    fn junk_negative_and_absurd() {
        assert_eq!(parse_retry_after("-10", NOW), None);
        assert_eq!(parse_retry_after("soon", NOW), None);
        assert_eq!(parse_retry_after("", NOW), None);
        assert_eq!(parse_retry_after("31536000000", NOW), Some(MAX_DELAY_MS));
        assert_eq!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", NOW),
            Some(MAX_DELAY_MS)
        );
    }

    #[test]
    fn repeated_fields_take_the_longest_valid() {
        let h = Headers::new([
            ("Retry-After", "5"),
            ("retry-after", "junk"),
            ("RETRY-AFTER", "20"),
        ]);
        assert_eq!(retry_after_ms(&h, NOW), Some(20_000));
    }

    #[test]
    fn retry_after_ms_field() {
        let h = Headers::new([("retry-after-ms", "1500.5"), ("retry-after", "1")]);
        assert_eq!(retry_after_any_ms(&h, NOW), Some(1501));
        let h = Headers::new([("retry-after-ms", "-3")]);
        assert_eq!(retry_after_any_ms(&h, NOW), None);
    }

    #[test]
    fn the_precise_field_wins_over_the_rounded_one() {
        // Azure OpenAI's pair: the delay in milliseconds, and rounded up to seconds.
        let h = Headers::new([("retry-after", "2"), ("retry-after-ms", "1500")]);
        assert_eq!(retry_after_any_ms(&h, NOW), Some(1500));
        // A retry-after-ms that is junk does not count: Retry-After is used.
        let h = Headers::new([("retry-after-ms", "soon"), ("retry-after", "2")]);
        assert_eq!(retry_after_any_ms(&h, NOW), Some(2000));
    }
}
