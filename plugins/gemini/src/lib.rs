//! The Gemini plugin: the Gemini API (`generativelanguage.googleapis.com`) and Vertex AI's
//! Gemini models (`aiplatform.googleapis.com`).
//!
//! - Scopes: a request is charged under the model its path names (`model:<name>`, see
//!   `route.rs`): Google counts each model's requests a minute, tokens a minute and requests
//!   a day apart.
//! - Quotas: Gemini sends no quota headers. A 429 `RESOURCE_EXHAUSTED` names the spent quota
//!   in its body, and that quota's id decides how long its scope is held: a day's quota
//!   until midnight Pacific time, a minute's for the delay asked (see `errors.rs`). The
//!   quotas themselves are configured (`[providers.gemini.limits]`), or learned from the
//!   sizes the 429s state.
//! - Errors: `google.rpc.Status` bodies; `UNAVAILABLE` is the provider overloaded,
//!   `INTERNAL` and `DEADLINE_EXCEEDED` transient. The sidecar answers in the same shape
//!   (`error-shape: google`), so a Google SDK reads its refusals as Google's own.
//! - Cost (see `docs/provider-counting.md`): one request; for a generation, input tokens =
//!   the prompt read from the body's digest (its text at four characters a token; each
//!   image, document page, audio or video part as Gemini counts it, never its base64) and
//!   output tokens = `generationConfig.maxOutputTokens` for each of its `candidateCount`
//!   answers; embeddings count their input only, token counting nothing more than a request.
//! - Usage: `usageMetadata`, from the answer or the last of a stream's running totals (see
//!   `usage.rs`), corrects the charge. A stream that ends without its usage is charged the
//!   text its stretches carried.
//! - Credentials: the `x-goog-api-key` header (or a Vertex bearer token in `authorization`);
//!   a key sent as `?key=` is redacted by the host before this plugin sees the URL.

mod errors;
mod route;
mod usage;

use route::Method;
use sluice_plugin_sdk::cost::{image_size, max_output, prompt_tokens};
use sluice_plugin_sdk::media::{AUDIO_BYTES_PER_SECOND, document_pages};
use sluice_plugin_sdk::{
    Classification, Cost, Description, Dimension, ErrorShape, MediaKind, MediaPart, Observation,
    Outcome, Plugin, PolicyError, Request, Response, ResponsePart, amount, one_request,
};

/// The Gemini policy.
#[derive(Debug)]
pub struct Gemini;

/// The output a generation that names no `maxOutputTokens` is charged for, unless the
/// host's configuration sets one for its model: Gemini 2.0 Flash's own maximum.
pub const DEFAULT_MAX_OUTPUT: u64 = 8_192;

/// The body fields that bound a generation's output.
const MAX_OUTPUT_FIELDS: [&str; 1] = ["generationConfig.maxOutputTokens"];

/// Tokens of an image no larger than 384 pixels a side, and of each 768 × 768 tile of a
/// larger one.
pub const IMAGE_TILE_TOKENS: u64 = 258;
/// Tokens of an image whose size is not known (given by URL, or a header not read): four
/// tiles, an image up to 1536 × 1536.
pub const UNKNOWN_IMAGE_TOKENS: u64 = 4 * IMAGE_TILE_TOKENS;
/// Tokens a second of audio.
pub const AUDIO_TOKENS_PER_SECOND: u64 = 32;
/// Tokens a second of video (its frames and its sound).
pub const VIDEO_TOKENS_PER_SECOND: u64 = 263;
/// The fewest bytes a second of video is taken to be (512 kbit/s): a video is counted as
/// at least as long as that, so a small, long video is not underestimated by much.
pub const VIDEO_BYTES_PER_SECOND: u64 = 64_000;

impl Plugin for Gemini {
    fn describe() -> Description {
        Description {
            name: "gemini".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "Google Gemini".into(),
            hosts: vec![
                "generativelanguage.googleapis.com".into(),
                "aiplatform.googleapis.com".into(),
                "*-aiplatform.googleapis.com".into(),
            ],
            routes: vec![
                "POST /v1beta/*:generateContent".into(),
                "POST /v1beta/*:streamGenerateContent".into(),
                "POST /v1/*:generateContent".into(),
                "POST /v1/*:streamGenerateContent".into(),
                "/v1beta/*".into(),
                "/v1/*".into(),
            ],
            read_routes: [
                "generateContent",
                "streamGenerateContent",
                "countTokens",
                "embedContent",
                "batchEmbedContents",
            ]
            .iter()
            .flat_map(|m| ["v1beta", "v1"].map(|v| format!("POST /{v}/*:{m}")))
            .collect(),
            error_shape: Some(ErrorShape::Google),
            refill: None,
        }
    }

    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(errors::classify(req, outcome))
    }

    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        Ok(errors::observations(req, resp))
    }

    fn usage(req: &Request, resp: &Response, part: ResponsePart) -> Result<Vec<Cost>, PolicyError> {
        if !(200..300).contains(&resp.status) || part == ResponsePart::StreamStart {
            return Ok(Vec::new());
        }
        if !route::of(&req.url).method.generates() {
            return Ok(Vec::new());
        }
        Ok(usage::reported(&resp.body))
    }

    /// A generation's stream: the output tokens of its text, and its input in the first
    /// stretch.
    fn count_stream(req: &Request, at: u64, stretch: &[u8]) -> Result<Vec<Cost>, PolicyError> {
        if !route::of(&req.url).method.generates() {
            return Ok(Vec::new());
        }
        Ok(usage::of_stretch(stretch, at, prompt(req)))
    }

    fn scopes(req: &Request) -> Result<Vec<String>, PolicyError> {
        Ok(route::scope(&route::of(&req.url)).into_iter().collect())
    }

    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let mut costs = vec![one_request()];
        let method = route::of(&req.url).method;
        let Some(input) = prompt(req).filter(|_| method.generates() || method == Method::Embed)
        else {
            return Ok(costs);
        };
        costs.push(amount(Dimension::InputTokens, input));
        if method == Method::Embed {
            costs.push(amount(Dimension::Tokens, input));
            return Ok(costs);
        }
        let answers = req
            .digest
            .number("generationConfig.candidateCount")
            .unwrap_or(1)
            .max(1);
        let output =
            max_output(req, &MAX_OUTPUT_FIELDS, DEFAULT_MAX_OUTPUT).saturating_mul(answers);
        costs.push(amount(Dimension::OutputTokens, output));
        costs.push(amount(Dimension::Tokens, input.saturating_add(output)));
        Ok(costs)
    }
}

