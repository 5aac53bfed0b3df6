//! `x-ratelimit-*` headers.

use sluice_plugin_sdk::headers::Headers;
use sluice_plugin_sdk::time::parse_go_duration_ms;
use sluice_plugin_sdk::{Dimension, Observation, Request, header_pair, model_scope};

/// One quota dimension's headers: limit, remaining, reset.
struct Names {
    dimension: Dimension,
    fields: [&'static str; 3],
}

const REQUESTS: Names = Names {
    dimension: Dimension::Requests,
    fields: [
        "x-ratelimit-limit-requests",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
    ],
};

const TOKENS: Names = Names {
    dimension: Dimension::Tokens,
    fields: [
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-tokens",
    ],
};

/// The observations in a response's headers `h` (parsed once by the caller).
pub fn observations(req: &Request, h: &Headers<'_>) -> Vec<Observation> {
    let mut out = Vec::with_capacity(2);
    let mut scope = None;
    for names in [REQUESTS, TOKENS] {
        let reset = reset_ms(h, names.fields[2]);
        if let Some(mut o) = header_pair(h, names.dimension, names.fields, reset) {
            // The figures describe the limits of the model the request named.
            o.scope = scope.get_or_insert_with(|| model_scope(req)).clone();
            out.push(o);
        }
    }
    out
}

/// A reset header (Go duration) as milliseconds.
fn reset_ms(h: &Headers<'_>, name: &str) -> Option<u64> {
    h.get(name).and_then(parse_go_duration_ms)
}

/// The reset of the dimensions whose remaining is zero (the longest), if any.
pub fn exhausted_reset_ms(h: &Headers<'_>) -> Option<u64> {
    [REQUESTS, TOKENS]
        .into_iter()
        .filter(|n| h.get_u64(n.fields[1]) == Some(0))
        .filter_map(|n| reset_ms(h, n.fields[2]))
        .max()
}
