//! A media part read from its own bytes: its type from a data URL or its first bytes, its
//! decoded size from its base64, an image's pixel size from its header, a PDF's pages. Only
//! what these need is decoded: an image's first bytes, a PDF up to a bound.

use base64::Engine as _;

use super::{MediaKind, MediaPart};

/// How much of an image's data is decoded to find its size: a JPEG's frame header may follow
/// its metadata, which is rarely longer than this.
const IMAGE_HEAD_BYTES: usize = 256 << 10;
/// How much of a PDF is decoded to count its pages.
const PDF_SCAN_BYTES: usize = 64 << 20;

/// The kind of a media type.
pub(super) fn kind_of(media_type: &str) -> MediaKind {
    let t = media_type.to_ascii_lowercase();
    if t.starts_with("image/") {
        MediaKind::Image
    } else if t.starts_with("audio/") {
        MediaKind::Audio
    } else if t.starts_with("application/pdf") || t.starts_with("text/") {
        MediaKind::Document
    } else {
        MediaKind::Other
    }
}

/// A data URL's part: `data:<type>;base64,<data>`.
pub(super) fn data_url(s: &str) -> Option<MediaPart> {
    let rest = s.strip_prefix("data:")?;
    let comma = rest.find(',')?;
    let (meta, data) = (&rest[..comma], &rest[comma + 1..]);
    let media_type = meta.split(';').next().filter(|t| !t.is_empty());
    if !meta.split(';').any(|p| p.eq_ignore_ascii_case("base64")) {
        // Percent-encoded data: rare for media; its length stands for its size.
        return Some(MediaPart {
            kind: media_type.map_or(MediaKind::Other, kind_of),
            media_type: media_type.map(str::to_owned),
            bytes: Some(u64::try_from(data.len()).unwrap_or(u64::MAX)),
            width: None,
            height: None,
            pages: None,
            detail: None,
            by_url: false,
        });
    }
    Some(inline_part(data, media_type))
}

/// A part carried as base64 `data`, of the `stated` media type if the request says.
pub(super) fn inline_part(data: &str, stated: Option<&str>) -> MediaPart {
    let bytes = decoded_len(data);
    let head = decode_prefix(data, IMAGE_HEAD_BYTES);
    let sniffed = sniff(&head);
    let media_type = stated.map(str::to_owned).or(sniffed.map(str::to_owned));
    let kind = media_type.as_deref().map_or(MediaKind::Other, kind_of);
    let (width, height) = match kind {
        MediaKind::Image => image_size(&head).map_or((None, None), |(w, h)| (Some(w), Some(h))),
        _ => (None, None),
    };
    let pages = (media_type.as_deref() == Some("application/pdf"))
        .then(|| pdf_pages(data))
        .flatten();
    MediaPart {
        kind,
        media_type,
        bytes: Some(bytes),
        width,
        height,
        pages,
        detail: None,
        by_url: false,
    }
}

/// The decoded size of base64 `data` (padding and whitespace not counted).
fn decoded_len(data: &str) -> u64 {
    let chars = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    u64::try_from(chars * 3 / 4).unwrap_or(u64::MAX)
}

/// The first `max` bytes of base64 `data`, decoded (less where it is not base64).
fn decode_prefix(data: &str, max: usize) -> Vec<u8> {
    let take = (max.div_ceil(3) * 4).min(data.len());
    let cut = &data.as_bytes()[..take - take % 4];
    let cut: Vec<u8> = cut
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let cut = &cut[..cut.len() - cut.len() % 4];
    base64::engine::general_purpose::STANDARD
        .decode(cut)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(cut))
        .unwrap_or_default()
}

/// A media type from the first bytes of a file.
fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else if head.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WAVE" {
        Some("audio/wav")
    } else {
        None
    }
}

/// An image's width and height from its header: PNG, GIF, WebP or JPEG.
pub fn image_size(head: &[u8]) -> Option<(u32, u32)> {
    let be16 = |at: usize| {
        Some(u32::from(u16::from_be_bytes(
            head.get(at..at + 2)?.try_into().ok()?,
        )))
    };
    let le16 = |at: usize| {
        Some(u32::from(u16::from_le_bytes(
            head.get(at..at + 2)?.try_into().ok()?,
        )))
    };
    let be32 = |at: usize| Some(u32::from_be_bytes(head.get(at..at + 4)?.try_into().ok()?));
    let le24 = |at: usize| {
        let b = head.get(at..at + 3)?;
        Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
    };
    match sniff(head)? {
        "image/png" => Some((be32(16)?, be32(20)?)),
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/webp" => match head.get(12..16)? {
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            b"VP8L" => {
                let b = head.get(21..25)?;
                let bits = u32::from_le_bytes(b.try_into().ok()?);
                Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
            }
            b"VP8 " => Some((le16(26)? & 0x3FFF, le16(28)? & 0x3FFF)),
            _ => None,
        },
        "image/jpeg" => {
            // Walk the segments to the first start-of-frame marker.
            let mut at = 2;
            loop {
                while *head.get(at)? == 0xFF && *head.get(at + 1)? == 0xFF {
                    at += 1;
                }
                if *head.get(at)? != 0xFF {
                    return None;
                }
                let marker = *head.get(at + 1)?;
                let len = usize::try_from(be16(at + 2)?).ok()?;
                let frame = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
                if frame {
                    return Some((be16(at + 7)?, be16(at + 5)?));
                }
                at += 2 + len;
            }
        }
        _ => None,
    }
}

/// A PDF's pages: its `/Type /Page` objects (not `/Pages`), in at most its first
/// [`PDF_SCAN_BYTES`]. `None` when none are visible (in compressed object streams).
fn pdf_pages(data: &str) -> Option<u32> {
    let bytes = decode_prefix(data, PDF_SCAN_BYTES);
    let mut pages = 0_u32;
    let finder = memchr::memmem::Finder::new(b"/Type");
    for at in finder.find_iter(&bytes) {
        let rest = &bytes[at + 5..];
        let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
        if rest.starts_with(b"/Page") && !rest[5..].starts_with(b"s") {
            pages = pages.saturating_add(1);
        }
    }
    (pages > 0).then_some(pages)
}
