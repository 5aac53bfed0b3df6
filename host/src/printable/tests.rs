use std::borrow::Cow;

use regex_syntax::hir::{Class, HirKind};

use super::*;

/// Every range of `DerivedCoreProperties.txt`'s `Default_Ignorable_Code_Point`, as the
/// Unicode 16.0 file lists it: both ends inside, both neighbours outside.
const RANGES: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

fn char_at(n: u32) -> char {
    char::from_u32(n).unwrap()
}

/// The ranges of a Unicode class as `regex-syntax` (which embeds Unicode's tables) knows it.
fn unicode_class(pattern: &str) -> Vec<(char, char)> {
    let hir = regex_syntax::parse(pattern).unwrap();
    let HirKind::Class(Class::Unicode(class)) = hir.kind() else {
        panic!("{pattern} is not a Unicode class");
    };
    class
        .ranges()
        .iter()
        .map(|r| (r.start(), r.end()))
        .collect()
}

#[test]
fn the_default_ignorable_table_is_unicodes() {
    assert_eq!(
        DEFAULT_IGNORABLE,
        unicode_class(r"\p{Default_Ignorable_Code_Point}").as_slice()
    );
    let listed: Vec<(char, char)> = RANGES
        .iter()
        .map(|&(a, b)| (char_at(a), char_at(b)))
        .collect();
    assert_eq!(DEFAULT_IGNORABLE, listed.as_slice());
}

#[test]
fn every_default_ignorable_range_is_escaped_from_end_to_end_and_not_beyond() {
    for &(low, high) in RANGES {
        for n in [low, low + (high - low) / 2, high] {
            let c = char_at(n);
            assert!(is_default_ignorable(c), "U+{n:04X}");
            assert!(must_escape(c), "U+{n:04X}");
            assert_eq!(printable(&format!("a{c}b")), format!("a\\u{{{n:x}}}b"));
        }
        for n in [low - 1, high + 1] {
            assert!(!is_default_ignorable(char_at(n)), "U+{n:04X}");
        }
    }
}

#[test]
fn controls_of_c0_del_and_c1_are_escaped_the_way_rust_writes_them() {
    for n in (0..0x20).chain(0x7F..=0x9F) {
        assert!(must_escape(char_at(n)), "U+{n:04X}");
    }
    assert_eq!(
        printable("a\nok   b\r\t\u{1b}[2K\u{7f}\u{85}\u{0}"),
        r"a\nok   b\r\t\u{1b}[2K\u{7f}\u{85}\u{0}"
    );
}

#[test]
fn whitespace_other_than_the_space_is_escaped() {
    for c in [
        '\u{A0}', '\u{1680}', '\u{2000}', '\u{200A}', '\u{2028}', '\u{2029}', '\u{202F}',
        '\u{205F}', '\u{3000}',
    ] {
        assert!(must_escape(c), "{c:?}");
    }
    assert!(!must_escape(' '));
    assert_eq!(printable("a b\u{2028}c"), r"a b\u{2028}c");
}

#[test]
fn blanks_private_use_and_noncharacters_are_escaped() {
    for n in [
        0x2800, 0xFFF9, 0xFFFB, 0xE000, 0xF8FF, 0xF0000, 0xFFFFD, 0x100000, 0x10FFFD, 0xFDD0,
        0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFE, 0x10FFFF,
    ] {
        assert!(must_escape(char_at(n)), "U+{n:04X}");
    }
    for n in [
        0x27FF, 0x2801, 0xAC00, 0xF900, 0xFDCF, 0xFDF0, 0xFFFD, 0x1FFFD,
    ] {
        assert!(!must_escape(char_at(n)), "U+{n:04X}");
    }
}

/// Checked over every code point against Unicode's own properties: the set is exactly
/// controls, default-ignorables, whitespace but the space, private use, noncharacters,
/// U+2800 and U+FFF9 to U+FFFB.
#[test]
fn the_escaped_set_is_exactly_the_documented_one() {
    let mut expected = unicode_class(
        r"[\p{Cc}\p{Default_Ignorable_Code_Point}\p{White_Space}\p{Co}\p{Noncharacter_Code_Point}\u{2800}\u{FFF9}-\u{FFFB}--\x20]",
    )
    .into_iter();
    let mut range = expected.next();
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        while range.is_some_and(|(_, high)| high < c) {
            range = expected.next();
        }
        let inside = range.is_some_and(|(low, high)| low <= c && c <= high);
        assert_eq!(must_escape(c), inside, "U+{:04X}", u32::from(c));
    }
}

#[test]
fn the_characters_a_reviewer_hid_in_a_name_are_escaped() {
    for (c, shown) in [
        ('\u{AD}', r"\u{ad}"),
        ('\u{E0041}', r"\u{e0041}"),
        ('\u{2800}', r"\u{2800}"),
        ('\u{3164}', r"\u{3164}"),
        ('\u{115F}', r"\u{115f}"),
        ('\u{180E}', r"\u{180e}"),
        ('\u{FE0F}', r"\u{fe0f}"),
        ('\u{34F}', r"\u{34f}"),
        ('\u{1D173}', r"\u{1d173}"),
    ] {
        assert_eq!(printable(&format!("ops{c}")), format!("ops{shown}"));
    }
}

#[test]
fn plain_text_is_borrowed_unchanged_backslashes_included() {
    for text in [
        "résumé \"quoted\" \\n 日本語 ✓",
        "Zoë Müller",
        "ops@example.com",
        "",
    ] {
        assert!(matches!(printable(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(printable_json(text), Cow::Borrowed(t) if t == text));
    }
}

#[test]
fn json_keeps_its_value_and_prints_on_one_visible_line() {
    let value =
        serde_json::json!({"a": "x\u{202e}y\u{85}\u{7f}", "b": "tag\u{E0041}\u{AD}", "c": "\n"});
    let json = printable_json(&value.to_string()).into_owned();
    assert!(!json.chars().any(must_escape), "{json}");
    assert!(
        json.contains(r"\u202e") && json.contains(r"\udb40\udc41"),
        "{json}"
    );
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(back, value);
}

#[test]
fn a_long_line_is_cut_with_an_ellipsis_after_escaping() {
    assert_eq!(printable_cut("short\n", 200), r"short\n");
    let long = format!("\u{1b}{}", "x".repeat(400_000));
    let cut = printable_cut(&long, 200);
    assert_eq!(cut.chars().count(), r"\u{1b}".len() + 199 + 1);
    assert!(cut.starts_with(r"\u{1b}xx") && cut.ends_with("x…"), "{cut}");
    assert_eq!(printable_cut(&"é".repeat(200), 200), "é".repeat(200));
}
