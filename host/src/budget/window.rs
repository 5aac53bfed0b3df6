//! Calendar windows: the day or the month an instant falls in, in the configured time zone.
//!
//! Budgets follow the calendar, not a rolling clock: a month's budget resets at midnight on
//! the first of the month where the business keeps its books (`Europe/Berlin`), which is
//! not midnight UTC, and a day is 23 or 25 hours long when the clocks change. The rolling
//! per-minute and per-day quotas of admission ([`crate::admission`]) pace requests; these
//! windows count spend. The time zone database is bundled, so the host needs no
//! `/usr/share/zoneinfo`.

use std::fmt;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// A budget's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Window {
    /// A calendar day, from midnight to midnight.
    Day,
    /// A calendar month, from midnight on the first to midnight on the first of the next.
    Month,
}

impl Window {
    /// Both windows.
    pub const ALL: [Self; 2] = [Self::Day, Self::Month];

    /// Its name in configuration keys and the journal: `day`, `month`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Month => "month",
        }
    }

    /// The window named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One calendar period: a given day or month.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Period {
    /// Its window.
    pub window: Window,
    /// Its label: `2026-03-14` for a day, `2026-03` for a month.
    pub label: String,
    /// When it began, in milliseconds since the Unix epoch.
    pub starts_ms: i64,
    /// When it ends and the budget resets, in milliseconds since the Unix epoch.
    pub resets_ms: i64,
}

/// The time zone budgets' calendar windows follow.
#[derive(Debug, Clone)]
pub struct Calendar {
    name: String,
    tz: TimeZone,
}

/// A time zone name the bundled database does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{name}` is not a time zone: give an IANA name such as `UTC`, `Europe/Berlin` or \
     `America/New_York`"
)]
pub struct UnknownTimeZone {
    /// The name given.
    pub name: String,
}

impl Calendar {
    /// UTC, the default.
    pub fn utc() -> Self {
        Self {
            name: "UTC".into(),
            tz: TimeZone::UTC,
        }
    }

    /// The calendar of the IANA time zone `name` (`Europe/Berlin`).
    ///
    /// # Errors
    /// [`UnknownTimeZone`] when the bundled database has no such zone.
    pub fn named(name: &str) -> Result<Self, UnknownTimeZone> {
        let tz = TimeZone::get(name).map_err(|_| UnknownTimeZone { name: name.into() })?;
        Ok(Self {
            name: name.into(),
            tz,
        })
    }

    /// The zone's name, as configured.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The period of `window` that the instant `at_ms` (milliseconds since the Unix epoch)
    /// falls in.
    pub fn period(&self, window: Window, at_ms: i64) -> Period {
        let at = Timestamp::from_millisecond(at_ms).unwrap_or(Timestamp::UNIX_EPOCH);
        let date = at.to_zoned(self.tz.clone()).date();
        let (start, next, label) = match window {
            Window::Day => (date, date.tomorrow().unwrap_or(date), date.to_string()),
            Window::Month => {
                let first = date.first_of_month();
                let next = first.checked_add(1.month()).unwrap_or(first);
                let label = format!("{:04}-{:02}", first.year(), first.month());
                (first, next, label)
            }
        };
        Period {
            window,
            label,
            starts_ms: self.midnight_ms(start),
            resets_ms: self.midnight_ms(next),
        }
    }

    /// The instant `at_ms` as a person in the zone reads it: `2026-04-01 00:00 +02:00`.
    pub fn local_time(&self, at_ms: i64) -> String {
        Timestamp::from_millisecond(at_ms).map_or_else(
            |_| format!("{at_ms} ms since the epoch"),
            |t| {
                t.to_zoned(self.tz.clone())
                    .strftime("%Y-%m-%d %H:%M %:z")
                    .to_string()
            },
        )
    }

    /// The first instant of `date` in the zone (where midnight does not exist, the first
    /// instant after the gap).
    fn midnight_ms(&self, date: Date) -> i64 {
        date.to_zoned(self.tz.clone())
            .map_or(i64::MAX, |z| z.timestamp().as_millisecond())
    }
}

/// Two calendars are equal when they name the same zone.
impl PartialEq for Calendar {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Default for Calendar {
    fn default() -> Self {
        Self::utc()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Milliseconds of a UTC time.
    fn utc(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn a_berlin_month_begins_at_midnight_berlin_time_not_utc() {
        let berlin = Calendar::named("Europe/Berlin").unwrap();
        // 31 March 2026, 22:30 UTC is already 1 April, 00:30 in Berlin (summer time).
        let p = berlin.period(Window::Month, utc("2026-03-31T22:30:00Z"));
        assert_eq!(p.label, "2026-04");
        assert_eq!(p.starts_ms, utc("2026-03-31T22:00:00Z"));
        assert_eq!(p.resets_ms, utc("2026-04-30T22:00:00Z"));
        // Half an hour earlier it is still March there, which began in winter time.
        let march = berlin.period(Window::Month, utc("2026-03-31T21:30:00Z"));
        assert_eq!(march.label, "2026-03");
        assert_eq!(march.starts_ms, utc("2026-02-28T23:00:00Z"));
        assert_eq!(march.resets_ms, p.starts_ms);
        // In UTC, both instants are in March.
        let utc_month = Calendar::utc().period(Window::Month, utc("2026-03-31T22:30:00Z"));
        assert_eq!(utc_month.label, "2026-03");
        assert_eq!(berlin.local_time(p.resets_ms), "2026-05-01 00:00 +02:00");
    }

    #[test]
    fn the_day_the_clocks_go_forward_is_23_hours_long() {
        let berlin = Calendar::named("Europe/Berlin").unwrap();
        let p = berlin.period(Window::Day, utc("2026-03-29T12:00:00Z"));
        assert_eq!(p.label, "2026-03-29");
        assert_eq!(p.resets_ms - p.starts_ms, 23 * 3_600_000);
    }

    #[test]
    fn december_resets_into_january_of_the_next_year() {
        let p = Calendar::utc().period(Window::Month, utc("2026-12-31T23:59:59Z"));
        assert_eq!(p.label, "2026-12");
        assert_eq!(p.resets_ms, utc("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn an_unknown_zone_is_refused_by_name() {
        let e = Calendar::named("Mars/Olympus").unwrap_err();
        assert!(
            e.to_string().contains("`Mars/Olympus` is not a time zone"),
            "{e}"
        );
    }
}
