use sluice_plugin_sdk::eventstream::{event, exception};
use sluice_plugin_sdk::test::{base64, png, request, response};
use sluice_plugin_sdk::{LimitedScope, Verdict};

use super::*;

const RUNTIME: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

fn url(model: &str, operation: &str) -> String {
    format!("{RUNTIME}/model/{model}/{operation}")
}

fn cost(plan: &[Cost], d: Dimension) -> Option<u64> {
    plan.iter().find(|c| c.dimension == d).map(|c| c.amount)
}

#[test]
fn a_converse_request_costs_its_prompt_and_its_maximum_under_its_model() {
    let body = r#"{"messages":[{"role":"user","content":[{"text":"abcdefgh"}]}],
        "system":[{"text":"abcd"}],"inferenceConfig":{"maxTokens":300,"temperature":0.5}}"#;
    let req = request(
        "POST",
        &url("anthropic.claude-3-5-sonnet-20240620-v1%3A0", "converse"),
        &[],
        body,
    );
    let plan = Bedrock::plan_request(&req).unwrap();
    // "user", "abcdefgh", "abcd": 16 characters, 4 tokens.
    assert_eq!(cost(&plan.cost, Dimension::InputTokens), Some(4));
    assert_eq!(cost(&plan.cost, Dimension::OutputTokens), Some(300));
    assert_eq!(cost(&plan.cost, Dimension::Tokens), Some(304));
    assert_eq!(
        plan.scopes,
        vec!["model:anthropic.claude-3-5-sonnet-20240620-v1:0".to_owned()]
    );
    let bare = request(
        "POST",
        &url("amazon.nova-lite-v1%3A0", "converse-stream"),
        &[],
        r#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#,
    );
    let plan = Bedrock::plan_request(&bare).unwrap();
    assert_eq!(
        cost(&plan.cost, Dimension::OutputTokens),
        Some(DEFAULT_MAX_OUTPUT)
    );
}

#[test]
fn an_image_costs_its_pixels_and_a_video_its_frames_never_their_base64() {
    let body = serde_json::json!({"messages": [{"role": "user", "content": [
        {"image": {"format": "png", "source": {"bytes": base64(&png(1092, 1092, 300_000))}}},
        {"text": "what is this?"},
    ]}]});
    let req = request(
        "POST",
        &url("anthropic.claude-3-5-sonnet-20240620-v1%3A0", "converse"),
        &[],
        body.to_string(),
    );
    let input = cost(
        &Bedrock::plan_request(&req).unwrap().cost,
        Dimension::InputTokens,
    )
    .unwrap();
    // 1 590 for the image (Anthropic's 1092 × 1092 example), a few for the text.
    assert!((1_590..1_590 + 10).contains(&input), "{input}");

    let video = serde_json::json!({"messages": [{"role": "user", "content": [
        {"video": {"format": "mp4", "source": {"bytes": base64(&[0; 640_000])}}},
    ]}]});
    let req = request(
        "POST",
        &url("amazon.nova-pro-v1%3A0", "converse"),
        &[],
        video.to_string(),
    );
    let input = cost(
        &Bedrock::plan_request(&req).unwrap().cost,
        Dimension::InputTokens,
    )
    .unwrap();
    // 640 000 bytes: at most ten seconds, ten frames of 672 × 672 (603 tokens each).
    assert_eq!(input, 10 * 603 + 1);
}

#[test]
fn an_invocation_costs_its_model_format_s_maximum() {
    for (model, body, output) in [
        (
            "anthropic.claude-3-haiku-20240307-v1%3A0",
            r#"{"anthropic_version":"bedrock-2023-05-31","max_tokens":200,"messages":[{"role":"user","content":"abcd"}]}"#,
            200,
        ),
        (
            "amazon.titan-text-express-v1",
            r#"{"inputText":"abcd","textGenerationConfig":{"maxTokenCount":150}}"#,
            150,
        ),
        (
            "meta.llama3-8b-instruct-v1%3A0",
            r#"{"prompt":"abcd","max_gen_len":128}"#,
            128,
        ),
        (
            "amazon.nova-micro-v1%3A0",
            r#"{"messages":[{"role":"user","content":[{"text":"abcd"}]}],"inferenceConfig":{"max_new_tokens":64}}"#,
            64,
        ),
        (
            "mistral.mistral-7b-instruct-v0%3A2",
            r#"{"prompt":"abcd"}"#,
            DEFAULT_MAX_OUTPUT,
        ),
    ] {
        let req = request("POST", &url(model, "invoke"), &[], body);
        let plan = Bedrock::plan_request(&req).unwrap();
        assert_eq!(
            cost(&plan.cost, Dimension::OutputTokens),
            Some(output),
            "{model}"
        );
        assert!(
            cost(&plan.cost, Dimension::InputTokens).unwrap() <= 3,
            "{model}: the version is not prompt"
        );
    }
}

