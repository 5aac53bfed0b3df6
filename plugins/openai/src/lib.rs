//! The OpenAI plugin.
//!
//! - Quotas: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, with resets written as
//!   Go durations (`1s`, `6m0s`, `12ms`, `2m59.56s`). They describe the limits of the model
//!   the request named, so observations carry the scope `model:<name>`, and every request's
//!   plan names the same scope: what a request is charged and what the headers report meet
//!   in one bucket.
//! - Delays: `retry-after-ms` (the precise one, when given), else `retry-after`, else on a 429
//!   the reset of the exhausted dimension.
//! - A 429 is not always a short wait: a billing error (`insufficient_quota` as the type or
//!   the code, or the codes that say which limit: `credit_balance_exhausted`,
//!   `organization_spend_limit_exceeded`, `project_spend_limit_exceeded`,
//!   `organization_usage_limit_exceeded`) means credits or a spend or usage limit are used
//!   up (quota-exhausted), while `rate_limit_exceeded` or `slow_down` is a rate limit.
//! - `x-should-retry` is the provider's own advice, passed on.
//! - Cost (see `docs/provider-counting.md`): one request; for a generation (chat
//!   completions, completions, responses), tokens = the prompt + `max_tokens` (or
//!   `max_completion_tokens` / `max_output_tokens`; when none is set, the default the host's
//!   configuration sets for the model, else [`DEFAULT_MAX_OUTPUT_TOKENS`]); for embeddings,
//!   the prompt alone; any other route (files, batches, vector stores...) counts no tokens. The prompt is read from the body's digest: its text at four
//!   characters a token, and each image as OpenAI counts it for the model (512 px tiles or
//!   32 px patches, by `detail`; never its base64), documents by their pages and audio by
//!   its length.
//! - Usage: the answer's `usage` (see `usage.rs`), streamed or not, as OpenAI counts it:
//!   the tokens-per-minute limit is charged when a request is admitted (its prompt and its
//!   whole `max_tokens`) and nothing is given back when the answer is shorter, so the
//!   `tokens` figure never falls below that count; a generation that named no maximum is
//!   counted for its prompt and what it wrote. The input and output figures are the
//!   answer's own.
//!
//! The response's headers are parsed once per reading: `read-response` is overridden to
//! share them between the classification and the quota observations.

mod classify;
mod quota;
mod usage;

use sluice_plugin_sdk::cost::{
    document_or_audio_tokens, first_number, image_size, max_output, prompt_tokens,
};
use sluice_plugin_sdk::media::openai_image_tokens;
use sluice_plugin_sdk::{
    Classification, Cost, Description, Dimension, ErrorShape, MediaKind, MediaPart, Observation,
    Outcome, Plugin, PolicyError, Priority, PriorityClass, Reading, Request, Response,
    ResponsePart, default_priority, headers, model, model_scope, one_request, sse,
};

/// Output tokens assumed when a generation sets no maximum.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 1024;

