//! A call's charge against its tenant's budgets ([`crate::budget`]), made before it queues
//! ([`super::prepare::Prepared::reserve`]): corrected to the usage the answer reported when
//! it ends, given back when nothing was sent.

use super::Outcome;
use crate::admission::{Dimension, Usage};
use crate::budget::{CacheUse, Reservation};
use crate::contract::{Cost, ReportedDimension};
use crate::offload::blocking;

/// The usage dimensions a plugin reports what an answer says of the provider's cache in
/// (see `sluice_plugin_sdk::billing`), priced at the cached or cache-write price.
pub use sluice_plugin_sdk::billing::{CACHE_READ_TOKENS, CACHE_WRITE_TOKENS, CACHED_INPUT_TOKENS};

/// Settles a call's charge by how it ended: corrected to the usage its answer reported
/// (`billed`, with the input tokens read from the provider's cache), given back when nothing
/// was sent, its estimate kept when something was sent and no usage came back.
///
/// Its caller boxes this future, as the charge's, and it hands `outcome` back: a call's
/// future keeps room for them only when it has a reservation to settle.
pub(super) async fn settle(
    r: Box<Reservation>,
    outcome: Outcome,
    billed: Option<&(Usage, CacheUse)>,
) -> Outcome {
    let remote = r.waits_on_network();
    let change: Box<dyn FnOnce() + Send> = match (&outcome, billed) {
        (Outcome::Ended(t), _) if !t.sent => Box::new(move || (*r).release()),
        (_, Some(&(actual, cache))) => Box::new(move || (*r).settle(Some(actual), cache)),
        // The estimate stands: nothing to record.
        (_, None) => return outcome,
    };
    // A runtime stopping meanwhile leaves the estimate standing, as a dropped reservation.
    let _ = blocking(remote, change).await;
    outcome
}

/// The usage a provider bills for, from what its answer reported: the input and output
/// tokens when either is reported (a plugin's token total may count more, as a rate
/// limit counts a request's whole reservation), else the token total, unsplit; `None` when
/// no token figure was reported (the estimate stands). One request, as estimated.
pub(super) fn billed(estimate: Usage, reported: &[Cost]) -> Option<Usage> {
    let amount = |d: Dimension| super::usage::reported_amount(reported, d);
    let (input, output) = (
        amount(Dimension::InputTokens),
        amount(Dimension::OutputTokens),
    );
    let usage = if input.is_some() || output.is_some() {
        Usage::tokens(input.unwrap_or(0), output.unwrap_or(0))
    } else {
        Usage {
            other_tokens: amount(Dimension::Tokens)?,
            ..Usage::ONE_REQUEST
        }
    };
    Some(Usage {
        requests: estimate.requests,
        ..usage
    })
}

/// What a reading reports of the provider's cache (nothing when it reports none).
pub(super) fn cache_use(reported: &[Cost]) -> CacheUse {
    let amount = |name: &str| {
        reported
            .iter()
            .rev()
            .find(|c| matches!(&c.dimension, ReportedDimension::Other(n) if n == name))
            .map_or(0, |c| c.amount)
    };
    CacheUse {
        read_of_input: amount(CACHED_INPUT_TOKENS),
        read_besides_input: amount(CACHE_READ_TOKENS),
        written_of_input: amount(CACHE_WRITE_TOKENS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::ReportedDimension as D;

    fn cost(dimension: D, amount: u64) -> Cost {
        Cost { dimension, amount }
    }

    #[test]
    fn a_call_is_billed_its_input_and_output_not_a_rate_limits_reservation() {
        // OpenAI's plugin reports a token total of at least the reservation (1 100).
        let estimate = Usage {
            other_tokens: 1_100,
            ..Usage::ONE_REQUEST
        };
        let reported = [
            cost(D::InputTokens, 100),
            cost(D::OutputTokens, 300),
            cost(D::Tokens, 1_100),
            cost(D::Other(CACHED_INPUT_TOKENS.into()), 40),
        ];
        assert_eq!(billed(estimate, &reported), Some(Usage::tokens(100, 300)));
        assert_eq!(cache_use(&reported).read_of_input, 40);
        // A total alone is billed unsplit; nothing reported keeps the estimate.
        let total = billed(estimate, &[cost(D::Tokens, 700)]).unwrap();
        assert_eq!((total.other_tokens, total.requests), (700, 1));
        assert_eq!(billed(estimate, &[cost(D::Requests, 1)]), None);
    }
}