#[test]
fn embeddings_count_their_input_and_other_routes_only_the_request() {
    let req = request(
        "POST",
        &url("amazon.titan-embed-text-v2%3A0", "invoke"),
        &[],
        r#"{"inputText":"abcdefgh"}"#,
    );
    let plan = Bedrock::plan_request(&req).unwrap();
    assert_eq!(cost(&plan.cost, Dimension::InputTokens), Some(2));
    assert_eq!(cost(&plan.cost, Dimension::OutputTokens), None);
    for target in [
        url("anthropic.claude-3-5-haiku-20241022-v1%3A0", "count-tokens"),
        format!("{RUNTIME}/guardrail/gr1/version/1/apply"),
        format!("{RUNTIME}/async-invoke"),
        url("stability.sd3-large-v1%3A0", "invoke"),
    ] {
        let req = request("POST", &target, &[], r#"{"prompt":"abcdefgh"}"#);
        assert_eq!(
            Bedrock::plan_request(&req).unwrap().cost,
            vec![one_request()],
            "{target}"
        );
    }
}

#[test]
fn usage_comes_from_the_body_or_the_headers_as_the_operation_reports_it() {
    let converse = request("POST", &url("m", "converse"), &[], "{}");
    let resp = response(
        200,
        &[("content-type", "application/json")],
        r#"{"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"usage":{"inputTokens":9,"outputTokens":2,"totalTokens":11}}"#,
    );
    let reading = Bedrock::read_response(&converse, &resp.into(), ResponsePart::Complete).unwrap();
    assert_eq!(cost(&reading.usage, Dimension::InputTokens), Some(9));
    assert_eq!(cost(&reading.usage, Dimension::OutputTokens), Some(2));

    let invoke = request("POST", &url("m", "invoke"), &[], "{}");
    let resp = response(
        200,
        &[
            ("x-amzn-bedrock-input-token-count", "30"),
            ("x-amzn-bedrock-output-token-count", "12"),
        ],
        r#"{"usage":{"input_tokens":1,"output_tokens":1}}"#,
    );
    let reading = Bedrock::read_response(&invoke, &resp.into(), ResponsePart::Complete).unwrap();
    assert_eq!(cost(&reading.usage, Dimension::Tokens), Some(42));
}

#[test]
fn a_stream_that_breaks_off_with_an_exception_is_read_as_that_exception() {
    let req = request(
        "POST",
        &url(
            "anthropic.claude-3-5-sonnet-20240620-v1%3A0",
            "converse-stream",
        ),
        &[],
        "{}",
    );
    let body = [
        event("messageStart", r#"{"role":"assistant"}"#),
        event(
            "contentBlockDelta",
            r#"{"contentBlockIndex":0,"delta":{"text":"Hel"}}"#,
        ),
        exception(
            "throttlingException",
            r#"{"message":"Too many tokens, please wait before trying again."}"#,
        ),
    ]
    .concat();
    let resp = response(
        200,
        &[("content-type", "application/vnd.amazon.eventstream")],
        &body,
    );
    let start =
        Bedrock::read_response(&req, &resp.clone().into(), ResponsePart::StreamStart).unwrap();
    assert_eq!(start.classification.verdict, Verdict::Success);
    let end = Bedrock::read_response(&req, &resp.into(), ResponsePart::StreamEnd).unwrap();
    assert_eq!(end.classification.verdict, Verdict::RateLimited);
    assert_eq!(
        end.classification.error_code.as_deref(),
        Some("throttling_exception")
    );
    assert_eq!(
        end.classification.scope,
        Some(LimitedScope::Named(
            "model:anthropic.claude-3-5-sonnet-20240620-v1:0".into()
        ))
    );
    assert!(end.usage.is_empty());
    let counted = Bedrock::count_stream(&req, 0, &body).unwrap();
    assert_eq!(cost(&counted, Dimension::OutputTokens), Some(1));
}

#[test]
fn the_description_names_the_reads_and_aws_s_error_shape() {
    let d = Bedrock::describe();
    assert_eq!(d.error_shape, Some(ErrorShape::Aws));
    assert!(
        d.read_routes
            .contains(&"POST /model/*/converse-stream".to_owned())
    );
    assert!(!d.read_routes.iter().any(|r| r.contains("async-invoke")));
}
