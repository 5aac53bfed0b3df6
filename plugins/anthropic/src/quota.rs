//! `anthropic-ratelimit-*` headers.

use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::time::{parse_rfc3339_ms, reset_after};
use sluice_plugin_sdk::{
    Dimension, Observation, Request, Response, header_pair, headers, model_scope,
};

const DIMENSIONS: [&str; 4] = ["requests", "tokens", "input-tokens", "output-tokens"];

fn dimension(name: &str) -> Dimension {
    match name {
        "requests" => Dimension::Requests,
        "input-tokens" => Dimension::InputTokens,
        "output-tokens" => Dimension::OutputTokens,
        _ => Dimension::Tokens,
    }
}

/// The observations in a response's headers.
pub fn observations(req: &Request, resp: &Response) -> Vec<Observation> {
    let h = headers(&resp.headers);
    let scope = model_scope(req);
    DIMENSIONS
        .into_iter()
        .filter_map(|d| {
            let mut o = header_pair(
                &h,
                dimension(d),
                &format!("anthropic-ratelimit-{d}-limit"),
                &format!("anthropic-ratelimit-{d}-remaining"),
                reset_ms(&h, d, req.now_ms),
            )?;
            o.source
                .push_str(&format!(",anthropic-ratelimit-{d}-reset"));
            o.scope.clone_from(&scope);
            Some(o)
        })
        .collect()
}

/// `anthropic-ratelimit-{d}-reset` as milliseconds from now (zero once past).
fn reset_ms(h: &Headers<'_>, d: &str, now_ms: i64) -> Option<u64> {
    h.get(&format!("anthropic-ratelimit-{d}-reset"))
        .and_then(parse_rfc3339_ms)
        .map(|at| reset_after(at, now_ms))
}

/// The longest reset among dimensions with nothing remaining.
pub fn exhausted_reset_ms(h: &Headers<'_>, now_ms: i64) -> Option<u64> {
    DIMENSIONS
        .into_iter()
        .filter(|d| h.get_u64(&format!("anthropic-ratelimit-{d}-remaining")) == Some(0))
        .filter_map(|d| reset_ms(h, d, now_ms))
        .max()
}
