//! What providers count for the media in a request, as they publish it: images by their
//! pixels, documents by their pages, audio by its length — never by the size of their
//! base64. The figures are data, per model family, with the page they come from; when a
//! size cannot be known (an image given by URL, a PDF whose pages are compressed), a
//! documented conservative figure stands in, and the provider's reported usage corrects the
//! charge afterwards.
//!
//! - OpenAI, "Images and vision" guide, "Calculating costs": models that count 512 px tiles
//!   (`detail: low` costs the base; else the image is scaled to fit 2048×2048, then so its
//!   shortest side is at most 768 px, and costs the base plus a figure per tile), and models
//!   that count 32 px patches (at most 1 536, the image scaled down to fit) times a
//!   per-model multiplier.
//! - Anthropic, "Vision" guide: an image larger than 1 568 px on its long edge, or than
//!   about 1.19 megapixels (1092 × 1092), is scaled down; it costs about width × height / 750
//!   tokens (at most about 1 600).
//! - Documents (Anthropic's and OpenAI's PDF support): each page is read as its text and as
//!   an image of the page; a page's text is counted here at [`PAGE_TEXT_TOKENS`].

/// Tokens counted for one page's text: Anthropic's PDF guide puts a page at 1 500 to 3 000
/// tokens of text; the top of that range.
pub const PAGE_TEXT_TOKENS: u64 = 3_000;
/// Bytes of a PDF taken for one page when its pages cannot be counted (compressed object
/// streams): a conservative (high) page count for text documents.
pub const BYTES_PER_UNCOUNTED_PAGE: u64 = 20_000;
/// Bytes of audio taken for one second when its length is not read: 128 kbit/s, the
/// smallest common rate, so the length is overestimated rather than under.
pub const AUDIO_BYTES_PER_SECOND: u64 = 16_000;
/// Audio tokens a second of input: OpenAI's audio models count about ten.
pub const AUDIO_TOKENS_PER_SECOND: u64 = 10;
/// The most tokens an Anthropic image costs after scaling; an image of unknown size costs
/// this.
pub const ANTHROPIC_IMAGE_MAX_TOKENS: u64 = 1_600;

/// How an OpenAI model counts an image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ImageRule {
    /// 512 px tiles: `base` for the image, plus `per_tile` for each tile.
    Tiles {
        /// Tokens for any image (all a `detail: low` image costs).
        base: u64,
        /// Tokens per 512 px tile.
        per_tile: u64,
    },
    /// 32 px patches, at most 1 536, times `multiplier`.
    Patches {
        /// Tokens per patch.
        multiplier: f64,
    },
}

/// The OpenAI model families and how each counts an image, most specific name first; a
/// model that matches none counts as `gpt-4o` does.
pub const OPENAI_IMAGE_RULES: &[(&str, ImageRule)] = &[
    (
        "gpt-4o-mini",
        ImageRule::Tiles {
            base: 2_833,
            per_tile: 5_667,
        },
    ),
    ("gpt-4.1-mini", ImageRule::Patches { multiplier: 1.62 }),
    ("gpt-4.1-nano", ImageRule::Patches { multiplier: 2.46 }),
    ("gpt-5-mini", ImageRule::Patches { multiplier: 1.62 }),
    ("gpt-5-nano", ImageRule::Patches { multiplier: 2.46 }),
    ("o4-mini", ImageRule::Patches { multiplier: 1.72 }),
    (
        "gpt-5",
        ImageRule::Tiles {
            base: 70,
            per_tile: 140,
        },
    ),
    (
        "o1",
        ImageRule::Tiles {
            base: 75,
            per_tile: 150,
        },
    ),
    (
        "o3",
        ImageRule::Tiles {
            base: 75,
            per_tile: 150,
        },
    ),
    (
        "gpt-4o",
        ImageRule::Tiles {
            base: 85,
            per_tile: 170,
        },
    ),
    (
        "gpt-4.1",
        ImageRule::Tiles {
            base: 85,
            per_tile: 170,
        },
    ),
];

/// The rule an OpenAI `model` counts images by.
pub fn openai_rule(model: &str) -> ImageRule {
    OPENAI_IMAGE_RULES
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(
            ImageRule::Tiles {
                base: 85,
                per_tile: 170,
            },
            |(_, rule)| *rule,
        )
}

/// Tokens an OpenAI `model` counts for an image of `size` (width, height; `None` when not
/// known: the largest an image can cost) at `detail` (`low`, `high`, `auto`; `auto` is
/// counted as `high`).
pub fn openai_image_tokens(model: &str, size: Option<(u32, u32)>, detail: Option<&str>) -> u64 {
    match openai_rule(model) {
        ImageRule::Tiles { base, per_tile } => {
            if detail.is_some_and(|d| d.eq_ignore_ascii_case("low")) {
                return base;
            }
            // Unknown: the most tiles a 2048 × 768 image takes, 4 × 2.
            let tiles = size.map_or(8, |(w, h)| {
                let (w, h) = fit(f64::from(w), f64::from(h), 2048.0);
                let short = w.min(h);
                let (w, h) = if short > 768.0 {
                    (w * 768.0 / short, h * 768.0 / short)
                } else {
                    (w, h)
                };
                ceil_div(w, 512.0) * ceil_div(h, 512.0)
            });
            base + per_tile * tiles
        }
        ImageRule::Patches { multiplier } => {
            let patches = size.map_or(1_536, |(w, h)| patches(f64::from(w), f64::from(h)));
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "at most 1 536 patches times a small multiplier"
            )]
            let tokens = (patches as f64 * multiplier).ceil() as u64;
            tokens
        }
    }
}

