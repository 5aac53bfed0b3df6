//! How a report is printed: one line per case. A case's name, a plugin's name and a
//! difference all carry text that a vector file or a plugin chose. Printed as is, a name
//! holding a newline prints a forged `ok` line, and an ANSI escape rewrites what the terminal
//! already shows. So every such piece is printed with its control characters, and the
//! invisible characters that reorder text, escaped the way Rust writes them in a string
//! (`\n`, `\u{1b}`): still readable, and never more than the one line.

use std::borrow::Cow;

use super::Report;

impl Report {
    /// The report as `sluice plugin test` prints it, one line per case:
    /// `ok   PLUGIN FILE :: NAME`, or `FAIL PLUGIN FILE :: NAME: DIFFERENCE`, with every
    /// piece passed through [`printable`].
    pub fn lines<'a>(&'a self, plugin: &'a str) -> impl Iterator<Item = String> + 'a {
        let plugin = printable(plugin);
        let path = self.path.display().to_string();
        let path = printable(&path).into_owned();
        self.results.iter().map(move |r| {
            let name = printable(&r.name);
            match &r.failure {
                None => format!("ok   {plugin} {path} :: {name}"),
                Some(diff) => format!("FAIL {plugin} {path} :: {name}: {}", printable(diff)),
            }
        })
    }
}

/// `text` with every control character (line breaks, escapes, C1 controls) and every
/// character that reorders text (bidirectional overrides and isolates, line and paragraph
/// separators) escaped as in a Rust string: `\n`, `\r`, `\t`, `\u{1b}`, `\u{202e}`. Borrowed
/// as is when it holds none.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs_escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_and_terminal_escapes_are_escaped() {
        assert_eq!(
            printable("a\nok   b\r\t\u{1b}[2K\u{7f}\u{85}"),
            r"a\nok   b\r\t\u{1b}[2K\u{7f}\u{85}"
        );
    }

    #[test]
    fn characters_that_reorder_text_are_escaped() {
        assert_eq!(
            printable("ok \u{202e}txt.exe\u{2066}\u{2028}"),
            r"ok \u{202e}txt.exe\u{2066}\u{2028}"
        );
    }

    #[test]
    fn printable_text_is_borrowed_unchanged() {
        let text = "résumé \"quoted\" \\n 日本語 ✓";
        assert!(matches!(printable(text), Cow::Borrowed(t) if t == text));
    }
}
