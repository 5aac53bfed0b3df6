//! The Anthropic plugin.
//!
//! - Quotas: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,
//!   remaining,reset}`, resets as RFC 3339 timestamps (relative to the host's `now`). They
//!   describe the limits of the model the request named: scope `model:<name>`, which every
//!   request's plan names too.
//! - Delays: `retry-after` (seconds), else on a 429 the reset of the exhausted dimension.
//! - 529 `overloaded_error` is the provider being overloaded: retry later, but the client's
//!   pace is not the cause. `x-should-retry` is passed on.
//! - Cost (see `docs/provider-counting.md`): one request; for a message (`/v1/messages`),
//!   input tokens = the prompt read from the body's digest (its text at four characters a
//!   token, each image by its pixels as Anthropic counts it — never its base64 — documents
//!   by their pages) and output tokens = `max_tokens`. Other routes (token counting,
//!   batches, models) count no tokens.
//! - Usage: input (uncached plus cache writes; cache reads do not count toward input
//!   limits) and output tokens, from the answer or from the stream's `message_start` and
//!   last `message_delta` (see `usage.rs`).
//! - A stream can fail after its 200: an `error` event (for example `overloaded_error`)
//!   makes the reading of its end say so, with the error's type as the code.

mod classify;
mod quota;
mod usage;

