//! How the fake provider counts an image in a prompt, as the provider it impersonates
//! publishes it: OpenAI's 512 px tiles (gpt-4o: 85 tokens, plus 170 a tile at `detail`
//! high or auto), Anthropic's width × height / 750 after scaling to fit 1 568 px and about
//! 1.19 megapixels, Gemini's 258 tokens a 768 px tile (or one 258 for an image of at most
//! 384 px a side). The size comes from a PNG's header; an image the fake cannot measure
//! (another format, a URL) counts as the largest an image can.
//!
//! Written apart from the plugins' own rules on purpose: the fake is the provider a test
//! holds sluice against, so it must not share the code it checks.

use crate::Style;

/// The tokens `style` counts for an image given as `url` (a data URL or a link), at
/// `detail`.
pub(crate) fn image_tokens(style: Style, url: &str, detail: Option<&str>) -> u64 {
    let size = png_size(url);
    match style {
        // Bedrock's models counted here are Anthropic's.
        Style::Anthropic | Style::Bedrock => anthropic(size),
        Style::Gemini => gemini(size),
        _ => openai(size, detail),
    }
}

/// Gemini: 258 for an image no larger than 384 px a side, else 258 for each 768 px tile.
fn gemini(size: Option<(f64, f64)>) -> u64 {
    let Some((w, h)) = size else {
        return 258 * 16;
    };
    if w <= 384.0 && h <= 384.0 {
        return 258;
    }
    258 * tiles_of(w, 768.0) * tiles_of(h, 768.0)
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "an image's side, a few thousand at most"
)]
fn tiles_of(side: f64, tile: f64) -> u64 {
    (side / tile).ceil().max(1.0) as u64
}

fn openai(size: Option<(f64, f64)>, detail: Option<&str>) -> u64 {
    if detail == Some("low") {
        return 85;
    }
    let Some((mut w, mut h)) = size else {
        return 85 + 170 * 8;
    };
    let long = w.max(h);
    if long > 2048.0 {
        (w, h) = (w * 2048.0 / long, h * 2048.0 / long);
    }
    let short = w.min(h);
    if short > 768.0 {
        (w, h) = (w * 768.0 / short, h * 768.0 / short);
    }
    85 + 170 * tiles(w) * tiles(h)
}

fn anthropic(size: Option<(f64, f64)>) -> u64 {
    let Some((mut w, mut h)) = size else {
        return 1_600;
    };
    let long = w.max(h);
    if long > 1568.0 {
        (w, h) = (w * 1568.0 / long, h * 1568.0 / long);
    }
    let most = 1092.0 * 1092.0;
    if w * h > most {
        let s = (most / (w * h)).sqrt();
        (w, h) = (w * s, h * s);
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a few thousand at most"
    )]
    let tokens = (w * h / 750.0).ceil() as u64;
    tokens.clamp(1, 1_600)
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a few tiles"
)]
fn tiles(side: f64) -> u64 {
    (side / 512.0).ceil().max(1.0) as u64
}

/// Width and height of a PNG given as `data:image/png;base64,...`.
fn png_size(url: &str) -> Option<(f64, f64)> {
    let data = url.strip_prefix("data:image/png;base64,")?;
    let head = decode(data.get(..32)?)?;
    if !head.starts_with(b"\x89PNG") {
        return None;
    }
    let be = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    Some((f64::from(be(16)), f64::from(be(20))))
}

/// Standard base64 without padding, for the few bytes of a header.
fn decode(chars: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(chars.len() * 3 / 4);
    for quad in chars.as_bytes().chunks_exact(4) {
        let v = quad
            .iter()
            .try_fold(0_u32, |acc, &c| Some(acc << 6 | u32::from(value(c)?)))?;
        out.extend([(v >> 16) as u8, (v >> 8) as u8, v as u8]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_as_the_providers_publish() {
        // A 1024 × 1024 PNG's header, base64.
        let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        png.extend(1024_u32.to_be_bytes());
        png.extend(1024_u32.to_be_bytes());
        png.extend([8, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let table = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let b64: String = png
            .chunks(3)
            .flat_map(|c| {
                let v = u32::from(c[0]) << 16
                    | u32::from(*c.get(1).unwrap_or(&0)) << 8
                    | u32::from(*c.get(2).unwrap_or(&0));
                (0..4).map(move |i| char::from(table[((v >> (18 - 6 * i)) & 63) as usize]))
            })
            .collect();
        let url = format!("data:image/png;base64,{b64}");
        assert_eq!(image_tokens(Style::OpenAi, &url, Some("high")), 765);
        assert_eq!(image_tokens(Style::OpenAi, &url, Some("low")), 85);
        assert_eq!(image_tokens(Style::Anthropic, &url, None), 1_399);
        assert_eq!(
            image_tokens(Style::OpenAi, "https://x/cat.png", None),
            1_445
        );
    }
}