/// The fields that bound a generation's output, in the order they are looked for.
const MAX_OUTPUT_FIELDS: [&str; 3] = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

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
            read_routes: vec![
                "POST /v1/chat/completions".into(),
                "POST /v1/completions".into(),
                "POST /v1/embeddings".into(),
                "POST /v1/responses".into(),
                "POST /v1/moderations".into(),
            ],
            error_shape: Some(ErrorShape::Openai),
            refill: None,
        }
    }

    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        let h = match outcome {
            Outcome::Response(r) => headers(&r.headers),
            Outcome::Transport(_) => headers(""),
        };
        Ok(classify::classify(req, outcome, &h))
    }

    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        Ok(quota::observations(req, &headers(&resp.headers)))
    }

    fn usage(req: &Request, resp: &Response, part: ResponsePart) -> Result<Vec<Cost>, PolicyError> {
        Ok(counted(req, resp, part))
    }

    fn read_response(
        req: &Request,
        outcome: &Outcome,
        part: ResponsePart,
    ) -> Result<Reading, PolicyError> {
        let Outcome::Response(resp) = outcome else {
            return Self::classify(req, outcome).map(|classification| Reading {
                classification,
                observations: Vec::new(),
                usage: Vec::new(),
            });
        };
        let h = headers(&resp.headers);
        Ok(Reading {
            classification: classify::classify(req, outcome, &h),
            observations: match part {
                ResponsePart::StreamEnd => Vec::new(),
                ResponsePart::Complete | ResponsePart::StreamStart => quota::observations(req, &h),
            },
            usage: counted(req, resp, part),
        })
    }

    /// A generation's stream: the output tokens of its deltas, and in its first stretch the
    /// prompt's estimate as its input (OpenAI reports the prompt's count only at the end). No
    /// token total: OpenAI counts a request's whole reservation against its limit however it
    /// ends, so the bucket's charge stands while the bill is what was produced.
    fn count_stream(req: &Request, at: u64, stretch: &[u8]) -> Result<Vec<Cost>, PolicyError> {
        if route(req) != Route::Generation {
            return Ok(Vec::new());
        }
        // Chat and completions chunks name no event; of the Responses API's events only the
        // deltas are new text (`.done` events and `response.completed` repeat it whole).
        let output = sse::events(stretch)
            .filter(|e| e.event.is_none_or(|name| name.ends_with(".delta")))
            .map(|e| sse::produced_tokens(&e.data, &STREAMED_TEXT))
            .sum();
        let mut costs = vec![Cost {
            dimension: Dimension::OutputTokens,
            amount: output,
        }];
        if at == 0
            && let Some(prompt) = prompt(req)
        {
            costs.push(Cost {
                dimension: Dimension::InputTokens,
                amount: prompt,
            });
        }
        Ok(costs)
    }

    fn priority(req: &Request) -> Result<Priority, PolicyError> {
        let mut p = default_priority(req);
        if p.tenant.is_none() {
            p.tenant = req.digest.string("user").filter(|u| !u.is_empty());
        }
        if req.digest.string("service_tier").as_deref() == Some("flex") {
            p.class = PriorityClass::Background;
        }
        Ok(p)
    }

    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let mut costs = vec![one_request()];
        if let Some(tokens) = reserved(req, Unbounded::Plan) {
            costs.push(Cost {
                dimension: Dimension::Tokens,
                amount: tokens,
            });
        }
        Ok(costs)
    }

    fn scopes(req: &Request) -> Result<Vec<String>, PolicyError> {
        Ok(model_scope(req).into_iter().collect())
    }
}

/// What a generation that names no maximum output is counted for in [`reserved`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unbounded {
    /// When it is planned: the configured default, else the plugin's.
    Plan,
    /// By OpenAI when it admitted it: nothing (what it writes is reported by its usage).
    Admitted,
}

/// What a route counts against the tokens-per-minute limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// A generation: its prompt, and up to its maximum output.
    Generation,
    /// An embedding: its input; it writes no tokens.
    Embedding,
    /// Files, batches, vector stores, models...: no tokens.
    NoTokens,
}

fn route(req: &Request) -> Route {
    let path = req.url.split(['?', '#']).next().unwrap_or("");
    if ["/chat/completions", "/completions", "/responses"]
        .iter()
        .any(|r| path.ends_with(r))
    {
        Route::Generation
    } else if path.ends_with("/embeddings") {
        Route::Embedding
    } else {
        Route::NoTokens
    }
}

/// Tokens OpenAI counts for one media part of a request to `model`.
fn media_tokens(model: &str, part: &MediaPart) -> u64 {
    match part.kind {
        MediaKind::Image => openai_image_tokens(model, image_size(part), part.detail.as_deref()),
        _ => document_or_audio_tokens(part, openai_image_tokens(model, None, None))
            .unwrap_or_else(|| part.bytes.unwrap_or(0).div_ceil(4)),
    }
}

/// The tokens a request is counted for when it is admitted: the prompt (text and media) and
/// the whole maximum output of a generation; `None` for a route that counts no tokens, or a
/// body that is not JSON. A generation that names no maximum is planned at the default the
/// host's configuration sets for its model, else [`DEFAULT_MAX_OUTPUT_TOKENS`] (`Plan`); it
/// was counted at admission for its prompt alone (`Admitted`).
fn reserved(req: &Request, unbounded: Unbounded) -> Option<u64> {
    let route = route(req);
    if route == Route::NoTokens {
        return None;
    }
    let prompt = prompt(req)?;
    let out = match route {
        Route::Generation => match unbounded {
            Unbounded::Plan => max_output(req, &MAX_OUTPUT_FIELDS, DEFAULT_MAX_OUTPUT_TOKENS),
            Unbounded::Admitted => first_number(req, &MAX_OUTPUT_FIELDS).unwrap_or(0),
        },
        Route::Embedding | Route::NoTokens => 0,
    };
    Some(prompt.saturating_add(out))
}

