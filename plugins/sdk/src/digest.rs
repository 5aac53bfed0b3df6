//! What a request body says about its cost, read in one pass without keeping the body:
//! its length, the characters of its text, the media it carries (images with their pixel
//! size, documents with their pages, audio) and its small scalar fields (`model`,
//! `max_tokens`, `stream`).
//!
//! The host reads every body this way outside the sandbox and hands the [`BodyDigest`] to the
//! plugin with a bounded prefix of the body, so a plugin prices a 20 MB request (a long
//! context, a document, an image) within its memory and deadline. A plugin can run the same
//! reader on a body itself (its unit tests do, through `test::request`).
//!
//! # What counts as media
//!
//! Providers carry media in JSON in a few shapes, all recognised here:
//!
//! - a data URL, `data:<media type>;base64,<data>`, where a media part carries one: under a
//!   `url` key in an object that is a media part (OpenAI's `image_url.url`), under an
//!   `image_url`, `file_url` or `file_data` key (`input_image.image_url`, `file.file_data`),
//!   or as the string a media key names (`"image": "data:..."`);
//! - base64 data under a `data` key beside a `media_type`, `mime_type` (`mimeType`) or
//!   `format` key (Anthropic's `source`, Gemini's `inline_data` or `inlineData`, OpenAI's
//!   `input_audio`);
//! - a link under a `url` key (or an `image_url` or `file_url` string) in an object that is a
//!   media part by its `type` (`image`, `image_url`, `input_image`, `document`, `file`,
//!   `input_file`, `url`) or by the key it stands under (`image_url`, `source`, `file`,
//!   `image`, `document`), and Gemini's `fileUri` (`https://` or `gs://`) wherever it stands;
//! - Amazon Bedrock's parts (Converse, and Nova's own format): base64 `bytes` in a `source`
//!   object, or an `s3://` link under `source.s3Location.uri`, whose kind is the key the part
//!   stands under (`image`, `document`, `video`) and whose media type is that part's
//!   `format` (`png`, `pdf`, `txt`, `mp4`) when the bytes do not show it.
//!
//! An image's width and height come from its header (PNG, GIF, WebP, JPEG), decoded from the
//! first bytes of its base64 only; a PDF's pages are counted from its page objects. Every
//! other string is text, counted in characters — a data URL in a message's text too: the
//! provider bills it as text, and counting it as one picture would price it far below that.
//!
//! # The fields that decide cost
//!
//! The [`COST_FIELDS`] (`model`, the output maxima, `stream`, `n` and their equivalents) are
//! kept wherever they stand in their object, past the bound on other fields: a body cannot
//! hide its model behind many other fields. A key given twice in the body's object, or in
//! an object directly under it, is named in the host's field [`DUPLICATE_KEY`] (read with
//! [`BodyDigest::duplicate_key`]), and the host refuses the body: a reader that
//! takes the first and a provider that takes the last would not agree on the cost.
//!
//! Bounds: at most [`MAX_MEDIA`] parts are described (the rest are counted), at most
//! [`MAX_FIELDS`] fields of at most [`MAX_FIELD_BYTES`] each, and the body is nested at most
//! 128 levels deep (deeper JSON is not read: `json` is false).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The longest prefix of a request body a plugin is shown, in bytes: 64 KiB. The digest
/// describes the whole body.
pub const BODY_PREFIX: usize = 64 << 10;
/// The most media parts a digest describes; more are counted in
/// [`BodyDigest::media_omitted`].
pub const MAX_MEDIA: usize = 256;
/// The most scalar fields a digest keeps.
pub const MAX_FIELDS: usize = 64;
/// The longest field value kept, in bytes of its JSON text; longer ones are left out.
pub const MAX_FIELD_BYTES: usize = 256;
/// A `data` string shorter than this is text, whatever its neighbours say.
const MIN_INLINE_BYTES: usize = 64;

/// What a request body says about its cost.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BodyDigest {
    /// The whole body's length in bytes.
    pub length: u64,
    /// Whether the body is JSON that was read to its end. When false, only `length`
    /// describes the body.
    pub json: bool,
    /// Characters of text: every JSON string value that is not a media part.
    pub text_chars: u64,
    /// The media parts, in the order they appear (at most [`MAX_MEDIA`]).
    pub media: Vec<MediaPart>,
    /// Media parts past the first [`MAX_MEDIA`].
    pub media_omitted: u32,
    /// Scalar fields at the top level and one level down, as a dotted name and the value's
    /// JSON text (`"gpt-4o"` with its quotes, `1024`, `true`), in the order they appear.
    pub fields: Vec<(String, String)>,
}

