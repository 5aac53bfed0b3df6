//! A call's charge, corrected by what the provider says it used.

use crate::admission::{Dimension, Usage};
use crate::contract::Cost;
use crate::observe::Handles;
use metrics::Counter;

/// The usage to charge once the provider has reported `reported`, as the contract says
/// (`reading.usage`): each dimension named there replaces the estimate's, and a dimension
/// not named keeps its estimate (a token total beyond the input and output parts counts as
/// unsplit tokens). `None` when nothing the host counts was reported: the estimate stands.
pub(super) fn corrected(estimate: Usage, reported: &[Cost]) -> Option<Usage> {
    let amount = |d: Dimension| reported_amount(reported, d);
    if Dimension::ALL.iter().all(|d| amount(*d).is_none()) {
        return None;
    }
    let input_tokens = amount(Dimension::InputTokens).unwrap_or(estimate.input_tokens);
    let output_tokens = amount(Dimension::OutputTokens).unwrap_or(estimate.output_tokens);
    let total = amount(Dimension::Tokens).unwrap_or_else(|| estimate.get(Dimension::Tokens));
    Some(Usage {
        requests: amount(Dimension::Requests).unwrap_or(estimate.requests),
        input_tokens,
        output_tokens,
        other_tokens: total.saturating_sub(input_tokens.saturating_add(output_tokens)),
    })
}

/// Reports that `provider`'s answer corrected a charge from `estimate` to `actual`, on the
/// counter kept for `provider` among `corrections`.
pub(super) fn applied(
    corrections: &Handles<Counter, 1>,
    provider: &str,
    estimate: Usage,
    actual: Usage,
) {
    tracing::debug!(
        provider,
        estimated_tokens = estimate.get(Dimension::Tokens),
        actual_tokens = actual.get(Dimension::Tokens),
        "usage corrected to what the provider reported"
    );
    corrections.get([provider]).increment(1);
}

/// The amount `reported` gives dimension `d`: its last figure for it, if any.
pub(super) fn reported_amount(reported: &[Cost], d: Dimension) -> Option<u64> {
    reported
        .iter()
        .rev()
        .find(|c| Dimension::from_policy(&c.dimension) == Some(d))
        .map(|c| c.amount)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ReportedDimension as D;

    fn cost(dimension: D, amount: u64) -> Cost {
        Cost { dimension, amount }
    }

    #[test]
    fn every_reported_dimension_replaces_the_estimate() {
        // An estimate of prompt + max_tokens, split.
        let estimate = Usage::tokens(100, 1_000);
        let got = corrected(
            estimate,
            &[
                cost(D::InputTokens, 120),
                cost(D::OutputTokens, 250),
                cost(D::Tokens, 370),
            ],
        )
        .unwrap();
        assert_eq!(got, Usage::tokens(120, 250));
        assert_eq!(got.get(Dimension::Tokens), 370);
    }

    #[test]
    fn a_dimension_not_reported_keeps_its_estimate() {
        // OpenAI's estimate is unsplit tokens; its report counts them at admission.
        let estimate = Usage {
            requests: 1,
            input_tokens: 0,
            output_tokens: 0,
            other_tokens: 1_100,
        };
        let got = corrected(estimate, &[cost(D::OutputTokens, 250)]).unwrap();
        assert_eq!(got.output_tokens, 250);
        assert_eq!(
            got.get(Dimension::Tokens),
            1_100,
            "the total keeps its estimate"
        );
        assert_eq!(got.requests, 1);
    }

    #[test]
    fn no_report_keeps_the_estimate() {
        assert_eq!(corrected(Usage::tokens(1, 2), &[]), None);
        assert_eq!(
            corrected(Usage::tokens(1, 2), &[cost(D::Concurrency, 1)]),
            None
        );
    }
}