/// The prompt's tokens: its text, and its media as OpenAI counts them for its model.
fn prompt(req: &Request) -> Option<u64> {
    let model = model(req).unwrap_or_default();
    prompt_tokens(req, &["model", "user", "service_tier"], |part| {
        media_tokens(&model, part)
    })
}

/// The keys of a stream's events whose strings are text the model wrote: chat deltas'
/// `content`, `refusal` and tool calls' `arguments`, reasoning, the legacy completions'
/// `text`, and the Responses API's `delta`s.
const STREAMED_TEXT: [&str; 6] = [
    "content",
    "refusal",
    "arguments",
    "reasoning_content",
    "text",
    "delta",
];

/// The usage an answer reports, as OpenAI counts it against its limits: its `tokens` never
/// below what OpenAI counted the request for when it admitted it — its prompt and the
/// maximum it named. A generation that named none was counted for its prompt at admission
/// (the rate-limits guide: the greater of `max_tokens` and the prompt's estimate), so its
/// planned default gives way to what it reports: its prompt and what it wrote.
fn counted(req: &Request, resp: &Response, part: ResponsePart) -> Vec<Cost> {
    let mut costs = usage::usage(resp, part);
    let at_admission = reserved(req, Unbounded::Admitted).unwrap_or(0);
    for c in &mut costs {
        if c.dimension == Dimension::Tokens {
            c.amount = c.amount.max(at_admission);
        }
    }
    costs
}

