//! What responses say about a scope: a hold when a quota is spent, a quota learned from a
//! stated limit, and the provider's `remaining`, which the host believes when it is lower
//! than its own count.
//!
//! # The provider is the truth about `remaining`
//!
//! The host counts only what it sent. The provider counts everything sent with the
//! credential: another process, a person at a console, an SDK's own retry. When a response
//! says `remaining: R` for a quota and the host's bucket believes more than `R` fits now, the
//! bucket is debited until it believes `R` ([`Rate::debit_to`]): at most `R` goes at once,
//! and the pace resumes from there.
//!
//! - **Why a lower figure means traffic the host did not see.** The bucket admits a cost
//!   only if no window of the quota's length then holds more than the limit, so what it
//!   believes fits now is never more than the limit less what the host sent in the last
//!   window: never more than what a provider counting the same traffic reports, whether it
//!   counts by sliding window, fixed window or refilling bucket. A figure below the belief
//!   is the provider counting something the host did not.
//! - **Never a credit.** A figure above the belief changes nothing: the bucket keeps its
//!   pace and burst, so nothing beyond the configured (or learned) limit ever goes, whatever
//!   a response says. A provider that is more generous than the configuration says so
//!   through a larger limit, which the configuration overrides (see [`Scope::learn`]).
//! - **Which quota.** The figure is about its dimension and, when the provider states it
//!   (`RateLimit-Policy`'s `w`), that window. Without a window it is about the dimension's
//!   shortest quota of a minute or less: OpenAI's and Anthropic's headers describe their
//!   per-minute limits. A figure without a window never debits a daily quota, which a
//!   per-minute `remaining` would starve for hours.
//! - **A snapshot at the response.** The provider counted the attempt before it answered,
//!   and the host charged it when it was admitted: the attempt's own cost is already in
//!   both, so the figure is compared as it stands, when the response is read. Requests the
//!   host admitted after the provider's snapshot are in the host's count and not in the
//!   figure: they only lower the belief, so they never cause a debit. What the quota refilled
//!   between the snapshot and the read is in the belief and not in the figure: after a slow
//!   answer from a nearly spent quota a debit can be stricter than it need be by that much,
//!   and never by more than the bound below.
//! - **Rounding.** Anthropic rounds its token figures; a token figure is believed plus
//!   [`TOKEN_ROUNDING`], so a difference smaller than that is ignored and rounding never
//!   throttles. Request counts are exact.
//! - **Bounded.** A debit leaves `R` admissible at once; with `R` at 0 (and no reset) the
//!   next unit fits one paced interval later, not a window later. It moves the bucket's
//!   schedule by at most its burst's worth of time, and never past the reset the provider
//!   gave: at the reset at least one unit fits, as after a hold until the reset. So a debit
//!   is never stricter than `remaining: 0` with that reset, which holds the whole scope until
//!   the reset, as before.

use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

use super::{Origin, QuotaSpec, Scope, Tat};
use crate::admission::bucket::{Nanos, Rate};
use crate::admission::limits::MINUTE;
use crate::admission::usage::Dimension;

/// How far a provider's token `remaining` may lie below the host's belief and still count as
/// agreeing with it: Anthropic rounds its token figures (to thousands), so a reading can be
/// some hundreds low without any traffic the host did not see.
pub const TOKEN_ROUNDING: u64 = 1_000;

/// What a response last said about one dimension of a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learned {
    /// What the figures count.
    pub dimension: Dimension,
    /// The quota's size, if stated.
    pub limit: Option<u64>,
    /// What was left, if stated.
    pub remaining: Option<u64>,
    /// When the window resets, on the scheduler's clock, if stated.
    pub reset_at: Option<Nanos>,
    /// When the response was read.
    pub seen_at: Nanos,
    /// The header names (or `body`) the figures came from.
    pub source: Box<str>,
}

