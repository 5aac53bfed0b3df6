//! Faults at steady rates on every route, and the provider's own limits, from one line of
//! text: what `sluice serve --fake-providers --fake-faults SPEC` plays, so that a newcomer
//! can watch a 429 storm, an overloaded provider or a dropped write be absorbed without an
//! account.
//!
//! The spec is `KEY=VALUE` pairs separated by commas:
//!
//! | key | value | what the provider does |
//! |---|---|---|
//! | `rpm`, `tpm`, `itpm`, `otpm` | a whole number | enforces that limit itself (see [`crate::FakeConfig`]), answering 429 with its quota headers past it |
//! | `429` | a share (`0.2` or `20%`) | answers that share of attempts 429, `Retry-After: 1` |
//! | `503` | a share | answers that share as overloaded (503; 529 in Anthropic's style) |
//! | `500` | a share | answers that share 500 `server_error` |
//! | `drop` | a share | performs that share of writes, then drops the connection unanswered (a read is only dropped) |
//! | `slow` | milliseconds | starts every answer no fault took that much later |
//!
//! Shares are played evenly, not at random: attempt `n` takes the fault whose slice of
//! `[0, 1)` holds `n·φ mod 1` (φ the golden ratio), so every run of the same spec sees the
//! same faults, each near its share over any few dozen attempts. Scripted faults
//! ([`crate::FakeProvider::script`]) go first.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::FakeConfig;
use crate::script::{Fault, RetryAfter};

/// Shares are kept in millionths.
const MILLION: u64 = 1_000_000;
/// φ − 1 in millionths, the step of the even sequence.
const GOLDEN: u64 = 618_034;

/// The keys a spec takes, for the error that names a wrong one.
const KEYS: &str = "rpm, tpm, itpm, otpm, 429, 503, 500, drop, slow";

/// Faults and limits parsed from a `--fake-faults` spec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SteadyFaults {
    rpm: Option<u64>,
    tpm: Option<u64>,
    itpm: Option<u64>,
    otpm: Option<u64>,
    /// Each fault with its share in millionths, in the spec's order.
    shares: Vec<(Kind, u64)>,
    slow: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    RateLimited,
    Overloaded,
    ServerError,
    Drop,
}

impl Kind {
    fn fault(self) -> Fault {
        match self {
            Self::RateLimited => Fault::RateLimited {
                retry_after: Some(RetryAfter::Seconds(1)),
            },
            Self::Overloaded => Fault::Unavailable { retry_after: None },
            Self::ServerError => Fault::Status {
                status: 500,
                code: "server_error",
            },
            Self::Drop => Fault::StoreThenDrop,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::RateLimited => "429",
            Self::Overloaded => "overloaded",
            Self::ServerError => "500",
            Self::Drop => "dropped",
        }
    }
}

/// Why a spec was refused: names the part and what it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

impl FromStr for SteadyFaults {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Self, SpecError> {
        let mut faults = Self::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(SpecError(format!(
                    "`{part}`: write KEY=VALUE, for example `429=20%` (keys: {KEYS})"
                )));
            };
            let (key, value) = (key.trim(), value.trim());
            let whole = || {
                value.parse::<u64>().map_err(|_| {
                    SpecError(format!(
                        "`{part}`: {key} takes a whole number, not `{value}`"
                    ))
                })
            };
            match key {
                "rpm" => faults.rpm = Some(whole()?),
                "tpm" => faults.tpm = Some(whole()?),
                "itpm" => faults.itpm = Some(whole()?),
                "otpm" => faults.otpm = Some(whole()?),
                "slow" => faults.slow = Some(Duration::from_millis(whole()?)),
                "429" => faults.shares.push((Kind::RateLimited, share(part, value)?)),
                "503" => faults.shares.push((Kind::Overloaded, share(part, value)?)),
                "500" => faults.shares.push((Kind::ServerError, share(part, value)?)),
                "drop" => faults.shares.push((Kind::Drop, share(part, value)?)),
                _ => {
                    return Err(SpecError(format!(
                        "`{part}`: no key `{key}` (keys: {KEYS})"
                    )));
                }
            }
        }
        let total: u64 = faults.shares.iter().map(|(_, s)| s).sum();
        if total > MILLION {
            return Err(SpecError(format!(
                "`{spec}`: the shares add up to more than every attempt ({}%)",
                total / 10_000
            )));
        }
        Ok(faults)
    }
}

