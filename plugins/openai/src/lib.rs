//! The OpenAI plugin.
//!
//! - Quotas: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, with resets written as
//!   Go durations (`1s`, `6m0s`, `12ms`, `2m59.56s`). They describe the limits of the model
//!   the request named, so observations carry the scope `model:<name>`.
//! - Delays: `retry-after-ms` and `retry-after`, else on a 429 the reset of the exhausted
//!   dimension.
//! - A 429 is not always a short wait: `insufficient_quota` means the billing quota is used
//!   up (quota-exhausted), while `rate_limit_exceeded` is a rate limit.
//! - `x-should-retry` is the provider's own advice, passed on.
//! - Cost: one request, and tokens = a prompt estimate + `max_tokens` (or
//!   `max_completion_tokens` / `max_output_tokens`; 1024 when none is set).

mod classify;
mod quota;

use sluice_plugin_sdk::{
    Classification, Cost, Description, Dimension, Observation, Outcome, Plugin, PolicyError,
    Priority, PriorityClass, Request, Response, default_priority, json,
};

/// Output tokens assumed when a request sets no maximum.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 1024;

/// The OpenAI policy.
#[derive(Debug)]
pub struct OpenAi;

impl Plugin for OpenAi {
    fn describe() -> Description {
        Description {
            name: "openai".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "OpenAI".into(),
            hosts: vec!["api.openai.com".into()],
            routes: vec![
                "POST /v1/chat/completions".into(),
                "POST /v1/responses".into(),
                "POST /v1/completions".into(),
                "POST /v1/embeddings".into(),
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

    fn decide_priority(req: &Request) -> Result<Priority, PolicyError> {
        let mut p = default_priority(req);
        if let Some(body) = json::parse(&req.body) {
            if p.tenant.is_none() {
                p.tenant = body.get("user").and_then(|u| u.as_str()).map(str::to_owned);
            }
            if body.get("service_tier").and_then(|t| t.as_str()) == Some("flex") {
                p.class = PriorityClass::Background;
            }
        }
        Ok(p)
    }

    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let mut costs = vec![Cost {
            dimension: Dimension::Requests,
            amount: 1,
        }];
        if let Some(body) = json::parse(&req.body) {
            let prompt = json::tokens_for_chars(json::text_chars(
                &body,
                &["model", "role", "user", "service_tier", "response_format"],
            ));
            let max_out = ["max_tokens", "max_completion_tokens", "max_output_tokens"]
                .iter()
                .find_map(|k| body.get(*k).and_then(json::Value::as_u64))
                .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
            costs.push(Cost {
                dimension: Dimension::Tokens,
                amount: prompt.saturating_add(max_out),
            });
        }
        Ok(costs)
    }
}

sluice_plugin_sdk::export_plugin!(OpenAi);

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::RequestClass;

    fn req(body: &str) -> Request {
        Request {
            method: "POST".into(),
            url: "https://api.openai.com/v1/chat/completions".into(),
            class: RequestClass::Read,
            headers: String::new(),
            body: body.as_bytes().to_vec(),
            now_ms: 0,
        }
    }

    #[test]
    fn cost_is_prompt_plus_max_tokens() {
        let r = req(
            r#"{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"12345678"}]}"#,
        );
        let c = OpenAi::estimate_cost(&r).unwrap();
        assert_eq!(c[0].amount, 1);
        assert_eq!(c[1].dimension, Dimension::Tokens);
        assert_eq!(c[1].amount, 2 + 100);
    }

    #[test]
    fn cost_without_max_tokens_assumes_the_default() {
        let c = OpenAi::estimate_cost(&req(r#"{"model":"m","messages":[]}"#)).unwrap();
        assert_eq!(c[1].amount, DEFAULT_MAX_OUTPUT_TOKENS);
    }

    #[test]
    fn cost_of_a_non_json_body_is_one_request() {
        assert_eq!(OpenAi::estimate_cost(&req("not json")).unwrap().len(), 1);
    }

    #[test]
    fn flex_tier_is_background_and_user_is_the_tenant() {
        let p = OpenAi::decide_priority(&req(r#"{"service_tier":"flex","user":"t-1"}"#)).unwrap();
        assert_eq!(p.class, PriorityClass::Background);
        assert_eq!(p.tenant.as_deref(), Some("t-1"));
    }
}
