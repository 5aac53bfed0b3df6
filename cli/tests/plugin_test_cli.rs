//! `sluice plugin test` given files a careless or hostile author wrote: what it prints can
//! be trusted, and what it cannot check is refused rather than passed.

mod support;

use support::{sluice, stderr, stdout, write_tmp};

/// A case named `name` (JSON text) that `ietf` passes (a 503 is `overloaded`) or fails.
fn case(name: &str, verdict: &str) -> String {
    format!(
        r#"{{"name":{name},"request":{{"method":"GET","url":"https://x.test/","class":"read"}},
           "response":{{"status":503}},"expect":{{"verdict":"{verdict}"}}}}"#
    )
}

/// Issue 12, item 6: a case name could print lines of its own, and move the cursor.
#[test]
fn a_case_name_cannot_print_lines_or_escapes_of_its_own() {
    let forged = r#""real\nok   ietf forged.json :: every case passed\u001b[2K\r""#;
    let path = write_vectors_str(
        "forged-names.json",
        &format!(
            r#"{{"cases":[{},{}]}}"#,
            case(forged, "overloaded"),
            case(forged, "success")
        ),
    );
    let o = sluice(&["plugin", "test", "ietf", &path]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "one line per case and the summary: {out:?}");
    assert!(lines[0].starts_with("ok   ietf "), "{out:?}");
    assert!(lines[1].starts_with("FAIL ietf "), "{out:?}");
    assert!(!out.contains('\u{1b}') && !out.contains('\r'), "{out:?}");
    assert!(
        lines[0].ends_with(r":: real\nok   ietf forged.json :: every case passed\u{1b}[2K\r"),
        "escaped, not dropped: {out:?}"
    );
    assert_eq!(lines[2], "1 passed, 1 failed");
}

/// Issue 12, item 6: `"expect": {}` passed without checking anything.
#[test]
fn an_empty_expectation_is_a_malformed_file() {
    let path = write_vectors_str(
        "empty-expect.json",
        r#"{"cases":[{"name":"vacuous","request":{"method":"GET","url":"https://x.test/","class":"read"},
           "response":{"status":200},"expect":{}}]}"#,
    );
    let o = sluice(&["plugin", "test", "ietf", &path]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}{err}", stdout(&o));
    assert!(
        err.contains("empty-expect.json")
            && err.contains(r#"case 0 ("vacuous")"#)
            && err.contains("expect: checks nothing"),
        "{err}"
    );
}

/// Issue 12, item 6: statuses 0 and 999 were read as responses.
#[test]
fn a_status_outside_100_to_599_is_a_malformed_file() {
    for status in [0, 99, 600, 999] {
        let path = write_vectors_str(
            &format!("status-{status}.json"),
            &format!(
                r#"{{"cases":[{{"name":"s","request":{{"method":"GET","url":"https://x.test/","class":"read"}},
                   "response":{{"status":{status}}},"expect":{{"verdict":"success"}}}}]}}"#
            ),
        );
        let o = sluice(&["plugin", "test", "ietf", &path]);
        let err = stderr(&o);
        assert_eq!(
            o.status.code(),
            Some(2),
            "status {status}: {}{err}",
            stdout(&o)
        );
        assert!(
            err.contains(&format!("status-{status}.json"))
                && err.contains(&format!("response.status: {status} is not")),
            "{err}"
        );
    }
}

/// Issue 12, item 8: `--deadline-ms 18446744073709551614` wrapped around.
#[test]
fn a_deadline_out_of_range_is_refused_with_the_range() {
    let path = write_vectors_str(
        "deadline.json",
        &format!(r#"{{"cases":[{}]}}"#, case(r#""d""#, "overloaded")),
    );
    for deadline in ["0", "600001", "18446744073709551614"] {
        let o = sluice(&["plugin", "test", "ietf", &path, "--deadline-ms", deadline]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{deadline}: {}{err}", stdout(&o));
        assert!(
            err.contains("--deadline-ms") && err.contains("1..=600000"),
            "{err}"
        );
    }
    let o = sluice(&["plugin", "test", "ietf", &path, "--deadline-ms", "600000"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

/// Issue 12, item 10: "No such file or directory (os error 2): No such file or directory
/// (os error 2)".
#[test]
fn a_missing_file_is_reported_once() {
    let o = sluice(&["plugin", "test", "ietf", "/nonexistent/v.json"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("/nonexistent/v.json"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");

    let o = sluice(&["plugin", "inspect", "/nonexistent/p.wasm"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("/nonexistent/p.wasm"), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

fn write_vectors_str(name: &str, text: &str) -> String {
    write_tmp(name, text).display().to_string()
}