use sluice_plugin_sdk::cost::{anthropic_media_tokens, prompt_tokens};
use sluice_plugin_sdk::{
    Classification, Cost, Description, Dimension, ErrorShape, Observation, Outcome, Plugin,
    PolicyError, Reading, Refill, Request, Response, ResponsePart, default_read_response,
    model_scope, one_request,
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
            read_routes: vec![
                "POST /v1/messages".into(),
                "POST /v1/messages/count_tokens".into(),
                "POST /v1/complete".into(),
            ],
            error_shape: Some(ErrorShape::Anthropic),
            refill: Some(Refill::Continuous),
        }
    }

    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(classify::classify(req, outcome))
    }

    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        Ok(quota::observations(req, resp))
    }

    fn usage(req: &Request, resp: &Response, part: ResponsePart) -> Result<Vec<Cost>, PolicyError> {
        let _ = req;
        if !(200..300).contains(&resp.status) {
            return Ok(Vec::new());
        }
        Ok(match part {
            ResponsePart::Complete => usage::of_body(&resp.body),
            ResponsePart::StreamStart => Vec::new(),
            ResponsePart::StreamEnd => usage::of_stream(&resp.body).usage,
        })
    }

    /// A message's stream: the output tokens of its content deltas, and the input (and the
    /// cache's use) its `message_start` reports.
    fn count_stream(req: &Request, at: u64, stretch: &[u8]) -> Result<Vec<Cost>, PolicyError> {
        let _ = (req, at);
        Ok(usage::of_stretch(stretch))
    }

    /// The default composition, but the end of a stream is read in one pass for both its
    /// usage and an error event that overrides the success status.
    fn read_response(
        req: &Request,
        outcome: &Outcome,
        part: ResponsePart,
    ) -> Result<Reading, PolicyError> {
        match (outcome, part) {
            (Outcome::Response(resp), ResponsePart::StreamEnd) => {
                let end = usage::of_stream(&resp.body);
                let mut classification = classify::classify(req, outcome);
                if let Some(error) = &end.error {
                    classification = classify::stream_error(classification, error);
                }
                let success = (200..300).contains(&resp.status);
                Ok(Reading {
                    classification,
                    observations: Vec::new(),
                    usage: if success { end.usage } else { Vec::new() },
                })
            }
            _ => default_read_response::<Self>(req, outcome, part),
        }
    }

    fn scopes(req: &Request) -> Result<Vec<String>, PolicyError> {
        Ok(model_scope(req).into_iter().collect())
    }

    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let mut costs = vec![one_request()];
        let path = req.url.split(['?', '#']).next().unwrap_or("");
        if !path.ends_with("/v1/messages") {
            return Ok(costs);
        }
        if let Some(input) = prompt_tokens(req, &["model"], anthropic_media_tokens) {
            let output = req.digest.number("max_tokens").unwrap_or(0);
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
    use sluice_plugin_sdk::Verdict;
    use sluice_plugin_sdk::test::{base64, png, request};

    #[test]
    fn cost_splits_input_and_output() {
        let r = request(
            "POST",
            MESSAGES,
            &[],
            r#"{"model":"claude","max_tokens":256,"system":"abcd","messages":[{"role":"user","content":"efgh"}]}"#,
        );
        let plan = Anthropic::plan_request(&r).unwrap();
        let c = plan.cost;
        let amount = |d: Dimension| c.iter().find(|x| x.dimension == d).map(|x| x.amount);
        // "abcd", "user", "efgh": 12 characters, 3 tokens; the model's name is not prompt.
        assert_eq!(amount(Dimension::InputTokens), Some(3));
        assert_eq!(amount(Dimension::OutputTokens), Some(256));
        assert_eq!(amount(Dimension::Tokens), Some(259));
        assert_eq!(plan.scopes, vec!["model:claude".to_owned()]);
    }

    const MESSAGES: &str = "https://api.anthropic.com/v1/messages";

    #[test]
    fn an_image_costs_its_pixels_not_its_base64() {
        let body = serde_json::json!({
            "model": "claude-sonnet-4",
            "max_tokens": 50,
            "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                    "data": base64(&png(1092, 1092, 300_000))}},
                {"type": "text", "text": "what is this?"},
            ]}],
        });
        let plan =
            Anthropic::plan_request(&request("POST", MESSAGES, &[], body.to_string())).unwrap();
        let input = plan
            .cost
            .iter()
            .find(|c| c.dimension == Dimension::InputTokens)
            .unwrap();
        // 1 590 for the image (the guide's 1092 × 1092 example), a few for the text.
        assert!(
            (1_590..1_590 + 20).contains(&input.amount),
            "{}",
            input.amount
        );
    }

    #[test]
    fn routes_other_than_messages_count_no_tokens() {
        let r = request(
            "POST",
            "https://api.anthropic.com/v1/messages/count_tokens",
            &[],
            r#"{"model":"claude","messages":[{"role":"user","content":"hello"}]}"#,
        );
        assert_eq!(
            Anthropic::plan_request(&r).unwrap().cost,
            vec![one_request()]
        );
    }

    fn stream_end(body: &str) -> Reading {
        let r = request("POST", MESSAGES, &[], r#"{"model":"claude","stream":true}"#);
        let resp = Response {
            status: 200,
            headers: "anthropic-ratelimit-requests-remaining:5\n".into(),
            body: body.as_bytes().to_vec(),
        };
        Anthropic::read_response(&r, &Outcome::Response(resp), ResponsePart::StreamEnd).unwrap()
    }

    #[test]
    fn an_overloaded_error_after_the_200_makes_the_stream_s_end_overloaded() {
        let reading = stream_end(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7}}}\n\n\
             event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        assert_eq!(reading.classification.verdict, Verdict::Overloaded);
        assert_eq!(
            reading.classification.error_code.as_deref(),
            Some("overloaded_error")
        );
        assert_eq!(reading.usage.len(), 1, "the input was used all the same");
        assert!(
            reading.observations.is_empty(),
            "headers are read at the start"
        );
    }

    #[test]
    fn a_stream_that_ended_well_is_a_success_with_its_usage() {
        let reading = stream_end(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7}}}\n\n\
             event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}\n\n\
             event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert_eq!(reading.classification.verdict, Verdict::Success);
        assert_eq!(reading.classification.error_code, None);
        assert_eq!(reading.usage.len(), 3);
    }

    #[test]
    fn an_api_error_mid_stream_is_transient() {
        let reading = stream_end(
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}\n\n",
        );
        assert_eq!(reading.classification.verdict, Verdict::Transient);
    }
}