/// A share written `0.2` or `20%`, in millionths.
fn share(part: &str, value: &str) -> Result<u64, SpecError> {
    let (number, scale) = match value.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (value, 1.0),
    };
    let wrong = || {
        SpecError(format!(
            "`{part}`: a share is between 0 and 1 (`0.2`) or a percentage (`20%`), not `{value}`"
        ))
    };
    let x = number.trim().parse::<f64>().map_err(|_| wrong())? / scale;
    if !(0.0..=1.0).contains(&x) {
        return Err(wrong());
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "x is in [0, 1]: at most a million"
    )]
    Ok((x * 1e6).round() as u64)
}

impl SteadyFaults {
    /// `config` with the spec's limits.
    #[must_use]
    pub fn limit(&self, mut config: FakeConfig) -> FakeConfig {
        config.rpm = self.rpm.or(config.rpm);
        config.tpm = self.tpm.or(config.tpm);
        config.itpm = self.itpm.or(config.itpm);
        config.otpm = self.otpm.or(config.otpm);
        config
    }

    /// Whether it plays any fault (rather than only limits).
    pub(crate) fn plays(&self) -> bool {
        !self.shares.is_empty() || self.slow.is_some()
    }

    /// The fault attempt `n` (from 1) takes, if any.
    pub(crate) fn fault(&self, n: u64) -> Option<Fault> {
        let x = n.wrapping_mul(GOLDEN) % MILLION;
        let mut from = 0;
        for &(kind, share) in &self.shares {
            if x < from + share {
                return Some(kind.fault());
            }
            from += share;
        }
        self.slow.map(Fault::Slow)
    }
}

impl fmt::Display for SteadyFaults {
    /// What it does, in words: `429 on 20% of attempts, limit 60 requests/min`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .shares
            .iter()
            .map(|(kind, share)| {
                let pct = f64::from(u32::try_from(*share).unwrap_or(u32::MAX)) / 10_000.0;
                format!("{} on {pct}% of attempts", kind.name())
            })
            .collect();
        if let Some(d) = self.slow {
            parts.push(format!("answers {} ms late", d.as_millis()));
        }
        let limits = [
            (self.rpm, "requests/min"),
            (self.tpm, "tokens/min"),
            (self.itpm, "input tokens/min"),
            (self.otpm, "output tokens/min"),
        ];
        for (limit, what) in limits {
            if let Some(n) = limit {
                parts.push(format!("limit {n} {what}"));
            }
        }
        if parts.is_empty() {
            return f.write_str("no faults");
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Style;

    #[test]
    fn a_spec_reads_limits_shares_and_delay() {
        let s: SteadyFaults = "rpm=60, 429=20%, 503=0.05, drop=0.01, slow=300"
            .parse()
            .unwrap();
        let c = s.limit(FakeConfig::new(Style::OpenAi));
        assert_eq!((c.rpm, c.tpm), (Some(60), None));
        assert_eq!(
            s.to_string(),
            "429 on 20% of attempts, overloaded on 5% of attempts, dropped on 1% of attempts, \
             answers 300 ms late, limit 60 requests/min"
        );
    }

    #[test]
    fn shares_are_played_evenly_and_the_same_every_run() {
        let s: SteadyFaults = "429=0.3,500=0.1".parse().unwrap();
        let count = |from: u64, n: u64, want: Fault| {
            (from..from + n)
                .filter(|&i| s.fault(i) == Some(want))
                .count()
        };
        let limited = Kind::RateLimited.fault();
        let failed = Kind::ServerError.fault();
        // Near its share over any few dozen attempts, and exact over many.
        for from in [1, 17, 1_000] {
            assert!((8..=10).contains(&count(from, 30, limited)), "from {from}");
            assert!((2..=4).contains(&count(from, 30, failed)), "from {from}");
        }
        assert_eq!(count(1, 10_000, limited), 3_000);
        assert_eq!(count(1, 10_000, failed), 1_000);
        assert_eq!(s.fault(5), s.fault(5));
    }

    #[test]
    fn a_wrong_spec_is_refused_naming_the_part_and_what_it_takes() {
        let err = |spec: &str| spec.parse::<SteadyFaults>().unwrap_err().to_string();
        assert!(err("429").contains("write KEY=VALUE"), "{}", err("429"));
        assert!(
            err("404=0.1").contains("no key `404`"),
            "{}",
            err("404=0.1")
        );
        assert!(err("429=1.5").contains("between 0 and 1"));
        assert!(err("429=lots").contains("`429=lots`"));
        assert!(err("rpm=fast").contains("whole number"));
        assert!(err("429=70%,503=40%").contains("more than every attempt"));
        assert_eq!("".parse::<SteadyFaults>().unwrap().to_string(), "no faults");
    }
}
