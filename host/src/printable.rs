//! One way to print text that sluice did not write: a name from the journal, a key from a
//! configuration file, a case name from a vector file, a plugin's message.
//!
//! Such text reaches a terminal or a log that a person reads line by line. Printed as is, a
//! newline in it prints a second, forged line (`decision: ... by cfo`, `ok   case`); an ANSI
//! escape rewrites what the terminal already shows; a right-to-left override makes `ops`
//! read as something else; and a soft hyphen, a tag character or a Hangul filler prints
//! nothing at all, so `ops` followed by one looks exactly like `ops`. A short blocklist always
//! misses some of these, so the set here follows Unicode's own definition of characters that
//! render as nothing, plus everything that is not one plain glyph:
//!
//! - controls: C0, DEL, C1 (`char::is_control`);
//! - every `Default_Ignorable_Code_Point` (Unicode's `DerivedCoreProperties.txt`, unchanged
//!   from 15.0 to 16.0): soft hyphen, zero-width and bidirectional formatting characters,
//!   fillers, variation selectors, tag characters, ...;
//! - whitespace other than U+0020 (`char::is_whitespace`: tabs, line and paragraph
//!   separators, no-break and ideographic spaces), and the interlinear annotation controls
//!   U+FFF9 to U+FFFB;
//! - U+2800 BRAILLE PATTERN BLANK, which fonts draw empty;
//! - private-use characters and noncharacters, which mean nothing outside an agreement.
//!
//! [`printable`] writes each of them as Rust writes it in a string literal (`\n`, `\t`,
//! `\u{ad}`); [`printable_json`] writes them as JSON `\u` escapes so that JSON stays JSON.
//! Everything else, accented letters and CJK included, prints as itself. A backslash is not
//! escaped: it is visible, and text that arrives Debug-formatted (`"a\"b"`) would otherwise
//! print every escape twice. The aim is that nothing printed is invisible or breaks the line,
//! not that the text can be read back exactly.
//!
//! The journal refuses the same characters in what a person types into it (operator names,
//! notes): see [`crate::journal::text`].
//!
#![cfg_attr(feature = "internals", doc = "```")]
#![cfg_attr(not(feature = "internals"), doc = "```ignore")]
//! use sluice::printable::{must_escape, printable};
//!
//! assert_eq!(printable("ops\u{ad}"), r"ops\u{ad}");
//! assert_eq!(printable("ops\ndecision: x"), r"ops\ndecision: x");
//! assert_eq!(printable("Zoë Müller"), "Zoë Müller");
//! assert!(must_escape('\u{e0041}') && !must_escape(' '));
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// Unicode's `Default_Ignorable_Code_Point` ranges (Unicode 16.0), inclusive, in order.
const DEFAULT_IGNORABLE: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFF8}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

/// Whether `c` is a `Default_Ignorable_Code_Point`: a character that renders as nothing when
/// it is not supported, and often when it is.
pub fn is_default_ignorable(c: char) -> bool {
    DEFAULT_IGNORABLE
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Whether `c` is a private-use character (U+E000 to U+F8FF, planes 15 and 16).
fn is_private_use(c: char) -> bool {
    matches!(c, '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{FFFFD}' | '\u{100000}'..='\u{10FFFD}')
}

/// Whether `c` is a noncharacter: U+FDD0 to U+FDEF, and the last two code points of every
/// plane (U+FFFE, U+FFFF, U+1FFFE, ...).
fn is_noncharacter(c: char) -> bool {
    matches!(c, '\u{FDD0}'..='\u{FDEF}') || u32::from(c) & 0xFFFE == 0xFFFE
}

/// Whether `c` must not be printed as itself (see the module docs): a control, a
/// default-ignorable character, whitespace other than U+0020, an interlinear annotation
/// control, U+2800, a private-use character or a noncharacter.
pub fn must_escape(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    c.is_control()
        || c.is_whitespace()
        || is_default_ignorable(c)
        || matches!(c, '\u{FFF9}'..='\u{FFFB}' | '\u{2800}')
        || is_private_use(c)
        || is_noncharacter(c)
}

/// Whether `c` ends a line where it stands: LF, CR, VT, FF, NEL, or a line or paragraph
/// separator. Messages about a refused character name these "a line break".
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// `text` with every character that [`must_escape`] written as Rust writes it in a string
/// literal: `\n`, `\r`, `\t`, `\u{1b}`, `\u{ad}`, `\u{e0041}`. Borrowed, unchanged, when it
/// holds none. A backslash is kept as it is (see the module docs).
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(must_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if must_escape(c) {
            // For these characters `escape_default` gives `\t`, `\r`, `\n` or `\u{..}`.
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `json`, compact JSON text (as `serde_json` writes it: no whitespace between tokens), with
/// every character that [`must_escape`] written as a JSON `\uXXXX` escape (two, a surrogate
/// pair, beyond the Basic Multilingual Plane). Such characters can only occur inside its
/// strings, where the escape means the same character: the result is the same JSON value,
/// printed as one line of visible characters.
pub fn printable_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(must_escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if must_escape(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`printable`] `text`, cut after its first `max_chars` characters (counted before escaping)
/// with `…` when it is longer: for echoing a line of a file that may be of any length.
pub fn printable_cut(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => printable(text),
        Some((end, _)) => Cow::Owned(format!("{}…", printable(&text[..end]))),
    }
}

#[cfg(test)]
mod tests;
