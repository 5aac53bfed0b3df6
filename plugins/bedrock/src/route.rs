//! What a Bedrock runtime URL names: the operation, and for a model's operations the model.
//!
//! - `POST /model/{modelId}/converse` and `/converse-stream` (Converse, the same body for
//!   every model), `/invoke` and `/invoke-with-response-stream` (the model's own body),
//!   `/count-tokens`;
//! - `POST /guardrail/{id}/version/{version}/apply` (ApplyGuardrail);
//! - `/async-invoke` (`POST`: StartAsyncInvoke, a write; `GET`: its jobs).
//!
//! The model id is one path segment, percent-encoded by AWS's SDKs: a foundation model
//! (`anthropic.claude-3-5-sonnet-20240620-v1%3A0`), a cross-Region inference profile
//! (`us.anthropic.claude-3-5-sonnet-20240620-v1%3A0`) or an ARN
//! (`arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc`).
//! It is decoded (`%3A` is `:`, `%2F` is `/`) to name the scope a request is charged and held
//! under, `model:<id>`: Bedrock keeps each model's quotas apart (per Region, and an inference
//! profile has quotas of its own), and an SDK sends `:` encoded or not, so both must meet in
//! one bucket. A model id given unencoded, slashes and all, is read the same way.

/// What one request asks of the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `converse`: a generation in Converse's shape, answered whole.
    Converse,
    /// `converse-stream`: a Converse generation, streamed as an AWS event stream.
    ConverseStream,
    /// `invoke`: a generation (or an embedding) in the model's own shape, answered whole.
    Invoke,
    /// `invoke-with-response-stream`: an invocation streamed as `chunk` events.
    InvokeStream,
    /// `count-tokens`: counts a prompt; generates nothing.
    CountTokens,
    /// `guardrail/…/apply`: a guardrail applied to content.
    ApplyGuardrail,
    /// `async-invoke`: an asynchronous invocation started (a write), or its jobs listed.
    AsyncInvoke,
    /// Anything else.
    Other,
}

impl Operation {
    /// Whether the operation runs the model on the request (its input, and its output,
    /// are billed).
    pub fn invokes(self) -> bool {
        matches!(
            self,
            Self::Converse | Self::ConverseStream | Self::Invoke | Self::InvokeStream
        )
    }

    /// Whether the answer is an AWS event stream.
    pub fn streams(self) -> bool {
        matches!(self, Self::ConverseStream | Self::InvokeStream)
    }

    /// Whether the body is in Converse's shape (else the model's own).
    pub fn converse(self) -> bool {
        matches!(self, Self::Converse | Self::ConverseStream)
    }
}

/// The model and operation a request's URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The model id, decoded; `None` where the path names none (or one that cannot be a
    /// model's id).
    pub model: Option<String>,
    /// The operation.
    pub operation: Operation,
}

/// The longest model id taken as a scope: an inference profile's or a provisioned model's
/// ARN fits; a longer one is not a model's id.
const MAX_MODEL_LEN: usize = 200;

/// Reads `url` (absolute, with its query).
pub fn of(url: &str) -> Route {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let path = path
        .split_once("://")
        .map_or(path, |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
    if let Some(at) = path.find("/model/") {
        let rest = &path[at + "/model/".len()..];
        let Some((model, verb)) = rest.rsplit_once('/') else {
            return other();
        };
        let operation = match verb {
            "converse" => Operation::Converse,
            "converse-stream" => Operation::ConverseStream,
            "invoke" => Operation::Invoke,
            "invoke-with-response-stream" => Operation::InvokeStream,
            "count-tokens" => Operation::CountTokens,
            _ => return other(),
        };
        return Route {
            model: decode(model),
            operation,
        };
    }
    let operation = if path.contains("/guardrail/") && path.ends_with("/apply") {
        Operation::ApplyGuardrail
    } else if path.ends_with("/async-invoke") || path.contains("/async-invoke/") {
        Operation::AsyncInvoke
    } else {
        Operation::Other
    };
    Route {
        model: None,
        operation,
    }
}

fn other() -> Route {
    Route {
        model: None,
        operation: Operation::Other,
    }
}

/// A model id as the path gives it, with `%3A` and `%2F` (either case) decoded; `None` when
/// empty, too long, or holding anything but printable ASCII.
fn decode(segment: &str) -> Option<String> {
    let mut out = String::with_capacity(segment.len());
    let mut rest = segment;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3).unwrap_or("");
        match code {
            "3A" | "3a" => out.push(':'),
            "2F" | "2f" => out.push('/'),
            _ => return None,
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    let fits =
        !out.is_empty() && out.len() <= MAX_MODEL_LEN && out.bytes().all(|b| b.is_ascii_graphic());
    fits.then_some(out)
}

/// The scope a request of `route` is charged and held under: `model:<id>`.
pub fn scope(route: &Route) -> Option<String> {
    route.model.as_ref().map(|m| format!("model:{m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

    #[test]
    fn the_model_and_operation_of_every_route() {
        let cases = [
            (
                "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
                Some("anthropic.claude-3-5-sonnet-20240620-v1:0"),
                Operation::Converse,
            ),
            (
                "/model/us.anthropic.claude-3-5-sonnet-20240620-v1:0/converse-stream",
                Some("us.anthropic.claude-3-5-sonnet-20240620-v1:0"),
                Operation::ConverseStream,
            ),
            (
                "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123/invoke",
                Some("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"),
                Operation::Invoke,
            ),
            (
                "/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3-1-8b-instruct-v1:0/invoke-with-response-stream",
                Some(
                    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.meta.llama3-1-8b-instruct-v1:0",
                ),
                Operation::InvokeStream,
            ),
            (
                "/model/amazon.titan-embed-text-v2%3a0/invoke",
                Some("amazon.titan-embed-text-v2:0"),
                Operation::Invoke,
            ),
            (
                "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/count-tokens",
                Some("anthropic.claude-3-5-haiku-20241022-v1:0"),
                Operation::CountTokens,
            ),
            (
                "/guardrail/gr-123/version/1/apply",
                None,
                Operation::ApplyGuardrail,
            ),
            ("/async-invoke", None, Operation::AsyncInvoke),
            (
                "/async-invoke/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Aasync-invoke%2Fx",
                None,
                Operation::AsyncInvoke,
            ),
            ("/model/m/unknown", None, Operation::Other),
            ("/model/m", None, Operation::Other),
            ("/model//converse", None, Operation::Converse),
            ("/model/bad%20name/converse", None, Operation::Converse),
            ("/", None, Operation::Other),
        ];
        for (path, model, operation) in cases {
            let url = format!("{HOST}{path}?x=1");
            let r = of(&url);
            assert_eq!(r.model.as_deref(), model, "{path}");
            assert_eq!(r.operation, operation, "{path}");
        }
        assert_eq!(
            of("http://127.0.0.1:9/bedrock/model/m%3A1/converse")
                .model
                .as_deref(),
            Some("m:1"),
            "a prefix before the runtime's path (a local stand-in) is kept out"
        );
        assert_eq!(
            scope(&of(&format!(
                "{HOST}/model/amazon.nova-pro-v1%3A0/converse"
            )))
            .as_deref(),
            Some("model:amazon.nova-pro-v1:0")
        );
        let long = "m".repeat(MAX_MODEL_LEN + 1);
        assert_eq!(of(&format!("{HOST}/model/{long}/converse")).model, None);
    }
}