sluice_plugin_sdk::export_plugin!(OpenAi);

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::test::{data_url, png, request, response};

    fn req(body: &str) -> Request {
        request(
            "POST",
            "https://api.openai.com/v1/chat/completions",
            &[("content-type", "application/json")],
            body,
        )
    }

    #[test]
    fn a_short_answer_is_still_counted_at_its_max_tokens() {
        let r = req(
            r#"{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"12345678"}]}"#,
        );
        let resp = response(
            200,
            &[],
            r#"{"usage":{"prompt_tokens":3,"completion_tokens":10,"total_tokens":13}}"#,
        );
        let c = OpenAi::usage(&r, &resp, ResponsePart::Complete).unwrap();
        let amount = |d: Dimension| c.iter().find(|x| x.dimension == d).map(|x| x.amount);
        assert_eq!(
            amount(Dimension::Tokens),
            Some(3 + 100),
            "counted at admission"
        );
        assert_eq!(amount(Dimension::InputTokens), Some(3));
        assert_eq!(amount(Dimension::OutputTokens), Some(10));
    }

    #[test]
    fn a_generation_without_a_maximum_is_counted_for_what_it_used() {
        let r = req(r#"{"model":"gpt-4o","messages":[{"role":"user","content":"12345678"}]}"#);
        let planned = OpenAi::estimate_cost(&r).unwrap();
        assert_eq!(planned[1].amount, 3 + DEFAULT_MAX_OUTPUT_TOKENS);
        let resp = response(
            200,
            &[],
            r#"{"usage":{"prompt_tokens":3,"completion_tokens":10,"total_tokens":13}}"#,
        );
        let c = OpenAi::usage(&r, &resp, ResponsePart::Complete).unwrap();
        let tokens = c.iter().find(|x| x.dimension == Dimension::Tokens);
        assert_eq!(
            tokens.map(|x| x.amount),
            Some(13),
            "OpenAI counted its prompt alone at admission; the answer says what it used"
        );
    }

    #[test]
    fn a_generation_without_a_maximum_is_planned_at_the_configured_default() {
        let mut r = req(r#"{"model":"o3","messages":[{"role":"user","content":"12345678"}]}"#);
        r.digest.set_default_max_output(Some(30_000));
        let planned = OpenAi::estimate_cost(&r).unwrap();
        assert_eq!(planned[1].amount, 3 + 30_000);
        let mut bounded = req(r#"{"model":"o3","max_tokens":7,"messages":[]}"#);
        bounded.digest.set_default_max_output(Some(30_000));
        assert_eq!(OpenAi::estimate_cost(&bounded).unwrap()[1].amount, 7);
    }

    #[test]
    fn cost_is_prompt_plus_max_tokens() {
        let r = req(
            r#"{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"12345678"}]}"#,
        );
        let c = OpenAi::estimate_cost(&r).unwrap();
        assert_eq!(c[0].amount, 1);
        assert_eq!(c[1].dimension, Dimension::Tokens);
        // "user" and "12345678": 12 characters, 3 tokens; the model's name is not prompt.
        assert_eq!(c[1].amount, 3 + 100);
    }

    #[test]
    fn an_image_costs_its_tiles_not_its_base64() {
        let body = serde_json::json!({
            "model": "gpt-4o",
            "max_tokens": 50,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {
                    "url": data_url("image/png", &png(1024, 1024, 200_000)),
                    "detail": "high"}},
            ]}],
        });
        let c = OpenAi::estimate_cost(&req(&body.to_string())).unwrap();
        // 765 for the image (the guide's 1024 × 1024 example), a few for the text, 50 out.
        let tokens = c[1].amount;
        assert!((765 + 50..765 + 50 + 20).contains(&tokens), "{tokens}");
    }

    #[test]
    fn routes_that_generate_nothing_cost_no_tokens() {
        for path in ["/v1/files", "/v1/batches", "/v1/vector_stores"] {
            let r = request(
                "POST",
                &format!("https://api.openai.com{path}"),
                &[("content-type", "application/json")],
                r#"{"purpose":"assistants","name":"report"}"#,
            );
            assert_eq!(
                OpenAi::estimate_cost(&r).unwrap(),
                vec![one_request()],
                "{path}"
            );
        }
        let embed = request(
            "POST",
            "https://api.openai.com/v1/embeddings",
            &[],
            r#"{"model":"text-embedding-3-small","input":"12345678"}"#,
        );
        assert_eq!(
            OpenAi::estimate_cost(&embed).unwrap()[1].amount,
            2,
            "input only"
        );
    }

    #[test]
    fn a_body_longer_than_its_prefix_is_planned_from_its_digest() {
        // The model and the maximum come after 20 MB of messages, as the official SDK
        // writes them.
        let text = "a".repeat(20 << 20);
        let body = format!(
            r#"{{"messages":[{{"role":"user","content":"{text}"}}],"model":"gpt-4o","max_tokens":7}}"#
        );
        let r = req(&body);
        assert!(r.body.len() < body.len(), "the plugin sees a prefix");
        let plan = OpenAi::plan_request(&r).unwrap();
        assert_eq!(plan.scopes, vec!["model:gpt-4o".to_owned()]);
        assert_eq!(plan.cost[1].amount, (20 << 20) / 4 + 1 + 7);
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
        let p = OpenAi::plan_request(&req(r#"{"service_tier":"flex","user":"t-1"}"#)).unwrap();
        assert_eq!(p.class, PriorityClass::Background);
        assert_eq!(p.tenant.as_deref(), Some("t-1"));
    }

    #[test]
    fn a_request_counts_in_the_scope_of_its_model_as_its_observations_do() {
        let r = req(r#"{"model":"gpt-4o","max_tokens":10}"#);
        let plan = OpenAi::plan_request(&r).unwrap();
        assert_eq!(plan.scopes, vec!["model:gpt-4o".to_owned()]);
        let resp = response(
            200,
            &[
                ("x-ratelimit-limit-requests", "500"),
                ("x-ratelimit-remaining-requests", "499"),
            ],
            "",
        );
        let reading = OpenAi::read_response(&r, &resp.into(), ResponsePart::Complete).unwrap();
        assert_eq!(
            reading.observations[0].scope.as_deref(),
            Some(plan.scopes[0].as_str())
        );
        assert!(
            OpenAi::plan_request(&req("{}")).unwrap().scopes.is_empty(),
            "no model, no scope"
        );
    }

    #[test]
    fn the_reading_of_a_stream_s_end_has_usage_and_no_header_observations() {
        let r = req(r#"{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}"#);
        let resp = response(
            200,
            &[
                ("x-ratelimit-limit-requests", "500"),
                ("x-ratelimit-remaining-requests", "499"),
            ],
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\ndata: [DONE]\n\n",
        );
        let outcome = resp.into();
        let end = OpenAi::read_response(&r, &outcome, ResponsePart::StreamEnd).unwrap();
        assert!(end.observations.is_empty());
        assert_eq!(end.usage.len(), 3);
        let start = OpenAi::read_response(&r, &outcome, ResponsePart::StreamStart).unwrap();
        assert_eq!(start.observations.len(), 1);
        assert!(start.usage.is_empty());
    }
}
