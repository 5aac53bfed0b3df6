//! The Amazon Bedrock plugin: the runtime API (`bedrock-runtime.<region>.amazonaws.com`,
//! and `bedrock-runtime-fips.<region>.amazonaws.com`).
//!
//! - Credentials: requests are signed with AWS Signature Version 4 by the host, which signs
//!   each attempt as it sends it (a signature is good for five minutes, and a retry may come
//!   later): this plugin never sees a key or a signature, and reads nothing of either.
//! - Scopes: a request is charged and held under the model its path names (`model:<id>`,
//!   decoded: `anthropic.claude-3-5-sonnet-20240620-v1:0`, an inference profile, an ARN; see
//!   `route.rs`). Bedrock keeps each model's requests a minute, tokens a minute and tokens a
//!   day apart, per Region: one provider serves one Region.
//! - Quotas: Bedrock sends no quota headers. The quotas are configured
//!   (`[providers.bedrock.models."<id>"]`); a `ThrottlingException` holds the model's scope
//!   for a short wait (no `Retry-After` is sent), a spent day's tokens or a
//!   `ServiceQuotaExceededException` (answered 400 or 429) hold it as exhausted (see
//!   `errors.rs`).
//! - Errors: `{"message"}` with the type in `x-amzn-ErrorType`; the type decides, not the
//!   status. The sidecar answers in the same shape (`error-shape: aws`), so an AWS SDK reads
//!   its refusals as Bedrock's own. A stream that sends an `exception` message after its
//!   200 makes the reading of its end say so.
//! - Cost (see `docs/provider-counting.md`): one request; for a generation, input tokens =
//!   the prompt read from the body's digest (its text at four characters a token, each image
//!   by its pixels and each document by its pages as Anthropic counts them, a video by its
//!   frames — never their base64) and output tokens = the maximum the body names
//!   (`inferenceConfig.maxTokens` for Converse; `max_tokens`, `max_gen_len`,
//!   `textGenerationConfig.maxTokenCount`, `inferenceConfig.max_new_tokens`... in the models'
//!   own formats), else [`DEFAULT_MAX_OUTPUT`]; an embedding or a rerank counts its input
//!   only; an image or video generation, token counting, guardrails and asynchronous jobs
//!   nothing but the request.
//! - Usage: Converse's `usage`, the `metadata` event of its stream, `InvokeModel`'s token
//!   headers, the invocation metrics of its stream's last chunk (see `usage.rs`). A stream
//!   that ends without its usage is charged the text its stretches carried.

mod errors;
mod route;
mod usage;

pub use errors::{MODEL_NOT_READY_DELAY_MS, THROTTLED_DELAY_MS};
use route::Operation;
use sluice_plugin_sdk::cost::{anthropic_media_tokens, max_output, prompt_tokens};
use sluice_plugin_sdk::media::anthropic_image_tokens;
use sluice_plugin_sdk::{
    Classification, Cost, Description, Dimension, ErrorShape, MediaKind, MediaPart, Outcome,
    Plugin, PolicyError, Reading, Request, Response, ResponsePart, amount, default_read_response,
    headers, one_request,
};

/// The Bedrock policy.
#[derive(Debug)]
pub struct Bedrock;

/// The output a generation that names no maximum is charged for, unless the host's
/// configuration sets one (`[providers.bedrock.generations."*"] default_max_output`).
/// Bedrock itself reserves the model's own maximum for such a request (64 000 tokens for
/// Claude Sonnet 4): set the configuration to match when callers leave the maximum out.
pub const DEFAULT_MAX_OUTPUT: u64 = 4_096;

/// The fields that bound a Converse generation's output.
const CONVERSE_MAX_OUTPUT: [&str; 1] = ["inferenceConfig.maxTokens"];

/// The fields that bound an invocation's output, in the models' own formats: Anthropic's,
/// Mistral's and Cohere's `max_tokens`, Llama's `max_gen_len`, Titan's
/// `textGenerationConfig.maxTokenCount`, Nova's `inferenceConfig.max_new_tokens` (or
/// `maxTokens`), Claude text completions' `max_tokens_to_sample`.
const INVOKE_MAX_OUTPUT: [&str; 6] = [
    "max_tokens",
    "max_gen_len",
    "textGenerationConfig.maxTokenCount",
    "inferenceConfig.max_new_tokens",
    "inferenceConfig.maxTokens",
    "max_tokens_to_sample",
];

/// The body's top-level strings that name, not prompt: Anthropic's `anthropic_version`.
const NOT_PROMPT: [&str; 1] = ["anthropic_version"];

/// The side of the square a video's frames are scaled to (Amazon Nova: 672 × 672).
const VIDEO_FRAME_SIDE: u32 = 672;
/// The most frames a video is sampled to (Amazon Nova: one a second, at most 960).
const VIDEO_MAX_FRAMES: u64 = 960;
/// The fewest bytes a second of video is taken to be (512 kbit/s), so a video's length, and
/// its frames at one a second, are overestimated rather than under.
const VIDEO_BYTES_PER_SECOND: u64 = 64_000;