/// The fields a provider's cost depends on, kept past [`MAX_FIELDS`] wherever they stand in
/// their object: the model, the output maxima, streaming and the number of choices, under
/// OpenAI's, Anthropic's and Gemini's names, and the output maxima of Amazon Bedrock's
/// Converse and of the model formats it invokes (Titan's, Nova's, Llama's, Claude's text
/// completions).
pub const COST_FIELDS: [&str; 16] = [
    "model",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "n",
    "stream",
    "stream_options.include_usage",
    "generationConfig.maxOutputTokens",
    "generationConfig.candidateCount",
    "generation_config.max_output_tokens",
    "generation_config.candidate_count",
    "inferenceConfig.maxTokens",
    "inferenceConfig.max_new_tokens",
    "textGenerationConfig.maxTokenCount",
    "max_gen_len",
    "max_tokens_to_sample",
];

/// What kind of media a part is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaKind {
    /// A picture.
    Image,
    /// A document (PDF, text file...).
    Document,
    /// Sound.
    Audio,
    /// Anything else carried as data.
    Other,
}

/// One media part of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaPart {
    /// What it is.
    pub kind: MediaKind,
    /// Its media type, as the request states it or as its bytes show it.
    pub media_type: Option<String>,
    /// Its decoded size in bytes; `None` for a part given by URL.
    pub bytes: Option<u64>,
    /// An image's width in pixels, from its header.
    pub width: Option<u32>,
    /// An image's height in pixels, from its header.
    pub height: Option<u32>,
    /// A PDF's pages, counted from its page objects.
    pub pages: Option<u32>,
    /// The detail the request asks for (`low`, `high`, `auto`), when it says.
    pub detail: Option<String>,
    /// Whether the part is given by URL: its size is not known until it is fetched.
    pub by_url: bool,
}

/// Reads `body` into its digest.
pub fn digest(body: &[u8]) -> BodyDigest {
    let mut d = BodyDigest {
        length: u64::try_from(body.len()).unwrap_or(u64::MAX),
        ..BodyDigest::default()
    };
    let starts_json = body
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'['));
    if !starts_json {
        return d;
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let mut walk = Walk {
        d: &mut d,
        path: Vec::new(),
        open: Vec::new(),
        duplicate: None,
    };
    let read = Node {
        walk: &mut walk,
        key: None,
        depth: 0,
    }
    .deserialize(&mut de)
    .is_ok()
        && de.end().is_ok();
    let duplicate = walk.duplicate.take();
    if read {
        d.json = true;
        if let Some(key) = duplicate {
            // A host's field, past the bound on the body's: a body cannot set it.
            let value = serde_json::to_string(&key).unwrap_or_default();
            d.fields.push((DUPLICATE_KEY.to_owned(), value));
        }
    } else {
        let length = d.length;
        d = BodyDigest {
            length,
            ..BodyDigest::default()
        };
    }
    d
}

/// The walk's state: the digest being filled and the keys above the current value.
struct Walk<'d> {
    d: &'d mut BodyDigest,
    path: Vec<String>,
    /// Each object open around the current value: its `type` (empty while unknown), and
    /// the media parts of its children whose kind only its type can tell (an Anthropic
    /// `source` of type `url` is an image by its parent's type, which may come after it).
    open: Vec<(String, Vec<usize>)>,
    /// The first key given twice in the body's object or one directly under it.
    duplicate: Option<String>,
}