/// The prompt's tokens, from the body's digest.
fn prompt(req: &Request) -> Option<u64> {
    prompt_tokens(req, &["model"], media_tokens)
}

/// Tokens Gemini counts for one media part: an image by its 768-pixel tiles, a PDF's pages
/// as images, a text file at four bytes a token, audio and video by their length.
fn media_tokens(part: &MediaPart) -> u64 {
    let media_type = part.media_type.as_deref().unwrap_or("");
    match part.kind {
        MediaKind::Image => image_tokens(image_size(part)),
        MediaKind::Document if media_type.starts_with("text/") => {
            part.bytes.unwrap_or(0).div_ceil(4)
        }
        MediaKind::Document => {
            document_pages(part.pages, part.bytes).saturating_mul(IMAGE_TILE_TOKENS)
        }
        MediaKind::Audio => {
            let seconds = part
                .bytes
                .map_or(60, |b| b.div_ceil(AUDIO_BYTES_PER_SECOND));
            seconds.max(1).saturating_mul(AUDIO_TOKENS_PER_SECOND)
        }
        MediaKind::Other if media_type.starts_with("video/") => {
            let seconds = part
                .bytes
                .map_or(60, |b| b.div_ceil(VIDEO_BYTES_PER_SECOND));
            seconds.max(1).saturating_mul(VIDEO_TOKENS_PER_SECOND)
        }
        MediaKind::Other => part.bytes.unwrap_or(0).div_ceil(4),
    }
}

/// Tokens of an image of `size`: 258 when neither side is over 384 pixels, else 258 for
/// each 768 × 768 tile it takes.
pub fn image_tokens(size: Option<(u32, u32)>) -> u64 {
    let Some((w, h)) = size else {
        return UNKNOWN_IMAGE_TOKENS;
    };
    if w <= 384 && h <= 384 {
        return IMAGE_TILE_TOKENS;
    }
    let tiles = u64::from(w.div_ceil(768)) * u64::from(h.div_ceil(768));
    tiles.max(1).saturating_mul(IMAGE_TILE_TOKENS)
}

sluice_plugin_sdk::export_plugin!(Gemini);

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::test::{base64, png, request};

    const GENERATE: &str =
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent";

    fn cost(plan: &[Cost], d: Dimension) -> Option<u64> {
        plan.iter().find(|c| c.dimension == d).map(|c| c.amount)
    }

    #[test]
    fn a_generation_costs_its_prompt_and_its_maximum_for_each_candidate() {
        let body = r#"{"contents":[{"role":"user","parts":[{"text":"abcdefgh"}]}],
            "generationConfig":{"maxOutputTokens":100,"candidateCount":2}}"#;
        let plan = Gemini::plan_request(&request("POST", GENERATE, &[], body)).unwrap();
        // "user", "abcdefgh": 12 characters, 3 tokens.
        assert_eq!(cost(&plan.cost, Dimension::InputTokens), Some(3));
        assert_eq!(cost(&plan.cost, Dimension::OutputTokens), Some(200));
        assert_eq!(cost(&plan.cost, Dimension::Tokens), Some(203));
        assert_eq!(plan.scopes, vec!["model:gemini-2.5-flash".to_owned()]);
    }

    #[test]
    fn an_inline_image_costs_its_tiles_not_its_base64() {
        let body = serde_json::json!({"contents": [{"parts": [
            {"inlineData": {"mimeType": "image/png", "data": base64(&png(1024, 1024, 400_000))}},
            {"text": "what is this?"},
        ]}]});
        let plan = Gemini::plan_request(&request("POST", GENERATE, &[], body.to_string())).unwrap();
        let input = cost(&plan.cost, Dimension::InputTokens).unwrap();
        // Four tiles of 258, and a few for the text.
        assert!((4 * 258..4 * 258 + 10).contains(&input), "{input}");
        assert_eq!(image_tokens(Some((300, 384))), 258);
        assert_eq!(image_tokens(Some((769, 100))), 2 * 258);
    }

    #[test]
    fn other_methods_count_what_they_use() {
        let embed = "https://generativelanguage.googleapis.com/v1beta/models/text-embedding-004:embedContent";
        let body = r#"{"content":{"parts":[{"text":"abcdefgh"}]}}"#;
        let plan = Gemini::plan_request(&request("POST", embed, &[], body)).unwrap();
        assert_eq!(cost(&plan.cost, Dimension::InputTokens), Some(2));
        assert_eq!(cost(&plan.cost, Dimension::OutputTokens), None);
        let count = GENERATE.replace("generateContent", "countTokens");
        let plan = Gemini::plan_request(&request("POST", &count, &[], body)).unwrap();
        assert_eq!(plan.cost, vec![one_request()]);
    }
}
