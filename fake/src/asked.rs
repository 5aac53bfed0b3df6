//! What an attempt asks of a model provider, read from its body as the providers count it:
//! its prompt, the output it reserves, and whether it streams.

/// What an attempt asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    /// Its prompt: the characters of its messages' `content`, four to a token, rounded up,
    /// or without messages its body at four bytes a token.
    pub input: u64,
    /// Its `max_tokens`, reserved whole as providers do.
    pub max_output: u64,
    /// `"stream": true`.
    pub stream: bool,
    /// `"stream_options": {"include_usage": true}`.
    pub include_usage: bool,
    /// What the model would write: a share of `max_tokens` (10% to 59%) fixed by the body,
    /// as a real answer is usually shorter than its maximum.
    pub output: u64,
}

/// Reads what `body` asks for.
pub(crate) fn asked(body: &[u8]) -> Asked {
    let parsed = serde_json::from_slice::<serde_json::Value>(body).ok();
    let content: Option<u64> = parsed
        .as_ref()
        .and_then(|v| v.get("messages"))
        .and_then(serde_json::Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m.get("content").and_then(serde_json::Value::as_str))
                .map(|c| c.chars().count() as u64)
                .sum()
        });
    let input = content.map_or(body.len() as u64 / 4, |chars| chars.div_ceil(4));
    let field = |k: &str| parsed.as_ref().and_then(|v| v.get(k));
    let max_output = field("max_tokens")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    let stream = field("stream").and_then(serde_json::Value::as_bool) == Some(true);
    let include_usage = field("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    // FNV-1a over the body: the same request always gets the same length of answer.
    let hash = body.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let share = 10 + hash % 50;
    let output = if max_output == 0 {
        0
    } else {
        (max_output * share / 100).max(1)
    };
    Asked {
        input,
        max_output,
        stream,
        include_usage,
        output,
    }
}