impl Walk<'_> {
    fn text(&mut self, s: &str) {
        let chars = s.bytes().filter(|b| (b & 0xC0) != 0x80).count();
        self.d.text_chars = self
            .d
            .text_chars
            .saturating_add(u64::try_from(chars).unwrap_or(u64::MAX));
    }

    fn media(&mut self, part: MediaPart) {
        if self.d.media.len() < MAX_MEDIA {
            self.d.media.push(part);
        } else {
            self.d.media_omitted = self.d.media_omitted.saturating_add(1);
        }
    }

    /// The dotted name of `key` at `depth` (1 or 2).
    fn dotted(&self, depth: usize, key: &str) -> String {
        if depth == 1 {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path.last().map_or("", String::as_str))
        }
    }

    /// Whether `key` at `depth` (1 or 2) is one of the [`COST_FIELDS`], asked without
    /// making its dotted name: past the bound this runs for every scalar left out.
    fn is_cost_field(&self, depth: usize, key: &str) -> bool {
        let parent = (depth == 2).then(|| self.path.last().map_or("", String::as_str));
        COST_FIELDS.iter().any(|f| match f.split_once('.') {
            Some((p, k)) => parent == Some(p) && k == key,
            None => parent.is_none() && *f == key,
        })
    }

    /// Keeps a scalar at depth 1 or 2 as a field: any of them up to [`MAX_FIELDS`], the
    /// [`COST_FIELDS`] always.
    fn field(&mut self, depth: usize, key: Option<&str>, json: impl FnOnce() -> String) {
        let Some(key) = key else { return };
        if !(1..=2).contains(&depth)
            || self.d.fields.len() >= MAX_FIELDS && !self.is_cost_field(depth, key)
        {
            return;
        }
        let value = json();
        if value.len() > MAX_FIELD_BYTES {
            return;
        }
        let name = self.dotted(depth, key);
        if name.starts_with(HOST_FIELDS) {
            // The names the host's own settings take ([`DEFAULT_MAX_OUTPUT`]): a body
            // cannot set them.
            return;
        }
        self.d.fields.push((name, value));
    }
}

