//! Text a person writes into the journal, and how text read back from it is shown.
//!
//! An operator's name is printed on a line of its own kind (`decision: ... by ops@example`)
//! and copied into the audit log. A name with a newline could print a second, forged decision
//! line; one with a terminal escape could rewrite the screen; a right-to-left override could
//! make `ops` read as someone else. So the library, not only the CLI, refuses such text before
//! it is stored ([`check_operator`], [`check_note`], [`check_operation_id`]); and because an
//! old or tampered journal may hold anything, whatever is printed from it goes through
//! [`shown`], which escapes every character that is not plainly visible.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::JournalError;

/// The longest operator name, in bytes (an email address fits).
pub const MAX_OPERATOR_BYTES: usize = 256;
/// The longest note on a decision, in bytes.
pub const MAX_NOTE_BYTES: usize = 4096;
/// The longest operation id, in bytes.
pub const MAX_OPERATION_ID_BYTES: usize = 256;

/// Whether `c` changes how the text around it reads without showing itself: control
/// characters (C0, DEL, C1), line and paragraph separators, zero-width characters and the
/// bidirectional overrides and isolates.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// `text` with every hidden character (see the module docs) written as an escape: `\n`,
/// `\t`, `\r`, `\\` for a backslash, `\u{..}` for the others. Plain text comes back borrowed.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c) || c == '\\') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `json` (JSON text) with every hidden character outside ASCII control codes written as a
/// JSON `\uXXXX` escape, so that it stays valid JSON and prints as one plain line. Control
/// codes are already escaped by any JSON serializer; the characters escaped here are all in
/// the Basic Multilingual Plane, so one `\uXXXX` each is exact.
pub fn shown_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(hidden) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if hidden(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn refuse(field: &'static str, problem: impl Into<String>) -> JournalError {
    JournalError::Text {
        field,
        problem: problem.into(),
    }
}

/// The first hidden character of `text`, described for an error message.
fn first_hidden(text: &str) -> Option<String> {
    text.chars().find(|&c| hidden(c)).map(|c| match c {
        '\n' | '\r' | '\u{2028}' | '\u{2029}' => "a line break".to_owned(),
        c => format!("the invisible character U+{:04X}", u32::from(c)),
    })
}

/// Checks an operator's name (who decides, who asks to see a body): not empty, one line, no
/// control or invisible characters, no surrounding spaces, at most
/// [`MAX_OPERATOR_BYTES`] bytes.
///
/// # Errors
/// [`JournalError::Text`] saying what is wrong.
pub fn check_operator(name: &str) -> Result<(), JournalError> {
    const FIELD: &str = "the operator's name";
    if name.trim().is_empty() {
        return Err(refuse(
            FIELD,
            "is empty: name who decides (a user name or an email address)",
        ));
    }
    if let Some(what) = first_hidden(name) {
        return Err(refuse(
            FIELD,
            format!(
                "contains {what} ({}): a name is one line of visible characters",
                shown(name)
            ),
        ));
    }
    if name.trim() != name {
        return Err(refuse(
            FIELD,
            format!("starts or ends with a space (`{name}`): write it without"),
        ));
    }
    if name.len() > MAX_OPERATOR_BYTES {
        return Err(refuse(
            FIELD,
            format!("is {} bytes long: at most {MAX_OPERATOR_BYTES}", name.len()),
        ));
    }
    Ok(())
}

/// Checks a decision's note: one line of visible characters (it may be empty), at most
/// [`MAX_NOTE_BYTES`] bytes.
///
/// # Errors
/// [`JournalError::Text`] saying what is wrong.
pub fn check_note(note: &str) -> Result<(), JournalError> {
    const FIELD: &str = "the note";
    if let Some(what) = first_hidden(note) {
        return Err(refuse(
            FIELD,
            format!("contains {what}: a note is one line of visible characters"),
        ));
    }
    if note.len() > MAX_NOTE_BYTES {
        return Err(refuse(
            FIELD,
            format!("is {} bytes long: at most {MAX_NOTE_BYTES}", note.len()),
        ));
    }
    Ok(())
}

/// Checks an operation id a person found at the provider: printable ASCII without spaces
/// (`pi_3Nx...`, `12345`, a UUID), at most [`MAX_OPERATION_ID_BYTES`] bytes.
///
/// # Errors
/// [`JournalError::Text`] saying what is wrong.
pub fn check_operation_id(id: &str) -> Result<(), JournalError> {
    const FIELD: &str = "the operation id";
    if id.is_empty() {
        return Err(refuse(
            FIELD,
            "is empty: give the id the provider shows, or leave it out",
        ));
    }
    if let Some(c) = id.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(refuse(
            FIELD,
            format!(
                "contains `{}` ({}): an id is printable ASCII without spaces, as the provider \
                 shows it",
                shown(&c.to_string()),
                shown(id)
            ),
        ));
    }
    if id.len() > MAX_OPERATION_ID_BYTES {
        return Err(refuse(
            FIELD,
            format!(
                "is {} bytes long: at most {MAX_OPERATION_ID_BYTES}",
                id.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_shown_as_it_is_and_hidden_characters_escaped() {
        assert!(matches!(shown("ops@example.com"), Cow::Borrowed(_)));
        assert_eq!(shown("café ✓"), "café ✓");
        assert_eq!(
            shown("ops\ndecision: x\u{1b}[2K\u{202e}\\"),
            "ops\\ndecision: x\\u{1b}[2K\\u{202e}\\\\"
        );
        assert_eq!(shown("\u{9b}\u{2028}\u{200b}"), "\\u{9b}\\u{2028}\\u{200b}");
        let json = shown_json("{\"a\":\"x\u{202e}y\u{85}\"}");
        assert_eq!(json, "{\"a\":\"x\\u202ey\\u0085\"}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["a"], "x\u{202e}y\u{85}");
    }

    #[test]
    fn an_operator_name_is_one_visible_line_of_bounded_length() {
        for good in ["ops@example.com", "Zoë Müller", "ops-team/oncall", "a"] {
            check_operator(good).unwrap();
        }
        for (bad, says) in [
            ("", "is empty"),
            ("   ", "is empty"),
            (
                "ops\ndecision: action approval `send-as-new` by boss",
                "a line break",
            ),
            ("ops\r", "a line break"),
            ("ops\u{2028}x", "a line break"),
            ("ops\u{1b}[2K", "U+001B"),
            ("ops\u{202e}moc", "U+202E"),
            ("zero\u{200b}width", "U+200B"),
            (" ops", "space"),
        ] {
            let e = check_operator(bad).unwrap_err().to_string();
            assert!(e.starts_with("the operator's name "), "{e}");
            assert!(e.contains(says), "{bad:?}: {e}");
            assert!(!e.contains('\n') && !e.contains('\u{1b}'), "{e}");
        }
        check_operator(&"a".repeat(MAX_OPERATOR_BYTES)).unwrap();
        let e = check_operator(&"a".repeat(MAX_OPERATOR_BYTES + 1)).unwrap_err();
        assert!(e.to_string().contains("at most 256"), "{e}");
    }

    #[test]
    fn notes_and_operation_ids_are_bounded_and_visible() {
        check_note("").unwrap();
        check_note("found it in the dashboard").unwrap();
        assert!(check_note("one\ntwo").is_err());
        assert!(check_note(&"n".repeat(MAX_NOTE_BYTES + 1)).is_err());
        check_operation_id("pi_3NxABC").unwrap();
        check_operation_id("6f1c2a9e-0b7d-4e1a-9c3f-2d5e8a7b1c40").unwrap();
        for bad in ["", "pi 3", "pi_\n", "pi_é"] {
            let e = check_operation_id(bad).unwrap_err().to_string();
            assert!(e.starts_with("the operation id "), "{e}");
        }
        assert!(check_operation_id(&"x".repeat(MAX_OPERATION_ID_BYTES + 1)).is_err());
    }
}
