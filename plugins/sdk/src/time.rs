//! Dates and durations as providers write them, turned into milliseconds relative to the
//! host's clock. Plugins have no clock: `now_ms` always comes from the host.

/// The longest delay any parser in this crate reports (one day; larger values are clamped),
/// and the longest quota window, or time until a quota resets, the IETF parser reports (31
/// days): the contract's caps (`sluice-contract`, shared with the host). A delay before a
/// retry stays within [`MAX_DELAY_MS`].
pub use sluice_contract::caps::{MAX_DELAY_MS, MAX_WINDOW_MS};

/// The delay reported for a date that is already past: a small wait, never a tight loop.
pub const PAST_DATE_DELAY_MS: u64 = 1000;

/// `ms` since the epoch as RFC 3339 in UTC, with milliseconds when there are any: what
/// [`parse_rfc3339_ms`] reads back.
pub fn format_rfc3339_ms(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = crate::midnight::civil_from_days(days);
    let (s, milli) = (in_day / 1000, in_day % 1000);
    let time = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    let frac = if milli == 0 {
        String::new()
    } else {
        format!(".{milli:03}")
    };
    format!("{year:04}-{month:02}-{day:02}T{time}{frac}Z")
}

/// Milliseconds from `now_ms` until `at_ms`, clamped to `[PAST_DATE_DELAY_MS, MAX_DELAY_MS]`
/// (a date at or before `now_ms` gives [`PAST_DATE_DELAY_MS`]).
pub fn until(at_ms: i64, now_ms: i64) -> u64 {
    let delta = i128::from(at_ms) - i128::from(now_ms);
    if delta <= 0 {
        PAST_DATE_DELAY_MS
    } else {
        u64::try_from(delta).map_or(MAX_DELAY_MS, |d| d.min(MAX_DELAY_MS))
    }
}

/// Milliseconds from `now_ms` until a quota window resets at `at_ms`: zero when the reset is
/// already past (the window has reset), clamped to [`MAX_DELAY_MS`].
pub fn reset_after(at_ms: i64, now_ms: i64) -> u64 {
    let delta = i128::from(at_ms) - i128::from(now_ms);
    if delta <= 0 {
        0
    } else {
        u64::try_from(delta).map_or(MAX_DELAY_MS, |d| d.min(MAX_DELAY_MS))
    }
}

/// Parses an RFC 3339 timestamp (`2026-11-29T12:00:00Z`, offsets and fractions allowed) into
/// milliseconds since the Unix epoch.
pub fn parse_rfc3339_ms(value: &str) -> Option<i64> {
    let t = ::time::OffsetDateTime::parse(
        value.trim(),
        &::time::format_description::well_known::Rfc3339,
    )
    .ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Parses an HTTP-date in any of the three forms HTTP allows (IMF-fixdate, RFC 850, asctime)
/// into milliseconds since the Unix epoch.
pub fn parse_http_date_ms(value: &str) -> Option<i64> {
    let t = httpdate::parse_http_date(value.trim()).ok()?;
    let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(d.as_millis()).ok()
}

/// Parses a non-negative number of seconds, integer or decimal (`20`, `1.5`), into
/// milliseconds, rounding up and clamping to [`MAX_DELAY_MS`]. Signs, exponents and junk are
/// rejected.
pub fn parse_seconds_ms(value: &str) -> Option<u64> {
    parse_decimal_scaled(value.trim(), 1000)
}

/// Parses a non-negative decimal number of milliseconds (`250`, `12.5`), rounding up and
/// clamping to [`MAX_DELAY_MS`].
pub fn parse_millis(value: &str) -> Option<u64> {
    parse_decimal_scaled(value.trim(), 1)
}

/// `digits[.digits]` times `scale`, rounded up, clamped to [`MAX_DELAY_MS`].
fn parse_decimal_scaled(v: &str, scale: u64) -> Option<u64> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || (v.contains('.') && frac.is_empty()) {
        return None;
    }
    // Values with more than 12 integer digits are absurd for any delay: clamp.
    if int.trim_start_matches('0').len() > 12 {
        return Some(MAX_DELAY_MS);
    }
    let whole: u64 = int.parse().ok()?;
    let mut total = whole.saturating_mul(scale);
    // Fractional part, at most 9 digits considered, rounded up.
    let frac = &frac[..frac.len().min(9)];
    if !frac.is_empty() {
        let f: u64 = frac.parse().ok()?;
        let denom = 10u64.pow(u32::try_from(frac.len()).ok()?);
        total = total.saturating_add((f * scale).div_ceil(denom));
    }
    Some(total.min(MAX_DELAY_MS))
}

