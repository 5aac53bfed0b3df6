//! A parse error, said on one line that shows where.
//!
//! The parser's own message draws the offending line under a gutter, as it is: a control
//! character in the file reaches the terminal (an ESC that recolours it, a CR that overprints
//! the line), and a 400 KB line prints whole. Here the message names the line and column and
//! quotes at most [`QUOTED_CHARS`] characters around the error, escaped by
//! [`printable`](crate::printable::printable), with `…` where the line was cut.

use super::ConfigError;
use crate::printable::{printable, printable_cut};

/// The most characters of a line a syntax error quotes.
pub const QUOTED_CHARS: usize = 200;

/// Characters quoted before the error's column when the line is longer than [`QUOTED_CHARS`].
const BEFORE: usize = QUOTED_CHARS / 2;

/// The error for `text` (read from `origin`) that the TOML parser refused with `error`.
pub(crate) fn error(origin: &str, text: &str, error: &toml::de::Error) -> ConfigError {
    let message = one_line(error.message());
    let message = match error.span() {
        Some(span) => {
            let mut at = span.start.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
            let line = text[..at].bytes().filter(|&b| b == b'\n').count() + 1;
            let column = text[line_start..at].chars().count() + 1;
            let quoted = quote(&text[line_start..line_end], column - 1);
            format!("line {line}, column {column}: {message}: `{quoted}`")
        }
        None => message,
    };
    ConfigError::Syntax {
        origin: origin.into(),
        message,
    }
}

/// The parser's message (which may hold a key from the file, and span lines) on one line,
/// escaped.
fn one_line(message: &str) -> String {
    let joined: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    printable(&joined.join("; ")).into_owned()
}

/// `line` escaped, cut to [`QUOTED_CHARS`] characters around the character at `column`
/// (0-based), with `…` where it was cut.
fn quote(line: &str, column: usize) -> String {
    let skip = column.saturating_sub(BEFORE);
    let start = line.char_indices().nth(skip).map_or(line.len(), |(i, _)| i);
    let cut_before = if skip > 0 { "…" } else { "" };
    format!(
        "{cut_before}{}",
        printable_cut(&line[start..], QUOTED_CHARS)
    )
}

#[cfg(test)]
mod tests {
    use crate::admission::Config;

    fn said(text: &str) -> String {
        Config::from_toml(text).unwrap_err().to_string()
    }

    #[test]
    fn a_parse_error_is_one_line_naming_line_and_column_with_the_line_escaped() {
        let e = said("margin = 0.9\n[providers.\"a\u{1b}[31m\u{ad}\"\nx = 1\n");
        assert!(e.starts_with("configuration: line 2, column "), "{e}");
        assert!(e.contains(r#"`[providers."a\u{1b}[31m\u{ad}"`"#), "{e}");
        assert!(
            !e.contains('\n') && !e.contains('\u{1b}') && !e.contains('\u{ad}'),
            "{e:?}"
        );
    }

    #[test]
    fn a_key_the_parser_quotes_is_escaped() {
        let e = said("[queue]\n\"max\u{1b}[2K\u{3164}\" = 1\n");
        assert!(e.contains(r"max\u{1b}[2K\u{3164}"), "{e}");
        assert!(!e.contains('\u{1b}') && !e.contains('\u{3164}'), "{e:?}");
    }

    #[test]
    fn a_long_line_is_quoted_around_the_error_and_cut() {
        let long = "x".repeat(400_000);
        let e = said(&format!("margin = \"{long}\u{1b}\""));
        let column = "margin = \"".len() + long.len() + 1;
        assert!(e.contains(&format!("line 1, column {column}: ")), "{e}");
        assert!(
            e.ends_with(&format!("`…{}\\u{{1b}}\"`", &long[..100])),
            "{e}"
        );
        let e = said(&format!("a = 1 =\n# {long}"));
        assert!(e.contains("line 1, column 7: "), "{e}");
        assert!(e.ends_with("`a = 1 =`"), "{e}");
        let e = said(&format!("a = = {long}"));
        assert!(e.ends_with(&format!("`a = = {}…`", &long[..194])), "{e}");
    }
}
