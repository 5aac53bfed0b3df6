//! Adding cases to a vector file's text without rewriting the rest: the author's layout,
//! key order and every existing case stay byte for byte, and the new cases go at the end of
//! the top-level `cases` array, one line each, as the bundled files are written.

/// `text` (a valid vector file) with `cases` (JSON objects, one line each) appended to its
/// top-level `cases` array; `None` when the array cannot be found (a key written with
/// escapes, say).
pub(super) fn append(text: &str, cases: &[String]) -> Option<String> {
    let (open, close) = cases_array(text)?;
    let inside = &text[open + 1..close];
    let joined = cases.join(",\n    ");
    let mut out = String::with_capacity(text.len() + joined.len() + 16);
    if inside.trim().is_empty() {
        out.push_str(&text[..=open]);
        out.push_str("\n    ");
        out.push_str(&joined);
        out.push_str("\n  ");
    } else {
        let last = open + 1 + inside.trim_end().len();
        out.push_str(&text[..last]);
        out.push_str(",\n    ");
        out.push_str(&joined);
        out.push_str(&text[last..close]);
    }
    out.push_str(&text[close..]);
    Some(out)
}

/// A new file holding `cases`.
pub(super) fn new_file(cases: &[String]) -> String {
    format!(
        "{{\n  \"cases\": [\n    {}\n  ]\n}}\n",
        cases.join(",\n    ")
    )
}

/// The byte offsets of the `[` and `]` of the top-level `cases` array.
fn cases_array(text: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    // The last string closed at depth 1, and whether it was followed by a colon: a key.
    let mut key: Option<&str> = None;
    let mut open = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 && open.is_none() {
                    key = text.get(start..i);
                }
            }
            b'{' | b'[' => {
                if depth == 1 && open.is_none() && key == Some("cases") && bytes[i] == b'[' {
                    open = Some(i);
                }
                depth += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 1
                    && let Some(o) = open
                {
                    return Some((o, i));
                }
            }
            b',' if depth == 1 => key = None,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_go_after_the_last_one_and_nothing_else_moves() {
        let text = "{\n  \"describe\": {\"name\": \"x\", \"cases\": [1]},\n  \"cases\": [\n    {\"name\": \"a]\"}\n  ],\n  \"writes\": []\n}\n";
        let out = append(text, &["{\"name\":\"b\"}".into()]).unwrap();
        assert_eq!(
            out,
            "{\n  \"describe\": {\"name\": \"x\", \"cases\": [1]},\n  \"cases\": [\n    {\"name\": \"a]\"},\n    {\"name\":\"b\"}\n  ],\n  \"writes\": []\n}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["cases"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn an_empty_array_gets_its_first_cases() {
        let out = append(
            "{\"writes\": [], \"cases\": []}",
            &["{}".into(), "{}".into()],
        )
        .unwrap();
        assert_eq!(out, "{\"writes\": [], \"cases\": [\n    {},\n    {}\n  ]}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["cases"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_file_without_the_array_is_left_alone() {
        assert_eq!(append("{\"c\\u0061ses\": []}", &["{}".into()]), None);
    }
}
