//! Requests a strict provider refuses as the caller's mistake: a model it does not serve
//! (OpenAI answers 404 `model_not_found`), a chat with no messages (400
//! `invalid_request_error`), and a prompt with its maximum output past the model's context
//! window (400 `context_length_exceeded`). Off until a test asks: a fake
//! that serves any model with any prompt is the default. A refused request still counts as
//! a request against the provider's per-minute window, with no tokens.

use std::collections::HashSet;

use crate::asked::Asked;

/// What the provider checks before it serves a model's request.
#[derive(Debug, Default)]
pub(crate) struct Validation {
    /// The models it serves; `None`: any.
    pub models: Option<HashSet<String>>,
    /// The context window of every model, in tokens; `None`: unbounded.
    pub context_tokens: Option<u64>,
    /// Whether a chat (a body with `messages`) must have at least one message.
    pub messages_required: bool,
}

impl Validation {
    /// The status and error code a request for `model` asking `asked` is refused with, if
    /// it is; `model_route` says whether the path is a model's.
    pub fn refuse(
        &self,
        model_route: bool,
        model: Option<&str>,
        body: Option<&serde_json::Value>,
        asked: &Asked,
    ) -> Option<(u16, &'static str)> {
        if !model_route {
            return None;
        }
        let no_messages = body
            .and_then(|b| b.get("messages"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(Vec::is_empty);
        if self.messages_required && no_messages {
            return Some((400, "invalid_request_error"));
        }
        if let (Some(served), Some(model)) = (&self.models, model)
            && !served.contains(model)
        {
            return Some((404, "model_not_found"));
        }
        let window = self.context_tokens?;
        (asked.input + asked.max_output > window).then_some((400, "context_length_exceeded"))
    }
}
