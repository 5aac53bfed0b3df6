//! Text a person writes into the journal, and how text read back from it is shown.
//!
//! An operator's name is printed on a line of its own kind (`decision: ... by ops@example`)
//! and copied into the audit log. A name with a newline could print a second, forged decision
//! line; one with a terminal escape could rewrite the screen; a right-to-left override could
//! make `ops` read as someone else; a soft hyphen or a tag character after `ops` prints
//! nothing, so the name looks like `ops` and is not. So the library, not only the CLI, refuses
//! every character that [`must_escape`] (the one set of characters sluice never prints as
//! they are) before the text is stored ([`check_operator`], [`check_note`],
//! [`check_operation_id`]); and because an old or tampered journal may hold anything,
//! whatever is printed from it goes through [`crate::printable::printable`].

use super::JournalError;
use crate::printable::{is_line_break, must_escape, printable};

/// The longest operator name, in bytes (an email address fits).
pub const MAX_OPERATOR_BYTES: usize = 256;
/// The longest note on a decision, in bytes.
pub const MAX_NOTE_BYTES: usize = 4096;
/// The longest operation id, in bytes.
pub const MAX_OPERATION_ID_BYTES: usize = 256;

fn refuse(field: &'static str, problem: impl Into<String>) -> JournalError {
    JournalError::Text {
        field,
        problem: problem.into(),
    }
}

/// The first character of `text` that must not be stored, described for an error message.
fn first_hidden(text: &str) -> Option<String> {
    text.chars().find(|&c| must_escape(c)).map(|c| {
        if is_line_break(c) {
            "a line break".to_owned()
        } else {
            format!("the invisible or control character U+{:04X}", u32::from(c))
        }
    })
}

/// Checks an operator's name (who decides, who asks to see a body): not empty, one line, no
/// character that [`must_escape`] (controls, invisible characters, whitespace other than the
/// space), no surrounding spaces, at most
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
                printable(name)
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

/// Checks a decision's note: one line of visible characters (it may be empty; no character
/// that [`must_escape`]), at most
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
                printable(&c.to_string()),
                printable(id)
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

    /// Characters a reviewer got into `--by` and `--note` past the first blocklist: each
    /// prints as nothing, so `ops` followed by one looked exactly like `ops`.
    const INVISIBLE: [char; 9] = [
        '\u{AD}',
        '\u{E0041}',
        '\u{2800}',
        '\u{3164}',
        '\u{115F}',
        '\u{180E}',
        '\u{FE0F}',
        '\u{34F}',
        '\u{1D173}',
    ];

    #[test]
    fn a_name_or_note_with_an_invisible_character_is_refused_naming_its_code_point() {
        for c in INVISIBLE
            .into_iter()
            .chain(['\u{A0}', '\t', '\u{E000}', '\u{FFFF}'])
        {
            let code = format!("U+{:04X}", u32::from(c));
            for (e, field) in [
                (check_operator(&format!("ops{c}")), "the operator's name "),
                (check_operator(&format!("o{c}ps")), "the operator's name "),
                (check_note(&format!("looks fine{c}")), "the note "),
            ] {
                let e = e.unwrap_err().to_string();
                assert!(e.starts_with(field), "{e}");
                assert!(e.contains(&code), "{c:?}: {e}");
                assert!(!e.contains(c), "the error escapes the character: {e:?}");
            }
        }
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
