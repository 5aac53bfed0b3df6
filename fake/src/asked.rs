//! What an attempt asks of a model provider, read from its body as the providers count it:
//! its prompt (text, and images by their pixels), the output it reserves, and whether it
//! streams.

use crate::{Style, vision};

/// What an attempt asks for.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// Its prompt: the characters of its messages' text (a `content` string, or the `text`
    /// of its parts), four to a token, rounded up, and each image part as the provider
    /// counts it (see [`crate::vision`]); without messages, its body at four bytes a token.
    /// In the OpenAI style, only a model's routes (chat completions, completions, responses,
    /// embeddings) count tokens: a file, a batch or any other object costs none, as OpenAI's
    /// tokens-per-minute limit is a limit of its models.
    pub input: u64,
    /// Its maximum output (`max_tokens`, `max_completion_tokens` or `max_output_tokens`),
    /// reserved whole as providers do; 0 when it names none.
    pub max_output: u64,
    /// `"stream": true`.
    pub stream: bool,
    /// `"stream_options": {"include_usage": true}`.
    pub include_usage: bool,
    /// What the model would write: a share of the maximum (10% to 59%) fixed by the body, as
    /// a real answer is usually shorter than its maximum; a generation (a body with
    /// `messages`) that names no maximum writes the same share of [`UNBOUNDED_ANSWER`].
    pub output: u64,
    /// On a model's route, the model it asks for (`fake-model` when it names none), which
    /// the answer echoes; `None` elsewhere.
    pub model: Option<String>,
}

/// The length a generation that names no maximum output answers at most.
pub(crate) const UNBOUNDED_ANSWER: u64 = 1024;

/// The routes of OpenAI's models, whose requests count tokens.
const OPENAI_MODEL_ROUTES: [&str; 4] = [
    "/chat/completions",
    "/completions",
    "/responses",
    "/embeddings",
];

/// The fields that bound a generation's output, as the providers name them.
const MAX_OUTPUT_FIELDS: [&str; 3] = ["max_tokens", "max_completion_tokens", "max_output_tokens"];

/// Whether `path` is a model's route in `style`: the routes that count tokens.
pub(crate) fn model_route(path: &str, style: Style) -> bool {
    style != Style::OpenAi || OPENAI_MODEL_ROUTES.iter().any(|r| path.ends_with(r))
}

