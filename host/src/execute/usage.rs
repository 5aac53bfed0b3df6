//! A call's charge, corrected by what the provider says it used.

use crate::admission::{Dimension, Usage};
use crate::policy::Cost;

/// The usage to charge once the provider has reported `reported`: the estimate, with its
/// token figures replaced by the provider's when it reported any token dimension (a total
/// beyond its input and output parts counts as unsplit tokens), and its requests kept.
/// `None` when the provider reported nothing: the estimate stands.
pub(super) fn corrected(estimate: Usage, reported: &[Cost]) -> Option<Usage> {
    let tokens = reported.iter().any(|c| {
        matches!(
            Dimension::from_policy(&c.dimension),
            Some(Dimension::Tokens | Dimension::InputTokens | Dimension::OutputTokens)
        )
    });
    if !tokens {
        return None;
    }
    let actual = Usage::from_estimate(reported);
    Some(Usage {
        requests: estimate.requests,
        ..actual
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Dimension as D;

    fn cost(dimension: D, amount: u64) -> Cost {
        Cost { dimension, amount }
    }

    #[test]
    fn a_report_replaces_every_token_figure_and_keeps_the_requests() {
        // OpenAI's estimate: prompt + max_tokens as unsplit tokens.
        let estimate = Usage {
            requests: 1,
            input_tokens: 0,
            output_tokens: 0,
            other_tokens: 1_100,
        };
        let got = corrected(
            estimate,
            &[
                cost(D::InputTokens, 100),
                cost(D::OutputTokens, 250),
                cost(D::Tokens, 350),
            ],
        )
        .unwrap();
        assert_eq!(got, Usage::tokens(100, 250));
        assert_eq!(got.get(Dimension::Tokens), 350);
    }

    #[test]
    fn no_report_keeps_the_estimate() {
        assert_eq!(corrected(Usage::tokens(1, 2), &[]), None);
        assert_eq!(
            corrected(Usage::tokens(1, 2), &[cost(D::Requests, 1)]),
            None
        );
    }
}
