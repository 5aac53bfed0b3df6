//! `anthropic-ratelimit-*` headers.

use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::time::{parse_rfc3339_ms, reset_after};
use sluice_plugin_sdk::{
    Dimension, Observation, Request, Response, header_pair, headers, model_scope,
};

/// Each dimension and its limit, remaining and reset headers.
const DIMENSIONS: [(Dimension, [&str; 3]); 4] = [
    (
        Dimension::Requests,
        [
            "anthropic-ratelimit-requests-limit",
            "anthropic-ratelimit-requests-remaining",
            "anthropic-ratelimit-requests-reset",
        ],
    ),
    (
        Dimension::Tokens,
        [
            "anthropic-ratelimit-tokens-limit",
            "anthropic-ratelimit-tokens-remaining",
            "anthropic-ratelimit-tokens-reset",
        ],
    ),
    (
        Dimension::InputTokens,
        [
            "anthropic-ratelimit-input-tokens-limit",
            "anthropic-ratelimit-input-tokens-remaining",
            "anthropic-ratelimit-input-tokens-reset",
        ],
    ),
    (
        Dimension::OutputTokens,
        [
            "anthropic-ratelimit-output-tokens-limit",
            "anthropic-ratelimit-output-tokens-remaining",
            "anthropic-ratelimit-output-tokens-reset",
        ],
    ),
];

/// The observations in a response's headers.
pub fn observations(req: &Request, resp: &Response) -> Vec<Observation> {
    let h = headers(&resp.headers);
    let mut out = Vec::new();
    let mut scope = None;
    for (dimension, names) in DIMENSIONS {
        let reset = reset_ms(&h, names[2], req.now_ms);
        if let Some(mut o) = header_pair(&h, dimension, names, reset) {
            // The figures describe the limits of the model the request named.
            o.scope = scope.get_or_insert_with(|| model_scope(req)).clone();
            out.push(o);
        }
    }
    out
}

/// A reset header (RFC 3339) as milliseconds from now (zero once past).
fn reset_ms(h: &Headers<'_>, name: &str, now_ms: i64) -> Option<u64> {
    h.get(name)
        .and_then(parse_rfc3339_ms)
        .map(|at| reset_after(at, now_ms))
}

/// The longest reset among dimensions with nothing remaining.
pub fn exhausted_reset_ms(h: &Headers<'_>, now_ms: i64) -> Option<u64> {
    DIMENSIONS
        .into_iter()
        .filter(|(_, names)| h.get_u64(names[1]) == Some(0))
        .filter_map(|(_, names)| reset_ms(h, names[2], now_ms))
        .max()
}
