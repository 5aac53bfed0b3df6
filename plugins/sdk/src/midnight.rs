//! Quotas that reset at a provider's local midnight. Some providers count a daily quota by
//! their own calendar day, not the client's nor UTC's: Google's daily quotas reset at
//! midnight Pacific time, so the reset moves by an hour across daylight saving time. Plugins
//! have no time-zone database (and no clock: `now_ms` comes from the host), so the zones a
//! provider uses are rules here.

/// A provider's clock: the offset of its local time from UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// A fixed offset from UTC, in minutes (`0` for UTC, `-300` for UTC−5).
    Fixed {
        /// Minutes east of UTC.
        offset_minutes: i32,
    },
    /// US Pacific time: UTC−8, and UTC−7 from the second Sunday of March at 02:00 local
    /// time to the first Sunday of November at 02:00 local time (the US rule since 2007).
    UsPacific,
}

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

impl Zone {
    /// The offset of local time from UTC at the instant `at_ms` (milliseconds since the Unix
    /// epoch), in milliseconds.
    pub fn offset_ms(self, at_ms: i64) -> i64 {
        match self {
            Zone::Fixed { offset_minutes } => i64::from(offset_minutes) * MINUTE_MS,
            Zone::UsPacific => {
                let year = year_of(at_ms);
                // 02:00 PST is 10:00 UTC; 02:00 PDT is 09:00 UTC.
                let starts = nth_sunday_ms(year, 3, 2) + 10 * HOUR_MS;
                let ends = nth_sunday_ms(year, 11, 1) + 9 * HOUR_MS;
                if (starts..ends).contains(&at_ms) {
                    -7 * HOUR_MS
                } else {
                    -8 * HOUR_MS
                }
            }
        }
    }
}

/// The instant (milliseconds since the Unix epoch) of the next midnight after `now_ms` in
/// `zone`: when a quota counted by the provider's calendar day is back.
pub fn next_local_midnight_ms(now_ms: i64, zone: Zone) -> i64 {
    let local = now_ms + zone.offset_ms(now_ms);
    let midnight_local = (local.div_euclid(DAY_MS) + 1) * DAY_MS;
    // The offset at that midnight may differ from now's (a change of daylight saving time
    // between now and then): take the one in force then.
    let guess = midnight_local - zone.offset_ms(now_ms);
    midnight_local - zone.offset_ms(guess)
}

/// Milliseconds from `now_ms` until the next midnight in `zone` (see
/// [`next_local_midnight_ms`]): a quota observation's `reset-after-ms` for a daily quota.
pub fn until_local_midnight(now_ms: i64, zone: Zone) -> u64 {
    u64::try_from(next_local_midnight_ms(now_ms, zone) - now_ms).unwrap_or(0)
}

/// The year (UTC) of the instant `at_ms`.
fn year_of(at_ms: i64) -> i32 {
    let days = at_ms.div_euclid(DAY_MS);
    civil_from_days(days).0
}

/// Midnight UTC of the `nth` Sunday of `month` in `year`, in milliseconds.
fn nth_sunday_ms(year: i32, month: u32, nth: i64) -> i64 {
    let first = days_from_civil(year, month, 1);
    // 1970-01-01 was a Thursday: day 0 is weekday 4 (Sunday = 0).
    let weekday = (first + 4).rem_euclid(7);
    let first_sunday = first + (7 - weekday) % 7;
    (first_sunday + 7 * (nth - 1)) * DAY_MS
}

/// Days since 1970-01-01 of a date of the proleptic Gregorian calendar (H. Hinnant's
/// algorithm).
fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01: (year, month, day).
pub(crate) fn civil_from_days(days: i64) -> (i32, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        i32::try_from(year).unwrap_or(i32::MAX),
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_rfc3339_ms;

    fn at(s: &str) -> i64 {
        parse_rfc3339_ms(s).unwrap()
    }

    #[test]
    fn a_daily_quota_resets_at_midnight_pacific_standard_or_daylight_time() {
        // Winter: midnight PST is 08:00 UTC.
        assert_eq!(
            next_local_midnight_ms(at("2026-01-15T20:00:00Z"), Zone::UsPacific),
            at("2026-01-16T08:00:00Z")
        );
        // Summer: midnight PDT is 07:00 UTC.
        assert_eq!(
            next_local_midnight_ms(at("2026-07-01T06:59:00Z"), Zone::UsPacific),
            at("2026-07-01T07:00:00Z")
        );
        assert_eq!(
            until_local_midnight(at("2026-07-01T06:59:00Z"), Zone::UsPacific),
            60_000
        );
    }

    #[test]
    fn across_a_change_of_daylight_saving_time_the_reset_follows_the_new_offset() {
        // 2026: DST begins Sunday 8 March, ends Sunday 1 November.
        assert_eq!(
            Zone::UsPacific.offset_ms(at("2026-03-08T09:59:00Z")),
            -8 * HOUR_MS
        );
        assert_eq!(
            Zone::UsPacific.offset_ms(at("2026-03-08T10:00:00Z")),
            -7 * HOUR_MS
        );
        assert_eq!(
            Zone::UsPacific.offset_ms(at("2026-11-01T08:59:00Z")),
            -7 * HOUR_MS
        );
        assert_eq!(
            Zone::UsPacific.offset_ms(at("2026-11-01T09:00:00Z")),
            -8 * HOUR_MS
        );
        // At noon on the day DST begins, the next midnight is in PDT.
        assert_eq!(
            next_local_midnight_ms(at("2026-03-08T20:00:00Z"), Zone::UsPacific),
            at("2026-03-09T07:00:00Z")
        );
        // At noon on the day it ends, in PST.
        assert_eq!(
            next_local_midnight_ms(at("2026-11-01T20:00:00Z"), Zone::UsPacific),
            at("2026-11-02T08:00:00Z")
        );
    }

    #[test]
    fn a_fixed_zone_and_utc() {
        assert_eq!(
            next_local_midnight_ms(
                at("2026-05-05T23:30:00Z"),
                Zone::Fixed { offset_minutes: 0 }
            ),
            at("2026-05-06T00:00:00Z")
        );
        // UTC+5:30: midnight is 18:30 UTC the day before.
        assert_eq!(
            next_local_midnight_ms(
                at("2026-05-05T18:00:00Z"),
                Zone::Fixed {
                    offset_minutes: 330
                }
            ),
            at("2026-05-05T18:30:00Z")
        );
        // Exactly at midnight: the next one, a day on.
        assert_eq!(
            until_local_midnight(
                at("2026-05-06T00:00:00Z"),
                Zone::Fixed { offset_minutes: 0 }
            ),
            86_400_000
        );
    }

    #[test]
    fn the_calendar_arithmetic_round_trips() {
        for days in [-800_000, -1, 0, 1, 10_957, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }
}
