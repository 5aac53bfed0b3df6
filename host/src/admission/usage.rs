//! What a quota counts ([`Dimension`]), and how much of each a request uses ([`Usage`]).
//!
//! A request is charged the cost its plugin's plan estimates (`plan-request`) before it is
//! sent and corrected with its actual usage (`read-response`) after the response, so one type
//! carries both.

use std::fmt;

use crate::contract;

/// What a quota bucket counts. Serializes as its [`Dimension::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Requests.
    Requests,
    /// Tokens of any kind (input and output together).
    Tokens,
    /// Input (prompt) tokens.
    InputTokens,
    /// Output (completion) tokens.
    OutputTokens,
}

impl Dimension {
    /// Every dimension, in a fixed order.
    pub const ALL: [Self; 4] = [
        Self::Requests,
        Self::Tokens,
        Self::InputTokens,
        Self::OutputTokens,
    ];

    /// The host's dimension for a plugin's, if it is a rate quota's (concurrency and
    /// provider-specific dimensions are not).
    pub fn from_policy(d: &contract::ReportedDimension) -> Option<Self> {
        match d {
            contract::ReportedDimension::Requests => Some(Self::Requests),
            contract::ReportedDimension::Tokens => Some(Self::Tokens),
            contract::ReportedDimension::InputTokens => Some(Self::InputTokens),
            contract::ReportedDimension::OutputTokens => Some(Self::OutputTokens),
            contract::ReportedDimension::Concurrency | contract::ReportedDimension::Other(_) => {
                None
            }
        }
    }

    /// The dimension's name in configuration and explanations.
    pub fn name(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::Tokens => "tokens",
            Self::InputTokens => "input_tokens",
            Self::OutputTokens => "output_tokens",
        }
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much of each dimension one request uses: an estimate before sending, the actual
/// figures after the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Usage {
    /// Requests (one for an ordinary call).
    pub requests: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Tokens not split into input and output (for providers that report only a total).
    pub other_tokens: u64,
}

impl Usage {
    /// One request that uses no tokens.
    pub const ONE_REQUEST: Self = Self {
        requests: 1,
        input_tokens: 0,
        output_tokens: 0,
        other_tokens: 0,
    };

    /// One request expected to read `input` tokens and write up to `output`.
    pub const fn tokens(input: u64, output: u64) -> Self {
        Self {
            requests: 1,
            input_tokens: input,
            output_tokens: output,
            other_tokens: 0,
        }
    }

    /// The amount of `dimension` this usage takes.
    pub fn get(&self, dimension: Dimension) -> u64 {
        match dimension {
            Dimension::Requests => self.requests,
            Dimension::Tokens => self
                .input_tokens
                .saturating_add(self.output_tokens)
                .saturating_add(self.other_tokens),
            Dimension::InputTokens => self.input_tokens,
            Dimension::OutputTokens => self.output_tokens,
        }
    }

    /// The usage a plugin's plan (`plan-request`) estimates for one request. A plugin that names
    /// only a token total is read as [`Usage::other_tokens`]; concurrency and
    /// provider-specific dimensions are the host's own business and are ignored.
    pub fn from_estimate(costs: &[contract::Cost]) -> Self {
        let mut usage = Self::ONE_REQUEST;
        let mut total = None;
        for cost in costs {
            match Dimension::from_policy(&cost.dimension) {
                Some(Dimension::Requests) => usage.requests = cost.amount,
                Some(Dimension::Tokens) => total = Some(cost.amount),
                Some(Dimension::InputTokens) => usage.input_tokens = cost.amount,
                Some(Dimension::OutputTokens) => usage.output_tokens = cost.amount,
                None => {}
            }
        }
        if let Some(total) = total {
            let split = usage.input_tokens.saturating_add(usage.output_tokens);
            usage.other_tokens = total.saturating_sub(split);
        }
        usage
    }

    pub(crate) fn add(&mut self, other: &Self) {
        self.requests = self.requests.saturating_add(other.requests);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.other_tokens = self.other_tokens.saturating_add(other.other_tokens);
    }

    pub(crate) fn sub(&mut self, other: &Self) {
        self.requests = self.requests.saturating_sub(other.requests);
        self.input_tokens = self.input_tokens.saturating_sub(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_sub(other.output_tokens);
        self.other_tokens = self.other_tokens.saturating_sub(other.other_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_the_sum_of_their_parts() {
        let u = Usage::tokens(700, 300);
        assert_eq!(u.get(Dimension::Tokens), 1000);
        assert_eq!(u.get(Dimension::Requests), 1);
    }

    #[test]
    fn an_estimate_with_a_total_and_parts_keeps_the_total() {
        let u = Usage::from_estimate(&[
            contract::Cost {
                dimension: contract::ReportedDimension::InputTokens,
                amount: 100,
            },
            contract::Cost {
                dimension: contract::ReportedDimension::Tokens,
                amount: 1_000,
            },
            contract::Cost {
                dimension: contract::ReportedDimension::Concurrency,
                amount: 9,
            },
        ]);
        assert_eq!(u.get(Dimension::Tokens), 1_000);
        assert_eq!(u.get(Dimension::InputTokens), 100);
        assert_eq!(u.requests, 1);
    }
}