/// One value of the body, with the key it stands under.
struct Node<'w, 'd> {
    walk: &'w mut Walk<'d>,
    key: Option<&'w str>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.walk.field(self.depth, self.key, || v.to_string());
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.walk.field(self.depth, self.key, || v.to_string());
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.walk.field(self.depth, self.key, || v.to_string());
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.walk.field(self.depth, self.key, || v.to_string());
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.walk.field(self.depth, self.key, || "null".into());
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        // A string in an array or at the top (no key) or in an object (a key): text, but a
        // data URL that a media key names (`"image": "data:..."`); the rules of the keys
        // that make an object a media part are applied in `visit_map`.
        match self
            .key
            .filter(|k| is_media_word(k))
            .and_then(|_| data_url(v))
        {
            Some(part) => self.walk.media(part),
            None => self.walk.text(v),
        }
        if v.len() + 2 <= MAX_FIELD_BYTES {
            self.walk.field(self.depth, self.key, || {
                serde_json::to_string(v).unwrap_or_default()
            });
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.depth >= 128 {
            return Err(de::Error::custom("nested too deep"));
        }
        while seq
            .next_element_seed(Node {
                walk: &mut *self.walk,
                key: None,
                depth: self.depth + 1,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.depth >= 128 {
            return Err(de::Error::custom("nested too deep"));
        }
        let mut object = Object::default();
        // Keys seen in the body's object and those directly under it, for duplicates:
        // borrowed from the body (but for keys written with escapes), so a body of a million
        // keys costs the set's table, not a copy of each key.
        let mut seen = (self.depth <= 1).then(std::collections::HashSet::<Cow<'de, str>>::new);
        let pushed = self.key.map(str::to_owned);
        if let Some(k) = &pushed {
            self.walk.path.push(k.clone());
        }
        self.walk.open.push((String::new(), Vec::new()));
        while let Some(key) = map.next_key_seed(Key)? {
            let depth = self.depth + 1;
            if let Some(seen) = &mut seen
                && !seen.insert(key.clone())
                && self.walk.duplicate.is_none()
            {
                self.walk.duplicate = Some(self.walk.dotted(depth, &key));
            }
            if DECIDING.contains(&key.as_ref()) {
                // The strings that decide whether this object is a media part, and the data
                // it may carry: held (borrowed from the body where they can be) until the
                // object ends, since keys come in any order.
                map.next_value_seed(Held {
                    walk: &mut *self.walk,
                    key: &key,
                    depth,
                    object: &mut object,
                })?;
            } else {
                map.next_value_seed(Node {
                    walk: &mut *self.walk,
                    key: Some(&key),
                    depth,
                })?;
            }
        }
        if pushed.is_some() {
            self.walk.path.pop();
        }
        object.settle(self.walk, self.key);
        if let Some((kind_word, pending)) = self.walk.open.pop() {
            let key = self.key.unwrap_or("");
            let kind = kind_from_words(&[&kind_word, key]);
            let format = object.get("format").and_then(|f| format_type(key, f));
            for i in pending {
                if let Some(part) = self.walk.d.media.get_mut(i) {
                    if part.media_type.is_none() {
                        part.media_type.clone_from(&format);
                    }
                    if part.kind == MediaKind::Other {
                        part.kind = match part.media_type.as_deref().map(kind_of) {
                            Some(k) if k != MediaKind::Other => k,
                            _ => kind,
                        };
                    }
                }
            }
        }
        Ok(())
    }
}

/// An object's key, borrowed from the body when it holds no escape. (`Cow<str>`'s own
/// `Deserialize` always copies: a string for every key of every message of a long
/// conversation.)
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object's key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// The keys whose strings decide whether an object is a media part, or carry its data.
const DECIDING: [&str; 14] = [
    "type",
    "media_type",
    "mime_type",
    "mimeType",
    "format",
    "detail",
    "data",
    "file_data",
    "url",
    "image_url",
    "file_url",
    "fileUri",
    "bytes",
    "uri",
];

/// A value under one of the [`DECIDING`] keys: a string is held in its object; anything
/// else is read as any other value.
struct Held<'w, 'd, 'o, 'de> {
    walk: &'w mut Walk<'d>,
    key: &'w str,
    depth: usize,
    object: &'o mut Object<'de>,
}

impl<'w, 'd> Held<'w, 'd, '_, '_> {
    fn node(self) -> Node<'w, 'd> {
        Node {
            walk: self.walk,
            key: Some(self.key),
            depth: self.depth,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Held<'_, '_, '_, 'de> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Held<'_, '_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<(), E> {
        self.hold(Cow::Borrowed(v));
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.hold(Cow::Owned(v.to_owned()));
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.node().visit_bool(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.node().visit_i64(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.node().visit_u64(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.node().visit_f64(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.node().visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        self.node().visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        self.node().visit_map(map)
    }
}

impl<'de> Held<'_, '_, '_, 'de> {
    fn hold(self, v: Cow<'de, str>) {
        if v.len() + 2 <= MAX_FIELD_BYTES {
            self.walk.field(self.depth, Some(self.key), || {
                serde_json::to_string(v.as_ref()).unwrap_or_default()
            });
        }
        if self.key == "type"
            && let Some((slot, _)) = self.walk.open.last_mut()
        {
            slot.clone_from(&v.to_string());
        }
        self.object.strings.push((self.key.to_owned(), v));
    }
}

/// The deciding strings of one object, held until it ends.
#[derive(Default)]
struct Object<'de> {
    strings: Vec<(String, Cow<'de, str>)>,
}

impl Object<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.strings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Counts each held string as media or text, now that the whole object is known.
    fn settle(&self, walk: &mut Walk<'_>, under: Option<&str>) {
        let kind_word = self.get("type").unwrap_or("");
        let stated_type = self
            .get("media_type")
            .or_else(|| self.get("mime_type"))
            .or_else(|| self.get("mimeType"))
            .map(str::to_owned)
            .or_else(|| self.get("format").map(audio_type));
        let detail = self.get("detail").map(str::to_owned);
        let media_object = is_media_word(kind_word) || under.is_some_and(is_media_word);
        for (key, value) in &self.strings {
            let value = value.as_ref();
            // A data URL is media where a media part carries one; elsewhere (a `data`, a
            // `type`) it is text.
            let carries = matches!(key.as_str(), "url" | "image_url" | "file_url" | "file_data")
                && (media_object || key != "url");
            if carries && let Some(mut part) = data_url(value) {
                part.detail.clone_from(&detail);
                walk.media(part);
                continue;
            }
            let inline = matches!(key.as_str(), "data" | "file_data")
                && value.len() >= MIN_INLINE_BYTES
                && (stated_type.is_some() || kind_word == "base64");
            if inline {
                let mut part = inline_part(value, stated_type.as_deref());
                part.detail.clone_from(&detail);
                walk.media(part);
                continue;
            }
            if let Some(part) = bedrock_part(walk, under, key, value) {
                walk.media(part);
                continue;
            }
            let link = matches!(key.as_str(), "url" | "image_url" | "file_url" | "fileUri")
                && (media_object || key != "url")
                && (value.starts_with("https://")
                    || value.starts_with("http://")
                    || (key == "fileUri" && value.starts_with("gs://")));
            if link {
                let kind = stated_type
                    .as_deref()
                    .map(kind_of)
                    .unwrap_or_else(|| kind_from_words(&[kind_word, under.unwrap_or(""), key]));
                if kind == MediaKind::Other {
                    // Its parent's type may tell, once the parent ends.
                    let index = walk.d.media.len();
                    let depth = walk.open.len();
                    if index < MAX_MEDIA
                        && let Some((_, pending)) =
                            depth.checked_sub(2).and_then(|i| walk.open.get_mut(i))
                    {
                        pending.push(index);
                    }
                }
                walk.media(MediaPart {
                    kind,
                    media_type: stated_type.clone(),
                    bytes: None,
                    width: None,
                    height: None,
                    pages: None,
                    detail: detail.clone(),
                    by_url: true,
                });
                continue;
            }
            if !matches!(
                key.as_str(),
                "type" | "media_type" | "mime_type" | "mimeType" | "format" | "detail"
            ) {
                walk.text(value);
            }
        }
    }
}

/// An Amazon Bedrock media part, when `key` and `value` of an object under `under` are one:
/// base64 `bytes` in a `source`, or an `s3://` `uri` in a `source.s3Location`. Its kind,
/// when its bytes do not show it, and its media type are the part's (`image`, `document`,
/// `video`, with its `format`), which ends after it: it is left for the part to settle.
fn bedrock_part(
    walk: &mut Walk<'_>,
    under: Option<&str>,
    key: &str,
    value: &str,
) -> Option<MediaPart> {
    // How far up the part's object is: `image.source.bytes`, `image.source.s3Location.uri`.
    let up = match (key, under) {
        ("bytes", Some("source")) if value.len() >= MIN_INLINE_BYTES => 2,
        ("uri", Some("s3Location")) if value.starts_with("s3://") => 3,
        _ => return None,
    };
    let part = if up == 2 {
        inline_part(value, None)
    } else {
        MediaPart {
            kind: MediaKind::Other,
            media_type: None,
            bytes: None,
            width: None,
            height: None,
            pages: None,
            detail: None,
            by_url: true,
        }
    };
    let index = walk.d.media.len();
    let depth = walk.open.len();
    if index < MAX_MEDIA
        && let Some((_, pending)) = depth.checked_sub(up).and_then(|i| walk.open.get_mut(i))
    {
        pending.push(index);
    }
    Some(part)
}

/// The media type a Bedrock part's `format` names, by the key the part stands under:
/// `image` `png` is `image/png`, `video` `mp4` `video/mp4`, `document` `txt` `text/plain`.
fn format_type(key: &str, format: &str) -> Option<String> {
    if format.is_empty()
        || format.len() > 16
        || !format
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return None;
    }
    let f = format.to_ascii_lowercase();
    Some(match (key, f.as_str()) {
        ("image", "jpg") => "image/jpeg".to_owned(),
        ("image", _) => format!("image/{f}"),
        ("video", "three_gp") => "video/3gpp".to_owned(),
        ("video", "mov") => "video/quicktime".to_owned(),
        ("video", "mkv") => "video/x-matroska".to_owned(),
        ("video", _) => format!("video/{f}"),
        ("document", "pdf") => "application/pdf".to_owned(),
        ("document", "txt") => "text/plain".to_owned(),
        ("document", "md") => "text/markdown".to_owned(),
        ("document", "csv" | "html") => format!("text/{f}"),
        ("document", _) => format!("application/{f}"),
        _ => return None,
    })
}

/// Whether `word` (an object's `type`, or the key it stands under) names a media part.
fn is_media_word(word: &str) -> bool {
    matches!(
        word,
        "image"
            | "image_url"
            | "input_image"
            | "document"
            | "file"
            | "input_file"
            | "source"
            | "url"
            | "input_audio"
            | "audio"
    )
}

fn kind_from_words(words: &[&str]) -> MediaKind {
    if words.iter().any(|w| w.contains("image")) {
        MediaKind::Image
    } else if words.iter().any(|w| w.contains("audio")) {
        MediaKind::Audio
    } else if words
        .iter()
        .any(|w| w.contains("document") || w.contains("file"))
    {
        MediaKind::Document
    } else {
        MediaKind::Other
    }
}

/// The media type of an audio `format` (`wav`, `mp3`).
fn audio_type(format: &str) -> String {
    format!("audio/{format}")
}

mod fields;
mod sniff;

pub use fields::{DEFAULT_MAX_OUTPUT, DUPLICATE_KEY, HOST_FIELDS, field, set_number, string};
pub use sniff::image_size;
use sniff::{data_url, inline_part, kind_of};

#[cfg(test)]
mod tests;
