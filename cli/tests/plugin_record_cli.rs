//! `sluice plugin test --record`: captured traffic (a browser's HAR file, a `curl -i -v`
//! dump) becomes cases that the plugin then passes, without a credential written, without
//! an existing case touched, and without a name written twice.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use support::{sluice, stderr, stdout};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/record")
        .join(name)
        .display()
        .to_string()
}

/// Runs `plugin test PLUGIN --record FILE` with `more` arguments after it.
fn record(plugin: &str, file: &str, more: &[&str]) -> Output {
    let mut args = vec!["plugin", "test", plugin, "--record", file];
    args.extend(more);
    sluice(&args)
}

fn out_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("vectors.json")
}

/// Runs `plugin test PLUGIN FILE` and returns its summary line and exit code.
fn replay(plugin: &str, file: &Path) -> (String, Option<i32>) {
    let o = sluice(&["plugin", "test", plugin, &file.display().to_string()]);
    let out = stdout(&o);
    (
        out.lines().last().unwrap_or_default().to_owned(),
        o.status.code(),
    )
}

#[test]
fn a_har_file_becomes_cases_the_plugin_passes_with_no_credential_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_in(&dir);
    let o = record(
        "openai",
        &fixture("openai.har"),
        &[
            "--request-url",
            "https://api.openai.com/",
            "--out",
            &out.display().to_string(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("recorded 3 cases into"),
        "{}",
        stderr(&o)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    for secret in ["sk-proj-live", "org-Acme123", "__cf_bm"] {
        assert!(!text.contains(secret), "{secret} written: {text}");
    }
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(
        cases.len(),
        3,
        "a stream is read at its start and at its end"
    );
    assert_eq!(cases[0]["now"], "2026-11-29T12:00:00Z");
    assert_eq!(cases[0]["expect"]["usage"]["input-tokens"], 19);
    assert_eq!(cases[0]["expect"]["plan"]["scopes"][0], "model:gpt-4o");
    assert_eq!(cases[1]["part"], "stream-start");
    assert_eq!(cases[2]["part"], "stream-end");
    assert_eq!(cases[2]["expect"]["usage"]["input-tokens"], 9);
    // Quota headers are not credentials, though their names hold "token".
    assert!(
        text.contains(r#"["x-ratelimit-remaining-tokens","29971"]"#),
        "{text}"
    );
    assert_eq!(
        replay("openai", &out),
        ("3 passed, 0 failed".into(), Some(0))
    );
}

#[test]
fn a_recorded_expectation_edited_wrong_fails_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_in(&dir);
    let o = record(
        "anthropic",
        &fixture("anthropic-429.curl"),
        &["--out", &out.display().to_string()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("sk-ant-api03"), "{text}");
    assert!(!text.contains("0a1b2c3d-org"), "{text}");
    assert!(
        !text.contains("Connection #0"),
        "curl's own lines are not the body: {text}"
    );
    assert_eq!(
        replay("anthropic", &out),
        ("1 passed, 0 failed".into(), Some(0))
    );
    let wrong = text.replace(r#""should_retry":true"#, r#""should_retry":false"#);
    assert_ne!(wrong, text);
    std::fs::write(&out, wrong).unwrap();
    let o = sluice(&["plugin", "test", "anthropic", &out.display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o)
            .contains(":: POST /v1/messages answered 429: should_retry: expected false, got true"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_name_already_in_the_file_is_refused_and_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_in(&dir);
    let args = |name: Option<&str>| {
        let mut a = vec![
            "plugin".to_owned(),
            "test".into(),
            "anthropic".into(),
            "--record".into(),
            fixture("anthropic-429.curl"),
            "--out".into(),
            out.display().to_string(),
        ];
        if let Some(n) = name {
            a.extend(["--name".into(), n.into()]);
        }
        a
    };
    let run = |a: Vec<String>| sluice(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run(args(None)).status.code(), Some(0));
    let first = std::fs::read_to_string(&out).unwrap();

    let o = run(args(None));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(r#"already holds a case named "POST /v1/messages answered 429""#),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        first,
        "nothing written"
    );

    let o = run(args(Some("a 429 with the provider's retry advice")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let second = std::fs::read_to_string(&out).unwrap();
    let kept = first
        .trim_end()
        .trim_end_matches('}')
        .trim_end()
        .trim_end_matches(']');
    assert!(
        second.starts_with(kept.trim_end()),
        "the first case is kept as it was"
    );
    assert_eq!(
        replay("anthropic", &out),
        ("2 passed, 0 failed".into(), Some(0))
    );
}

#[test]
fn cases_are_added_to_a_written_file_without_touching_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_in(&dir);
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/openai/vectors.json");
    let before = std::fs::read_to_string(bundled).unwrap();
    std::fs::write(&out, &before).unwrap();
    let o = record(
        "openai",
        &fixture("openai.har"),
        &[
            "--request-url",
            "https://api.openai.com/v1/chat/completions",
            "--out",
            &out.display().to_string(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = std::fs::read_to_string(&out).unwrap();
    let cases_end = before.rfind("\n  ],\n  \"writes\"").unwrap();
    assert_eq!(after[..cases_end], before[..cases_end]);
    assert_eq!(
        after[after.len() - (before.len() - cases_end)..],
        before[cases_end..]
    );
    let (summary, code) = replay("openai", &out);
    // One result per case and per write, and one for describe (whose "name" is its own).
    let before_results = before.matches("\"name\"").count();
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(summary, format!("{} passed, 0 failed", before_results + 3));
}

#[test]
fn a_capture_that_cannot_be_a_case_is_refused_naming_the_file_and_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let out = out_in(&dir);
    let har = fixture("openai.har");
    let o = record("openai", &har, &["--out", &out.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains(&har), "{err}");
    assert!(
        err.contains("entry 2 (GET https://platform.openai.com/favicon.ico): the response body is exported as base64"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");

    let o = record(
        "openai",
        &har,
        &["--request-url", "https://api.openai.com/v1/embeddings"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "none of the 3 entries has a URL starting with https://api.openai.com/v1/embeddings"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn without_out_the_cases_are_printed_as_a_vector_file() {
    let o = record("anthropic", &fixture("anthropic-429.curl"), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["cases"][0]["expect"]["verdict"], "rate-limited");
    assert_eq!(v["cases"][0]["expect"]["retry_after_ms"], 17000);
}
