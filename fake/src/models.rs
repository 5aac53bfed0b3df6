//! Quotas a provider keeps per model, beside the credential's own: OpenAI, Anthropic and
//! Gemini limit each model of a key apart, so one model's spent daily quota leaves the key's
//! other models answering.

use std::collections::HashMap;
use std::time::Duration;

/// A provider's day: its daily quotas reset together, every 24 hours from its start.
pub(crate) const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Each limited model's requests per day, and what its current day has used.
#[derive(Debug, Default)]
pub(crate) struct ModelDays {
    limits: HashMap<String, Daily>,
}

#[derive(Debug)]
struct Daily {
    limit: u64,
    day: u64,
    used: u64,
}

impl ModelDays {
    /// Allows `model` `limit` requests a day from now on.
    pub fn limit(&mut self, model: &str, limit: u64) {
        self.limits.insert(
            model.to_owned(),
            Daily {
                limit,
                day: 0,
                used: 0,
            },
        );
    }

    /// Takes one request of `model`'s day at `since_start`; `Err` with the time until the
    /// next day when the day's quota is spent. A model without a daily limit always fits.
    pub fn take(&mut self, model: &str, since_start: Duration) -> Result<(), Duration> {
        let Some(d) = self.limits.get_mut(model) else {
            return Ok(());
        };
        let day = since_start.as_secs() / DAY.as_secs();
        if d.day != day {
            d.day = day;
            d.used = 0;
        }
        if d.used >= d.limit {
            let next = Duration::from_secs((day + 1) * DAY.as_secs());
            return Err(next.saturating_sub(since_start));
        }
        d.used += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_s_day_runs_out_and_comes_back_at_the_next_day() {
        let mut m = ModelDays::default();
        m.limit("a", 2);
        let at = Duration::from_secs(3_600);
        assert_eq!(m.take("a", at), Ok(()));
        assert_eq!(m.take("a", at), Ok(()));
        assert_eq!(m.take("a", at), Err(DAY - at));
        assert_eq!(m.take("b", at), Ok(()), "another model is not limited");
        assert_eq!(m.take("a", DAY + at), Ok(()), "a new day");
    }
}