impl Scope {
    /// Records what a response said about one dimension (of the quota with `window`, when
    /// the provider stated one). `remaining: 0` with a reset holds the scope until the reset;
    /// a limit with a window (a minute to a month), for a dimension the configuration did not
    /// bound or bound higher, becomes a learned quota, starting from the `remaining` stated
    /// with it (else with an empty burst); a `remaining` below what the scope's bucket for it
    /// believes is left debits the bucket (see the module docs).
    pub fn learn(&mut self, now: Nanos, learned: Learned, window: Option<Duration>) {
        let spent = matches!((learned.remaining, learned.reset_at), (Some(0), Some(_)));
        if spent && let Some(reset) = learned.reset_at {
            let reason = format!("{} exhausted ({})", learned.dimension, learned.source);
            self.hold(now, reset.max(now), &reason);
        }
        if let (Some(limit), Some(window)) = (learned.limit.and_then(NonZeroU64::new), window) {
            let used_known = learned.remaining.is_some();
            self.learn_quota(
                now,
                learned.dimension,
                window,
                limit,
                used_known,
                &learned.source,
            );
        }
        if !spent && let Some(remaining) = learned.remaining {
            self.believe(now, learned.dimension, window, remaining, learned.reset_at);
        }
        let all = self.learned.get_or_insert_default();
        match all.iter_mut().find(|l| l.dimension == learned.dimension) {
            Some(slot) => *slot = learned,
            None => all.push(learned),
        }
    }

    /// The quota a figure about `dimension` describes: the one of the stated `window`, else
    /// the dimension's shortest of a minute or less.
    fn quota_for(&self, dimension: Dimension, window: Option<Duration>) -> Option<usize> {
        let quotas = self.shape.quotas.iter().enumerate();
        let mut of = quotas.filter(|(_, q)| q.dimension == dimension);
        match window {
            Some(w) => of.find(|(_, q)| q.window == w).map(|(i, _)| i),
            None => of
                .filter(|(_, q)| q.window <= MINUTE)
                .min_by_key(|(_, q)| q.window)
                .map(|(i, _)| i),
        }
    }

    /// Debits the quota the figure describes until it believes at most `remaining` (within
    /// the rounding) fits now, never moving its schedule past `reset_at`. Returns how far the
    /// schedule moved.
    fn believe(
        &mut self,
        now: Nanos,
        dimension: Dimension,
        window: Option<Duration>,
        remaining: u64,
        reset_at: Option<Nanos>,
    ) -> Nanos {
        let Some(i) = self.quota_for(dimension, window) else {
            return 0;
        };
        let rounding = match dimension {
            Dimension::Requests => 0,
            Dimension::Tokens | Dimension::InputTokens | Dimension::OutputTokens => TOKEN_ROUNDING,
        };
        let rate = self.shape.quotas[i].rate;
        let believed = remaining.saturating_add(rounding);
        rate.debit_to(&mut self.tats[i].tat, now, believed, reset_at)
    }