/// Reads what `body`, sent to `path`, asks of a provider of `style` (`parsed`: the body as
/// JSON, when it is).
pub(crate) fn asked(
    path: &str,
    body: &[u8],
    parsed: Option<&serde_json::Value>,
    style: Style,
) -> Asked {
    let content: Option<(u64, u64)> = if style == Style::Gemini {
        parsed
            .and_then(|v| v.get("contents"))
            .and_then(serde_json::Value::as_array)
            .map(|contents| {
                contents
                    .iter()
                    .filter_map(|c| c.get("parts"))
                    .map(gemini_parts)
                    .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
            })
    } else if style == Style::Bedrock {
        parsed.map(|v| {
            let system = v.get("system").map_or((0, 0), bedrock_parts);
            v.get("messages")
                .and_then(serde_json::Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(|m| m.get("content"))
                .map(bedrock_parts)
                .fold(system, |(a, b), (c, d)| (a + c, b + d))
        })
    } else {
        parsed
            .and_then(|v| v.get("messages"))
            .and_then(serde_json::Value::as_array)
            .map(|messages| {
                messages
                    .iter()
                    .filter_map(|m| m.get("content"))
                    .map(|c| prompt(c, style))
                    .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
            })
    };
    let counts_tokens = model_route(path, style);
    let input = if counts_tokens {
        content.map_or(body.len() as u64 / 4, |(chars, images)| {
            chars.div_ceil(4) + images
        })
    } else {
        0
    };
    let field = |k: &str| parsed.and_then(|v| v.get(k));
    let max_output = MAX_OUTPUT_FIELDS
        .iter()
        .find_map(|k| field(k).and_then(serde_json::Value::as_u64))
        .or_else(|| {
            field("generationConfig")
                .and_then(|g| g.get("maxOutputTokens"))
                .and_then(serde_json::Value::as_u64)
        })
        .or_else(|| {
            field("inferenceConfig")
                .and_then(|g| g.get("maxTokens"))
                .and_then(serde_json::Value::as_u64)
        })
        .unwrap_or(0);
    let stream = field("stream").and_then(serde_json::Value::as_bool) == Some(true)
        || (style == Style::Gemini && path.ends_with(":streamGenerateContent"))
        || (style == Style::Bedrock && path.ends_with("/converse-stream"));
    let include_usage = field("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    // FNV-1a over the body: the same request always gets the same length of answer, however
    // it is spelt and however it asks for its usage (a client that adds `stream_options`
    // gets the same stream): a JSON object is hashed as its fields, in order, less those.
    // The object is written into the hash as its compact JSON, never copied.
    let mut fnv = Fnv(0xcbf2_9ce4_8422_2325);
    match parsed.and_then(serde_json::Value::as_object) {
        Some(o) => {
            fnv.add(b"{");
            let fields = o.iter().filter(|(k, _)| *k != "stream_options");
            for (i, (k, v)) in fields.enumerate() {
                fnv.add(if i == 0 { b"" } else { b"," });
                let _ = serde_json::to_writer(&mut fnv, k);
                fnv.add(b":");
                let _ = serde_json::to_writer(&mut fnv, v);
            }
            fnv.add(b"}");
        }
        None => fnv.add(body),
    }
    let hash = fnv.0;
    let share = 10 + hash % 50;
    let generation = content.is_some() && counts_tokens;
    let output = match max_output {
        0 if generation => UNBOUNDED_ANSWER * share / 100,
        0 => 0,
        max => (max * share / 100).max(1),
    };
    let named = if style == Style::Gemini {
        gemini_model(path)
    } else if style == Style::Bedrock {
        bedrock_model(path)
    } else {
        s(field("model"))
    };
    let model = counts_tokens.then(|| named.unwrap_or("fake-model").to_owned());
    Asked {
        input,
        max_output,
        stream,
        include_usage,
        output,
        model,
    }
}

/// FNV-1a, fed bytes as they come.
struct Fnv(u64);

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

impl std::io::Write for Fnv {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.add(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn s(v: Option<&serde_json::Value>) -> Option<&str> {
    v.and_then(serde_json::Value::as_str)
}

/// The model a Gemini path names: `/v1beta/models/M:generateContent`.
pub(crate) fn gemini_model(path: &str) -> Option<&str> {
    let last = path.rsplit('/').next()?;
    let (model, _) = last.split_once(':')?;
    path.contains("/models/").then_some(model)
}

/// The model a Bedrock path names: `/model/M/converse` (`M` as sent, percent-encoded).
pub(crate) fn bedrock_model(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/model/")?;
    rest.split('/').next().filter(|m| !m.is_empty())
}

/// One Bedrock Converse content list (or `system` list): (characters of text, tokens of
/// images given as `{"image": {"format", "source": {"bytes"}}}`).
fn bedrock_parts(parts: &serde_json::Value) -> (u64, u64) {
    let parts = parts.as_array().map_or(&[][..], Vec::as_slice);
    parts.iter().fold((0, 0), |(text, images), part| {
        if let Some(t) = s(part.get("text")) {
            return (text + t.chars().count() as u64, images);
        }
        let image = part.get("image");
        match (
            s(image.and_then(|i| i.get("format"))),
            s(image.and_then(|i| i.get("source")?.get("bytes"))),
        ) {
            (Some(format), Some(bytes)) => {
                let url = format!("data:image/{format};base64,{bytes}");
                (
                    text,
                    images + vision::image_tokens(Style::Bedrock, &url, None),
                )
            }
            _ => (text, images),
        }
    })
}

/// One Gemini content's `parts`: (characters of text, tokens of inline images).
fn gemini_parts(parts: &serde_json::Value) -> (u64, u64) {
    let parts = parts.as_array().map_or(&[][..], Vec::as_slice);
    parts.iter().fold((0, 0), |(text, images), part| {
        if let Some(t) = s(part.get("text")) {
            return (text + t.chars().count() as u64, images);
        }
        let inline = part.get("inlineData").or_else(|| part.get("inline_data"));
        let kind = inline.and_then(|i| s(i.get("mimeType")).or_else(|| s(i.get("mime_type"))));
        match (kind, s(inline.and_then(|i| i.get("data")))) {
            (Some(t), Some(d)) if t.starts_with("image/") => {
                let url = format!("data:{t};base64,{d}");
                (
                    text,
                    images + vision::image_tokens(Style::Gemini, &url, None),
                )
            }
            _ => (text, images),
        }
    })
}

/// One message's `content`: (characters of text, tokens of images).
fn prompt(content: &serde_json::Value, style: Style) -> (u64, u64) {
    use serde_json::Value;
    let chars = |s: &str| s.chars().count() as u64;
    match content {
        Value::String(s) => (chars(s), 0),
        Value::Array(parts) => parts.iter().fold((0, 0), |(text, images), part| {
            match s(part.get("type")) {
                Some("text" | "input_text") => {
                    (text + s(part.get("text")).map_or(0, chars), images)
                }
                // OpenAI: {"image_url": {"url", "detail"}}.
                Some("image_url") => {
                    let img = part.get("image_url");
                    let url = s(img.and_then(|i| i.get("url"))).unwrap_or("");
                    let detail = s(img.and_then(|i| i.get("detail")));
                    (text, images + vision::image_tokens(style, url, detail))
                }
                // Anthropic: {"source": {"type": "base64", "media_type", "data"}}.
                Some("image") => {
                    let src = part.get("source");
                    let url = match (
                        s(src.and_then(|x| x.get("media_type"))),
                        s(src.and_then(|x| x.get("data"))),
                    ) {
                        (Some(t), Some(d)) => format!("data:{t};base64,{d}"),
                        _ => String::new(),
                    };
                    (text, images + vision::image_tokens(style, &url, None))
                }
                _ => (text, images),
            }
        }),
        _ => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request gets the same answer length however it asks for its usage, and the hash is
    /// that of the object's compact JSON without `stream_options`.
    #[test]
    fn stream_options_do_not_change_the_answer() {
        let plain = br#"{"model":"m","max_tokens":400,"stream":true,"messages":[{"role":"user","content":"Hi \"you\""}]}"#;
        let asking = br#"{"stream_options":{"include_usage":true},"model":"m","max_tokens":400,"stream":true,"messages":[{"role":"user","content":"Hi \"you\""}]}"#;
        let read = |b: &[u8]| {
            let v: serde_json::Value = serde_json::from_slice(b).unwrap();
            asked("/v1/chat/completions", b, Some(&v), Style::OpenAi).output
        };
        assert_eq!(read(plain), read(asking));
        let v: serde_json::Value = serde_json::from_slice(plain).unwrap();
        let mut whole = Fnv(0xcbf2_9ce4_8422_2325);
        whole.add(v.to_string().as_bytes());
        let share = 10 + whole.0 % 50;
        assert_eq!(read(plain), 400 * share / 100);
    }
}
