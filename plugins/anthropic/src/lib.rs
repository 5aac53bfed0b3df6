//! The Anthropic plugin.
//!
//! - Quotas: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
//!   remaining,reset}`, resets as RFC 3339 timestamps (relative to the host's `now`). They
//!   describe the limits of the model the request named: scope `model:<name>`.
//! - Delays: `retry-after` (seconds), else on a 429 the reset of the exhausted dimension.
//! - 529 `overloaded_error` is the provider being overloaded: retry later, but the client's
//!   pace is not the cause. `x-should-retry` is passed on.
//! - Cost: one request; input tokens estimated from the prompt; output tokens = `max_tokens`.

mod classify;
mod quota;

use sluice_plugin_sdk::{
    Classification, Cost, Description, Dimension, Observation, Outcome, Plugin, PolicyError,
    Request, Response, json,
};

/// The Anthropic policy.
#[derive(Debug)]
pub struct Anthropic;

impl Plugin for Anthropic {
    fn describe() -> Description {
        Description {
            name: "anthropic".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "Anthropic".into(),
            hosts: vec!["api.anthropic.com".into()],
            routes: vec![
                "POST /v1/messages".into(),
                "POST /v1/messages/count_tokens".into(),
                "/v1/*".into(),
            ],
        }
    }

    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(classify::classify(req, outcome))
    }

    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        Ok(quota::observations(req, resp))
    }

    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let mut costs = vec![Cost {
            dimension: Dimension::Requests,
            amount: 1,
        }];
        if let Some(body) = json::parse(&req.body) {
            let input = json::tokens_for_chars(json::text_chars(
                &body,
                &[
                    "model",
                    "role",
                    "type",
                    "max_tokens",
                    "metadata",
                    "stop_sequences",
                ],
            ));
            let output = body
                .get("max_tokens")
                .and_then(json::Value::as_u64)
                .unwrap_or(0);
            costs.push(Cost {
                dimension: Dimension::InputTokens,
                amount: input,
            });
            costs.push(Cost {
                dimension: Dimension::OutputTokens,
                amount: output,
            });
            costs.push(Cost {
                dimension: Dimension::Tokens,
                amount: input.saturating_add(output),
            });
        }
        Ok(costs)
    }
}

sluice_plugin_sdk::export_plugin!(Anthropic);

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::RequestClass;

    #[test]
    fn cost_splits_input_and_output() {
        let r = Request {
            method: "POST".into(),
            url: "https://api.anthropic.com/v1/messages".into(),
            class: RequestClass::Read,
            headers: String::new(),
            body: br#"{"model":"claude","max_tokens":256,"system":"abcd","messages":[{"role":"user","content":"efgh"}]}"#.to_vec(),
            now_ms: 0,
        };
        let c = Anthropic::estimate_cost(&r).unwrap();
        let amount = |d: Dimension| c.iter().find(|x| x.dimension == d).map(|x| x.amount);
        assert_eq!(amount(Dimension::InputTokens), Some(2));
        assert_eq!(amount(Dimension::OutputTokens), Some(256));
        assert_eq!(amount(Dimension::Tokens), Some(258));
    }
}