impl Plugin for Bedrock {
    fn describe() -> Description {
        let model_routes = [
            "converse",
            "converse-stream",
            "invoke",
            "invoke-with-response-stream",
            "count-tokens",
        ];
        Description {
            name: "bedrock".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "Amazon Bedrock".into(),
            // The runtime's names hold the Region in the middle, and a pattern takes `*`
            // only as a prefix: the routes tell the runtime apart.
            hosts: vec!["*.amazonaws.com".into()],
            routes: model_routes
                .iter()
                .map(|r| format!("POST /model/{{modelId}}/{r}"))
                .chain([
                    "POST /guardrail/{guardrailIdentifier}/version/{guardrailVersion}/apply".into(),
                    "POST /async-invoke".into(),
                    "GET /async-invoke".into(),
                    "GET /async-invoke/{invocationArn}".into(),
                ])
                .collect(),
            // Generations, embeddings and counts change nothing at Bedrock; an asynchronous
            // invocation (`POST /async-invoke`) starts a job that writes to S3.
            read_routes: model_routes
                .iter()
                .map(|r| format!("POST /model/*/{r}"))
                .collect(),
            error_shape: Some(ErrorShape::Aws),
            refill: None,
        }
    }

    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(errors::classify(req, outcome))
    }

    fn usage(req: &Request, resp: &Response, part: ResponsePart) -> Result<Vec<Cost>, PolicyError> {
        if !(200..300).contains(&resp.status) || part == ResponsePart::StreamStart {
            return Ok(Vec::new());
        }
        let operation = route::of(&req.url).operation;
        Ok(match operation {
            Operation::Converse => usage::of_converse(&resp.body),
            Operation::Invoke => usage::of_headers(&headers(&resp.headers)),
            Operation::ConverseStream | Operation::InvokeStream => {
                usage::of_stream(operation, &resp.body).usage
            }
            _ => Vec::new(),
        })
    }

    /// A stream's text as it passes: the output tokens of its deltas, and its input in the
    /// first stretch.
    fn count_stream(req: &Request, at: u64, stretch: &[u8]) -> Result<Vec<Cost>, PolicyError> {
        let operation = route::of(&req.url).operation;
        if !operation.streams() {
            return Ok(Vec::new());
        }
        Ok(usage::of_stretch(operation, stretch, at, prompt(req)))
    }

    /// The default composition, but a stream's end is read in one pass for its usage and for
    /// an `exception` message that overrides its success status.
    fn read_response(
        req: &Request,
        outcome: &Outcome,
        part: ResponsePart,
    ) -> Result<Reading, PolicyError> {
        let operation = route::of(&req.url).operation;
        match outcome {
            Outcome::Response(resp)
                if operation.streams()
                    && part != ResponsePart::StreamStart
                    && (200..300).contains(&resp.status) =>
            {
                let end = usage::of_stream(operation, &resp.body);
                let classification = match end.exception {
                    Some((kind, message)) => errors::stream_exception(req, &kind, message),
                    None => errors::classify(req, outcome),
                };
                Ok(Reading {
                    classification,
                    observations: Vec::new(),
                    usage: end.usage,
                })
            }
            _ => default_read_response::<Self>(req, outcome, part),
        }
    }

    fn scopes(req: &Request) -> Result<Vec<String>, PolicyError> {
        Ok(route::scope(&route::of(&req.url)).into_iter().collect())
    }

    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let mut costs = vec![one_request()];
        let route = route::of(&req.url);
        if !route.operation.invokes() {
            return Ok(costs);
        }
        let kind = if route.operation.converse() {
            ModelKind::Generation
        } else {
            ModelKind::of(route.model.as_deref().unwrap_or(""))
        };
        let Some(input) = prompt(req).filter(|_| kind != ModelKind::Media) else {
            return Ok(costs);
        };
        costs.push(amount(Dimension::InputTokens, input));
        if kind == ModelKind::Embedding {
            costs.push(amount(Dimension::Tokens, input));
            return Ok(costs);
        }
        let fields: &[&str] = if route.operation.converse() {
            &CONVERSE_MAX_OUTPUT
        } else {
            &INVOKE_MAX_OUTPUT
        };
        let output = max_output(req, fields, DEFAULT_MAX_OUTPUT);
        costs.push(amount(Dimension::OutputTokens, output));
        costs.push(amount(Dimension::Tokens, input.saturating_add(output)));
        Ok(costs)
    }
}

/// What a model invoked in its own format makes, by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModelKind {
    /// Text (the default: any id not known otherwise, an inference profile's ARN).
    Generation,
    /// Embeddings or a ranking (Titan's and Cohere's embeddings, the rerank models): input
    /// only.
    Embedding,
    /// Images or video (Stability, Titan Image Generator, Nova Canvas and Reel): priced by
    /// the picture, counted in requests.
    Media,
}

impl ModelKind {
    fn of(model: &str) -> Self {
        let m = model.to_ascii_lowercase();
        if m.contains("embed") || m.contains("rerank") {
            Self::Embedding
        } else if ["stability.", "image-generator", "nova-canvas", "nova-reel"]
            .iter()
            .any(|k| m.contains(k))
        {
            Self::Media
        } else {
            Self::Generation
        }
    }
}

/// The prompt's tokens, from the body's digest.
fn prompt(req: &Request) -> Option<u64> {
    prompt_tokens(req, &NOT_PROMPT, media_tokens)
}

/// Tokens one media part counts: as Anthropic counts it (an image by its pixels, a
/// document by its pages, a text file at four bytes a token), and a video by its frames,
/// each a 672 × 672 image.
fn media_tokens(part: &MediaPart) -> u64 {
    let video = part.kind == MediaKind::Other
        && part
            .media_type
            .as_deref()
            .is_some_and(|t| t.starts_with("video/"));
    if !video {
        return anthropic_media_tokens(part);
    }
    let frames = part.bytes.map_or(VIDEO_MAX_FRAMES, |b| {
        b.div_ceil(VIDEO_BYTES_PER_SECOND)
            .clamp(1, VIDEO_MAX_FRAMES)
    });
    let frame = anthropic_image_tokens(Some((VIDEO_FRAME_SIDE, VIDEO_FRAME_SIDE)));
    frames.saturating_mul(frame)
}

sluice_plugin_sdk::export_plugin!(Bedrock);

#[cfg(test)]
mod tests;