/// 32 px patches of a `w` × `h` image, scaled down to fit 1 536 as OpenAI's guide does.
fn patches(w: f64, h: f64) -> u64 {
    const MAX: f64 = 1_536.0;
    let raw = ceil_div(w, 32.0) * ceil_div(h, 32.0);
    if raw as f64 <= MAX {
        return raw;
    }
    let shrink = (32.0 * 32.0 * MAX / (w * h)).sqrt();
    let (sw, sh) = (w * shrink, h * shrink);
    let adjust = ((sw / 32.0).floor() / (sw / 32.0)).min((sh / 32.0).floor() / (sh / 32.0));
    (ceil_div(sw * adjust, 32.0) * ceil_div(sh * adjust, 32.0)).min(1_536)
}

/// Tokens Anthropic counts for an image of `size` (`None`: the most an image costs).
pub fn anthropic_image_tokens(size: Option<(u32, u32)>) -> u64 {
    let Some((w, h)) = size else {
        return ANTHROPIC_IMAGE_MAX_TOKENS;
    };
    let (w, h) = fit(f64::from(w), f64::from(h), 1_568.0);
    // At most 1092 × 1092 pixels' worth (about 1.19 megapixels), whatever the shape: the
    // largest image the guide's table shows unscaled.
    const MAX_PIXELS: f64 = 1_092.0 * 1_092.0;
    let (w, h) = if w * h > MAX_PIXELS {
        let s = (MAX_PIXELS / (w * h)).sqrt();
        (w * s, h * s)
    } else {
        (w, h)
    };
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "at most 1.15 megapixels / 750"
    )]
    let tokens = (w * h / 750.0).ceil() as u64;
    tokens.clamp(1, ANTHROPIC_IMAGE_MAX_TOKENS)
}

/// Pages of a document: counted when they could be, else one per
/// [`BYTES_PER_UNCOUNTED_PAGE`] of its `bytes` (at least one).
pub fn document_pages(pages: Option<u32>, bytes: Option<u64>) -> u64 {
    pages.map_or_else(
        || bytes.unwrap_or(0).div_ceil(BYTES_PER_UNCOUNTED_PAGE).max(1),
        u64::from,
    )
}

/// Tokens of audio of `bytes` (its length overestimated, see [`AUDIO_BYTES_PER_SECOND`]);
/// a part given by URL counts as one minute.
pub fn audio_tokens(bytes: Option<u64>) -> u64 {
    let seconds = bytes.map_or(60, |b| b.div_ceil(AUDIO_BYTES_PER_SECOND));
    seconds.max(1) * AUDIO_TOKENS_PER_SECOND
}

/// Scales `w` × `h` down (never up) to fit a `max` × `max` square.
fn fit(w: f64, h: f64, max: f64) -> (f64, f64) {
    let long = w.max(h);
    if long > max {
        (w * max / long, h * max / long)
    } else {
        (w, h)
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "pixel counts of at most a few thousand"
)]
fn ceil_div(x: f64, by: f64) -> u64 {
    (x / by).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_tiles_match_the_guides_examples() {
        // The guide: 1024 × 1024 high → 765 tokens; 2048 × 4096 → 1 105; low → 85.
        assert_eq!(
            openai_image_tokens("gpt-4o", Some((1024, 1024)), Some("high")),
            765
        );
        assert_eq!(
            openai_image_tokens("gpt-4o", Some((2048, 4096)), None),
            1_105
        );
        assert_eq!(
            openai_image_tokens("gpt-4o-2024-08-06", Some((4096, 4096)), Some("low")),
            85
        );
        assert_eq!(openai_image_tokens("gpt-4o", None, None), 85 + 8 * 170);
    }

    #[test]
    fn openai_patches_match_the_guides_examples() {
        // The guide: 1024 × 1024 → 1 024 patches; 1800 × 2400 → 1 452 patches (scaled).
        assert_eq!(patches(1024.0, 1024.0), 1_024);
        assert_eq!(patches(1800.0, 2400.0), 1_452);
        assert_eq!(
            openai_image_tokens("gpt-4.1-mini", Some((1024, 1024)), None),
            (1_024.0_f64 * 1.62).ceil() as u64
        );
    }

    #[test]
    fn anthropic_counts_pixels_over_750_after_scaling() {
        assert_eq!(anthropic_image_tokens(Some((1092, 1092))), 1_590);
        assert_eq!(anthropic_image_tokens(Some((200, 200))), 54);
        assert!(anthropic_image_tokens(Some((8000, 8000))) <= ANTHROPIC_IMAGE_MAX_TOKENS);
        assert_eq!(anthropic_image_tokens(None), ANTHROPIC_IMAGE_MAX_TOKENS);
    }

    #[test]
    fn documents_and_audio_have_conservative_figures() {
        assert_eq!(document_pages(Some(3), Some(10)), 3);
        assert_eq!(document_pages(None, Some(50_000)), 3);
        assert_eq!(document_pages(None, None), 1);
        assert_eq!(audio_tokens(Some(32_000)), 20);
        assert_eq!(audio_tokens(None), 600);
    }
}
