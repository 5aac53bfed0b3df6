//! `x-ratelimit-*` headers.

use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::time::parse_go_duration_ms;
use sluice_plugin_sdk::{
    Dimension, Observation, Request, Response, header_pair, headers, model_scope,
};

/// The observations in a response's headers.
pub fn observations(req: &Request, resp: &Response) -> Vec<Observation> {
    let h = headers(&resp.headers);
    let scope = model_scope(req);
    [
        ("requests", Dimension::Requests),
        ("tokens", Dimension::Tokens),
    ]
    .into_iter()
    .filter_map(|(suffix, dim)| {
        let mut o = header_pair(
            &h,
            dim,
            &format!("x-ratelimit-limit-{suffix}"),
            &format!("x-ratelimit-remaining-{suffix}"),
            reset_ms(&h, suffix),
        )?;
        o.source.push_str(&format!(",x-ratelimit-reset-{suffix}"));
        o.scope.clone_from(&scope);
        Some(o)
    })
    .collect()
}

/// `x-ratelimit-reset-{suffix}` as milliseconds.
pub fn reset_ms(h: &Headers<'_>, suffix: &str) -> Option<u64> {
    h.get(&format!("x-ratelimit-reset-{suffix}"))
        .and_then(parse_go_duration_ms)
}

/// The reset of the dimensions whose remaining is zero (the longest), if any.
pub fn exhausted_reset_ms(h: &Headers<'_>) -> Option<u64> {
    ["requests", "tokens"]
        .into_iter()
        .filter(|s| h.get_u64(&format!("x-ratelimit-remaining-{s}")) == Some(0))
        .filter_map(|s| reset_ms(h, s))
        .max()
}