    /// Makes `limit` per `window` a quota of the scope, unless the configuration bounds it
    /// lower. `used_known`: the same figure states a `remaining`, which [`Self::believe`]
    /// then debits the new quota to.
    fn learn_quota(
        &mut self,
        now: Nanos,
        dimension: Dimension,
        window: Duration,
        limit: NonZeroU64,
        used_known: bool,
        source: &str,
    ) {
        let at = self
            .shape
            .quotas
            .iter()
            .position(|q| q.dimension == dimension && q.window == window);
        // The configuration is a promise about the account; a smaller limit seen on the
        // wire wins, a larger one does not.
        if at.is_some_and(|i| self.shape.quotas[i].limit <= limit) {
            return;
        }
        let Ok(rate) = Rate::refilled(limit, window, self.shape.margin, self.shape.refill) else {
            return;
        };
        let spec = QuotaSpec {
            dimension,
            window,
            limit,
            origin: Origin::Observed(source.into()),
            rate,
        };
        // Start from what the provider says is left: a full burst, debited to `remaining`
        // next. Without a `remaining`, how much was used is not known: start with an empty
        // burst. (A monthly quota learned empty would pace its first call for hours.)
        let mut tat = 0;
        if !used_known {
            rate.hold_until(&mut tat, now);
        }
        let shape = Arc::make_mut(&mut self.shape);
        let mut tats = std::mem::take(&mut self.tats).into_vec();
        // A fresh `shifted` origin: grants charged before hold ends of the old quota, which
        // then match nothing and give nothing back.
        let state = Tat {
            tat,
            shifted: u64::MAX / 2,
        };
        match at {
            Some(i) => {
                shape.quotas[i] = spec;
                tats[i] = state;
            }
            None => {
                shape.quotas.push(spec);
                tats.push(state);
            }
        }
        self.tats = tats.into_boxed_slice();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::limits::{DAY, Limits};
    use crate::admission::scope::Shape;
    use crate::admission::usage::Usage;

    const SEC: Nanos = 1_000_000_000;

    fn scope(toml: &str) -> Scope {
        let limits: Limits = toml::from_str(toml).unwrap();
        Scope::new(Arc::new(Shape::new(&limits, 0.9).unwrap()))
    }

    fn said(dimension: Dimension, remaining: u64, reset_at: Option<Nanos>) -> Learned {
        Learned {
            dimension,
            limit: None,
            remaining: Some(remaining),
            reset_at,
            seen_at: 0,
            source: "x-ratelimit-remaining".into(),
        }
    }

    /// What the quota at `i` believes fits at `now`.
    fn believed(s: &Scope, i: usize, now: Nanos) -> u64 {
        s.shape.quotas[i].rate.available(s.tats[i].tat, now)
    }

    #[test]
    fn a_figure_without_a_window_is_about_the_per_minute_quota_never_the_daily_one() {
        let mut s = scope("requests_per_minute = 600\nrequests_per_day = 100000\n");
        let (minute, day) = (believed(&s, 0, SEC), believed(&s, 1, SEC));
        s.learn(SEC, said(Dimension::Requests, 5, None), None);
        assert_eq!(believed(&s, 0, SEC), 5);
        assert_eq!(believed(&s, 1, SEC), day);
        assert!(minute > 5);

        let mut daily = scope("requests_per_day = 100000\n");
        let before = believed(&daily, 0, SEC);
        daily.learn(SEC, said(Dimension::Requests, 5, None), None);
        assert_eq!(believed(&daily, 0, SEC), before);
        // Stated, the window picks the quota.
        daily.learn(SEC, said(Dimension::Requests, 5, None), Some(DAY));
        assert_eq!(believed(&daily, 0, SEC), 5);
    }

    #[test]
    fn a_token_figure_within_the_rounding_changes_nothing() {
        let mut s = scope("tokens_per_minute = 100000\n"); // burst 10 001
        assert_eq!(believed(&s, 0, SEC), 10_001);
        s.learn(SEC, said(Dimension::Tokens, 9_500, None), None);
        assert_eq!(believed(&s, 0, SEC), 10_001);
        s.learn(SEC, said(Dimension::Tokens, 4_000, None), None);
        assert_eq!(believed(&s, 0, SEC), 4_000 + TOKEN_ROUNDING);
        // Another dimension's figure is not about this quota.
        s.learn(SEC, said(Dimension::InputTokens, 0, None), None);
        assert_eq!(believed(&s, 0, SEC), 5_000);
    }

    #[test]
    fn a_debit_leaves_one_unit_free_at_the_providers_reset() {
        let mut s = scope("requests_per_minute = 600\n");
        let interval = s.shape.quotas[0].rate.interval();
        // The figure says one is left, but its reset passed five intervals ago (the answer
        // was slow to arrive): the quota is whole again, and the debit stops where a hold
        // until the reset would.
        let reset = 10 * SEC - 5 * interval;
        s.learn(10 * SEC, said(Dimension::Requests, 1, Some(reset)), None);
        assert_eq!(believed(&s, 0, 10 * SEC), 6);
        // With no reset the figure is believed as it stands.
        let mut s = scope("requests_per_minute = 600\n");
        s.learn(10 * SEC, said(Dimension::Requests, 1, None), None);
        assert_eq!(believed(&s, 0, 10 * SEC), 1);
    }

    #[test]
    fn remaining_zero_with_a_reset_holds_and_is_not_also_debited() {
        let mut s = scope("requests_per_minute = 600\n");
        s.learn(SEC, said(Dimension::Requests, 0, Some(5 * SEC)), None);
        assert_eq!(s.held(SEC).map(|h| h.until), Some(5 * SEC));
        assert!(s.admits(5 * SEC, &Usage::ONE_REQUEST));
    }
}