/// Parses a Go-style duration (`1s`, `6m0s`, `12ms`, `2m59.56s`, `1h2m`, `500us`, `0s`) into
/// milliseconds, rounding up and clamping to [`MAX_DELAY_MS`]. OpenAI writes its reset
/// headers this way.
pub fn parse_go_duration_ms(value: &str) -> Option<u64> {
    let mut rest = value.trim();
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(0);
    }
    let mut total_ns: u128 = 0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, after) = rest.split_at(num_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "h" => 3_600_000_000_000,
            "m" => 60_000_000_000,
            "s" => 1_000_000_000,
            "ms" => 1_000_000,
            "us" | "µs" | "μs" => 1_000,
            "ns" => 1,
            _ => return None,
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        if (int.is_empty() && frac.is_empty()) || int.len() > 12 || frac.contains('.') {
            return None;
        }
        let whole: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        total_ns = total_ns.saturating_add(whole.saturating_mul(unit_ns));
        let frac = &frac[..frac.len().min(9)];
        if !frac.is_empty() {
            let f: u128 = frac.parse().ok()?;
            let denom = 10u128.pow(u32::try_from(frac.len()).ok()?);
            total_ns = total_ns.saturating_add((f * unit_ns).div_ceil(denom));
        }
        rest = next;
    }
    let ms = total_ns.div_ceil(1_000_000);
    Some(u64::try_from(ms).map_or(MAX_DELAY_MS, |m| m.min(MAX_DELAY_MS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration_ms("1s"), Some(1000));
        assert_eq!(parse_go_duration_ms("6m0s"), Some(360_000));
        assert_eq!(parse_go_duration_ms("12ms"), Some(12));
        assert_eq!(parse_go_duration_ms("2m59.56s"), Some(179_560));
        assert_eq!(parse_go_duration_ms("1h2m3s"), Some(3_723_000));
        assert_eq!(parse_go_duration_ms("0s"), Some(0));
        assert_eq!(parse_go_duration_ms("0"), Some(0));
        assert_eq!(parse_go_duration_ms("1.5ms"), Some(2), "rounds up");
        assert_eq!(parse_go_duration_ms("500us"), Some(1));
        assert_eq!(parse_go_duration_ms("9999h"), Some(MAX_DELAY_MS));
    }

    #[test]
    fn go_duration_junk() {
        for junk in ["", "s", "1", "1x", "-1s", "1..2s", "abc", "1s2", " ms"] {
            assert_eq!(parse_go_duration_ms(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds_ms("20"), Some(20_000));
        assert_eq!(parse_seconds_ms("0.0015"), Some(2));
        assert_eq!(parse_seconds_ms("99999999999999999999"), Some(MAX_DELAY_MS));
        for junk in ["-5", "+5", "5.", ".5", "1e3", "", "ten", "5 s"] {
            assert_eq!(parse_seconds_ms(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn dates() {
        let t = parse_rfc3339_ms("2026-11-29T12:00:00Z").unwrap();
        assert_eq!(t, 1_795_953_600_000);
        assert_eq!(parse_rfc3339_ms("2026-11-29T13:00:00+01:00"), Some(t));
        assert_eq!(parse_http_date_ms("Sun, 29 Nov 2026 12:00:00 GMT"), Some(t));
        assert_eq!(
            parse_http_date_ms("Sunday, 29-Nov-26 12:00:00 GMT"),
            Some(t)
        );
        assert_eq!(parse_http_date_ms("Sun Nov 29 12:00:00 2026"), Some(t));
        assert_eq!(parse_http_date_ms("yesterday"), None);
    }

    #[test]
    fn reset_after_is_zero_once_past() {
        assert_eq!(reset_after(0, 10), 0);
        assert_eq!(reset_after(1500, 1000), 500);
        assert_eq!(reset_after(i64::MAX, 0), MAX_DELAY_MS);
    }

    #[test]
    fn until_clamps_both_ends() {
        assert_eq!(until(0, 10), PAST_DATE_DELAY_MS);
        assert_eq!(until(10, 10), PAST_DATE_DELAY_MS);
        assert_eq!(until(1500, 1000), 500);
        assert_eq!(until(i64::MAX, i64::MIN), MAX_DELAY_MS);
    }
}
