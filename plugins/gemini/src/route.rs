//! What a Gemini URL names: the model and the method, both in the path's last segment.
//!
//! - The Gemini API: `/v1beta/models/gemini-2.5-flash:generateContent` (and `/v1/...`), a
//!   tuned model as `/v1beta/tunedModels/NAME:generateContent`.
//! - Vertex AI: `/v1/projects/P/locations/L/publishers/google/models/gemini-2.5-flash:
//!   streamGenerateContent`.
//!
//! The model is what a request is charged and held under (`model:<name>`): Google keeps
//! each model's quotas apart, and names the model in a spent quota's `quotaDimensions`.

/// What one request asks of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `generateContent`: a generation, answered whole.
    Generate,
    /// `streamGenerateContent`: a generation, streamed (`?alt=sse` for server-sent events).
    StreamGenerate,
    /// `countTokens`: counts a prompt; generates nothing.
    CountTokens,
    /// `embedContent`, `batchEmbedContents`: embeddings, priced by their input.
    Embed,
    /// Anything else (files, cached contents, batches, models).
    Other,
}

impl Method {
    /// Whether the method generates text (its output is billed).
    pub fn generates(self) -> bool {
        matches!(self, Self::Generate | Self::StreamGenerate)
    }
}

/// The model and method a request's URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The model, as the path names it (`gemini-2.5-flash`, `tunedModels/NAME`); `None`
    /// where the path names none.
    pub model: Option<String>,
    /// The method after the `:`.
    pub method: Method,
}

/// The longest model name taken as a scope: a longer one is not a model's name.
const MAX_MODEL_LEN: usize = 128;

/// Reads `url` (absolute, with its query).
pub fn of(url: &str) -> Route {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let path = path
        .split_once("://")
        .map_or(path, |(_, rest)| rest.find('/').map_or("", |i| &rest[i..]));
    let last = path.rsplit('/').next().unwrap_or("");
    let (name, verb) = last.split_once(':').unwrap_or((last, ""));
    let method = match verb {
        "generateContent" => Method::Generate,
        "streamGenerateContent" => Method::StreamGenerate,
        "countTokens" => Method::CountTokens,
        "embedContent" | "batchEmbedContents" => Method::Embed,
        _ => Method::Other,
    };
    let parent = path
        .strip_suffix(last)
        .and_then(|p| p.strip_suffix('/'))
        .and_then(|p| p.rsplit('/').next())
        .unwrap_or("");
    let model = match parent {
        "models" => Some(name.to_owned()),
        "tunedModels" => Some(format!("tunedModels/{name}")),
        _ => None,
    }
    .filter(|m| !m.is_empty() && m.len() <= MAX_MODEL_LEN && !verb.is_empty());
    Route { model, method }
}

/// The scope a request of `route` is charged and held under: `model:<name>`.
pub fn scope(route: &Route) -> Option<String> {
    route.model.as_ref().map(|m| format!("model:{m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_and_method_of_every_form_of_url() {
        let cases = [
            (
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
                Some("gemini-2.5-flash"),
                Method::Generate,
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                Some("gemini-2.5-pro"),
                Method::StreamGenerate,
            ),
            (
                "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent",
                Some("gemini-2.0-flash"),
                Method::StreamGenerate,
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/tunedModels/mine:generateContent",
                Some("tunedModels/mine"),
                Method::Generate,
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/models/text-embedding-004:batchEmbedContents",
                Some("text-embedding-004"),
                Method::Embed,
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:countTokens",
                Some("gemini-2.5-flash"),
                Method::CountTokens,
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash",
                None,
                Method::Other,
            ),
            (
                "https://generativelanguage.googleapis.com/upload/v1beta/files",
                None,
                Method::Other,
            ),
            (
                "http://127.0.0.1:9/gemini/v1beta/models/m:generateContent#x",
                Some("m"),
                Method::Generate,
            ),
        ];
        for (url, model, method) in cases {
            let r = of(url);
            assert_eq!(r.model.as_deref(), model, "{url}");
            assert_eq!(r.method, method, "{url}");
        }
        assert_eq!(
            scope(&of(
                "https://h/v1beta/models/gemini-2.5-flash:generateContent"
            ))
            .as_deref(),
            Some("model:gemini-2.5-flash")
        );
    }
}
