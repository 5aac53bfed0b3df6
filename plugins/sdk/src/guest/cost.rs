//! What a request will use, read from its digest (the body's prefix may hold only the start
//! of a long request, while the digest describes all of it), and what it used, as the
//! provider's answer reports it.

use super::{Cost, Dimension, MediaKind, MediaPart, Request, amount};
use crate::billing::{CACHE_READ_TOKENS, CACHE_WRITE_TOKENS};
use crate::json::tokens_for_chars;
use crate::media;

/// Tokens of a request's prompt: its text at four characters a token, less the top-level
/// string fields named in `skip` (`model`, `user`: names, not prompt), plus each media part
/// as `media_tokens` counts it. `None` for a body that is not JSON.
pub fn prompt_tokens(
    req: &Request,
    skip: &[&str],
    media_tokens: impl Fn(&MediaPart) -> u64,
) -> Option<u64> {
    let d = &req.digest;
    if !d.json {
        return None;
    }
    let skipped: u64 = skip
        .iter()
        .filter_map(|name| d.string(name))
        .map(|s| s.chars().count() as u64)
        .sum();
    let text = tokens_for_chars(d.text_chars.saturating_sub(skipped));
    let (mut media, mut most) = (0_u64, 0_u64);
    for part in &d.media {
        let tokens = media_tokens(part);
        media = media.saturating_add(tokens);
        most = most.max(tokens);
    }
    // Parts past the digest's bound: each at the most a described part costs.
    let omitted = most.saturating_mul(u64::from(d.media_omitted));
    Some(text.saturating_add(media).saturating_add(omitted))
}

/// The first of the whole-number `fields` the body sets (`max_tokens`,
/// `max_completion_tokens`...).
pub fn first_number(req: &Request, fields: &[&str]) -> Option<u64> {
    fields.iter().find_map(|f| req.digest.number(f))
}

/// The maximum output of a generation: the first of `fields` the request sets (`max_tokens`,
/// ...), else the default the host's configuration sets for its model
/// ([`crate::digest::DEFAULT_MAX_OUTPUT`]), else the plugin's own `default`.
pub fn max_output(req: &Request, fields: &[&str], default: u64) -> u64 {
    first_number(req, fields)
        .or_else(|| req.digest.default_max_output())
        .unwrap_or(default)
}

/// The size of an image part, when its header was read.
pub fn image_size(part: &MediaPart) -> Option<(u32, u32)> {
    part.width.zip(part.height)
}

/// Tokens of a document or audio part by the conservative rules of [`media`]: a document's
/// pages at [`media::PAGE_TEXT_TOKENS`] plus `page_image` each, text files at four bytes a
/// token, audio by its length. Images and other parts: `None` (the provider's own rule).
pub fn document_or_audio_tokens(part: &MediaPart, page_image: u64) -> Option<u64> {
    match part.kind {
        MediaKind::Document => {
            let text_file = part
                .media_type
                .as_deref()
                .is_some_and(|t| t.starts_with("text/"));
            Some(if text_file {
                part.bytes.unwrap_or(0).div_ceil(4)
            } else {
                media::document_pages(part.pages, part.bytes)
                    .saturating_mul(media::PAGE_TEXT_TOKENS + page_image)
            })
        }
        MediaKind::Audio => Some(media::audio_tokens(part.bytes)),
        MediaKind::Image | MediaKind::Other => None,
    }
}

/// Tokens an Anthropic model counts for one media part, wherever the model is served
/// (Anthropic's API, Amazon Bedrock): an image by its pixels
/// ([`media::anthropic_image_tokens`]); a document's pages as text and an image of the page,
/// a text file at four bytes a token, audio by its length ([`document_or_audio_tokens`]);
/// anything else at four bytes a token.
pub fn anthropic_media_tokens(part: &MediaPart) -> u64 {
    match part.kind {
        MediaKind::Image => media::anthropic_image_tokens(image_size(part)),
        _ => document_or_audio_tokens(part, media::ANTHROPIC_IMAGE_MAX_TOKENS)
            .unwrap_or_else(|| part.bytes.unwrap_or(0).div_ceil(4)),
    }
}

/// The usage an answer reports, as the host's dimensions: `input` (what counts toward input
/// limits: the uncached input and the tokens written to the cache), `output` and their total,
/// each when reported; and, for billing, once the input is reported, the cache's reads
/// ([`CACHE_READ_TOKENS`], besides the input) and writes ([`CACHE_WRITE_TOKENS`], among it)
/// when there were any. Anthropic's and Amazon Bedrock's answers report their cache so.
pub fn reported_usage(
    input: Option<u64>,
    output: Option<u64>,
    (read, written): (u64, u64),
) -> Vec<Cost> {
    let mut out = Vec::with_capacity(5);
    if let Some(i) = input {
        out.push(amount(Dimension::InputTokens, i));
    }
    if let Some(o) = output {
        out.push(amount(Dimension::OutputTokens, o));
    }
    if let (Some(i), Some(o)) = (input, output) {
        out.push(amount(Dimension::Tokens, i.saturating_add(o)));
    }
    if input.is_some() {
        if read > 0 {
            out.push(amount(Dimension::Other(CACHE_READ_TOKENS.into()), read));
        }
        if written > 0 {
            out.push(amount(Dimension::Other(CACHE_WRITE_TOKENS.into()), written));
        }
    }
    out
}
