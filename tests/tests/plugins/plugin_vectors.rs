//! Every bundled plugin passes the vectors it ships with, and every plugin ships some.

use std::path::Path;

use sluice::plugin::bundled;
use sluice::vectors;
use sluice_tests::{hostile, runtime, workspace};

/// The fewest cases a bundled plugin's vector file may hold.
const MIN_CASES: usize = 10;

#[test]
fn every_bundled_plugin_passes_its_own_vectors() {
    let rt = runtime();
    let mut names = 0;
    for name in bundled::names() {
        names += 1;
        let plugin = rt.load_bundled(name).unwrap();
        let path = workspace().join("plugins").join(name).join("vectors.json");
        let file = vectors::load(&path).unwrap();
        assert!(
            file.cases.len() >= MIN_CASES,
            "{name} ships only {} cases",
            file.cases.len()
        );
        let report = vectors::run(&plugin, &file);
        let failures: Vec<String> = report
            .results
            .iter()
            .filter_map(|r| r.failure.as_ref().map(|f| format!("{}: {f}", r.name)))
            .collect();
        assert!(failures.is_empty(), "{name}: {failures:#?}");
    }
    assert_eq!(names, 7);
}

#[test]
fn every_bundled_plugins_vectors_check_every_export() {
    for name in bundled::names() {
        let path = workspace().join("plugins").join(name).join("vectors.json");
        let file = vectors::load(&path).unwrap();
        assert!(file.describe.is_some(), "{name}: describe is not checked");
        assert!(
            file.cases.iter().any(|c| c.expect.plan.is_some()),
            "{name}: plan-request is not checked"
        );
        assert!(
            file.cases.iter().any(|c| c.expect.should_retry.is_some()),
            "{name}: no case checks the retry advice"
        );
        assert!(
            file.writes.iter().any(|w| w.reconcile.is_some()),
            "{name}: reconcile is not checked"
        );
        assert!(
            file.writes.iter().any(|w| w.reconciliation.is_some()),
            "{name}: read-reconciliation is not checked"
        );
    }
}

#[test]
fn every_plugin_crate_ships_vectors() {
    for entry in std::fs::read_dir(workspace().join("plugins")).unwrap() {
        let dir = entry.unwrap().path();
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if ["sdk", "contract", "builder", "bundled", "fixtures"].contains(&name) {
            continue;
        }
        assert!(
            dir.join("vectors.json").exists(),
            "plugin {name} has no vectors.json"
        );
        assert!(bundled::get(name).is_some(), "plugin {name} is not bundled");
    }
}

#[test]
fn a_wrong_expectation_fails_and_names_the_difference() {
    let rt = runtime();
    let plugin = rt.load_bundled("openai").unwrap();
    let text = r#"{"cases":[{"name":"wrong on purpose",
        "request":{"method":"POST","url":"https://api.openai.com/v1/chat/completions","class":"read"},
        "response":{"status":429,"headers":[["retry-after","20"]]},
        "expect":{"verdict":"overloaded","retry_after_ms":20000}}]}"#;
    let file = vectors::parse(Path::new("inline.json"), text).unwrap();
    let report = vectors::run(&plugin, &file);
    assert_eq!(report.failed(), 1);
    let f = report.results[0].failure.as_deref().unwrap();
    assert_eq!(f, "verdict: expected overloaded, got rate-limited");
}

#[test]
fn a_write_case_the_component_answers_otherwise_fails_naming_the_difference() {
    let rt = runtime();
    let plugin = rt.load_bundled("stripe").unwrap();
    let text = r#"{"describe": {"provider": "Stripe", "hosts": ["api.stripe.com"]}, "cases": [],
      "writes": [
        {"name": "an id is looked up",
         "write": {"method": "POST", "url": "https://api.stripe.com/v1/refunds", "operation_id": "re_1"},
         "expect": {"reconcile": {"kind": "query", "url": "https://api.stripe.com/v1/refunds/re_1"}}},
        {"name": "wrong on purpose: a key alone is resent, not looked up",
         "write": {"method": "POST", "url": "https://api.stripe.com/v1/refunds", "idempotency_key": "k-1"},
         "expect": {"reconcile": {"kind": "query", "url": "https://api.stripe.com/v1/refunds/k-1"}}},
        {"name": "wrong on purpose: a 404 for the id is not found",
         "write": {"method": "POST", "url": "https://api.stripe.com/v1/refunds", "operation_id": "re_1"},
         "response": {"status": 404, "body": "{}"},
         "expect": {"reconciliation": {"kind": "found"}}}
      ]}"#;
    let file = vectors::parse(Path::new("inline.json"), text).unwrap();
    let report = vectors::run(&plugin, &file);
    let failures: Vec<Option<&str>> = report
        .results
        .iter()
        .map(|r| r.failure.as_deref())
        .collect();
    assert_eq!(
        failures,
        [
            None,
            None,
            Some("reconcile: expected query, got resend-same-key"),
            Some("reconciliation: expected found, got not-found"),
        ]
    );
}

#[test]
fn observation_mismatches_name_the_field() {
    let rt = runtime();
    let plugin = rt.load_bundled("ietf").unwrap();
    let text = r#"{"cases":[{"name":"n",
        "request":{"method":"GET","url":"https://x.test/","class":"read"},
        "response":{"status":200,"headers":[["RateLimit-Limit","100"],["RateLimit-Remaining","5"]]},
        "expect":{"observations":[{"dimension":"requests","remaining":6}]}},
      {"name":"m",
        "request":{"method":"GET","url":"https://x.test/","class":"read"},
        "response":{"status":200,"headers":[["RateLimit-Limit","100"]]},
        "expect":{"observations":[{"dimension":"tokens"}]}},
      {"name":"exact",
        "request":{"method":"GET","url":"https://x.test/","class":"read"},
        "response":{"status":200,"headers":[["RateLimit-Limit","100"]]},
        "expect":{"observations":[],"observations_exact":true}}]}"#;
    let report = vectors::run(&plugin, &vectors::parse(Path::new("t.json"), text).unwrap());
    let f: Vec<&str> = report
        .results
        .iter()
        .map(|r| r.failure.as_deref().unwrap())
        .collect();
    assert_eq!(
        f[0],
        "observations[0] (requests): remaining: expected 6, got 5"
    );
    assert!(
        f[1].starts_with("observations[0]: no reported observation for dimension \"tokens\""),
        "{}",
        f[1]
    );
    assert!(
        f[2].starts_with("observations_exact: unexpected reported observation requests"),
        "{}",
        f[2]
    );
}

#[test]
fn usage_and_plan_mismatches_name_the_field() {
    let rt = runtime();
    let plugin = rt.load_bundled("openai").unwrap();
    let case = |part: &str, body: &str, expect: &str| {
        format!(
            r#"{{"name":"{part}","part":"{part}",
            "request":{{"method":"POST","url":"https://api.openai.com/v1/chat/completions","class":"read",
              "body":"{{\"model\":\"gpt-4o\",\"max_tokens\":10}}"}},
            "response":{{"status":200,"body":{body}}},
            "expect":{expect}}}"#
        )
    };
    let whole = r#""{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}""#;
    let stream = r#""data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\ndata: [DONE]\n\n""#;
    let text = format!(
        r#"{{"cases":[{},{},{},{},{},{},{}]}}"#,
        case(
            "complete",
            whole,
            // OpenAI counts a request's tokens when it admits it: max_tokens (10) here.
            r#"{"usage":{"input-tokens":3,"output-tokens":4,"tokens":10},"usage_exact":true}"#
        ),
        case("stream-end", stream, r#"{"usage":{"output-tokens":5}}"#),
        case("stream-start", stream, r#"{"usage":{"tokens":7}}"#),
        case(
            "complete",
            whole,
            r#"{"usage":{"tokens":10},"usage_exact":true}"#
        ),
        case(
            "complete",
            whole,
            r#"{"plan":{"class":"standard","tenant":null,"scopes":["model:gpt-4o"],"cost":{"requests":1}}}"#
        ),
        case("complete", whole, r#"{"plan":{"scopes":["model:gpt-4"]}}"#),
        case(
            "complete",
            whole,
            r#"{"plan":{"cost":{"requests":1},"cost_exact":true}}"#
        ),
    );
    let report = vectors::run(
        &plugin,
        &vectors::parse(Path::new("t.json"), &text).unwrap(),
    );
    let f: Vec<Option<&str>> = report
        .results
        .iter()
        .map(|r| r.failure.as_deref())
        .collect();
    assert_eq!(f[0], None);
    assert_eq!(f[1], Some("usage.output-tokens: expected 5, got 4"));
    assert_eq!(
        f[2],
        Some("usage: no reported amount of \"tokens\" (reported: none)")
    );
    // Every amount it did not expect, not only the first.
    assert_eq!(
        f[3],
        Some(
            "usage_exact: unexpected reported amount 3 of input-tokens; usage_exact: unexpected \
             reported amount 4 of output-tokens"
        )
    );
    assert_eq!(f[4], None);
    assert_eq!(
        f[5],
        Some(r#"plan.scopes: expected ["model:gpt-4"], got ["model:gpt-4o"]"#)
    );
    assert!(
        f[6].is_some_and(|m| m.starts_with("plan.cost_exact: unexpected reported amount")),
        "{:?}",
        f[6]
    );
}

#[test]
fn tolerance_allows_date_rounding() {
    let rt = runtime();
    let plugin = rt.load_bundled("ietf").unwrap();
    let case = |tol: u64| {
        format!(
            r#"{{"cases":[{{"name":"t","now":"2026-11-29T12:00:00.400Z",
            "request":{{"method":"GET","url":"https://x.test/","class":"read"}},
            "response":{{"status":429,"headers":[["Retry-After","Sun, 29 Nov 2026 12:00:10 GMT"]]}},
            "expect":{{"retry_after_ms":10000,"tolerance_ms":{tol}}}}}]}}"#
        )
    };
    let run = |tol| {
        vectors::run(
            &plugin,
            &vectors::parse(Path::new("t.json"), &case(tol)).unwrap(),
        )
        .failed()
    };
    assert_eq!(run(0), 1);
    assert_eq!(run(500), 0);
}

#[test]
fn malformed_files_name_the_file_the_case_and_the_field() {
    let bad = [
        (
            r#"{"cases":[{"name":"a","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"verdcit":"success"}}]}"#,
            "t.json: case 0 (\"a\"): field `expect.verdcit`",
        ),
        (
            r#"{"cases":[{"name":"b","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"verdict":"fine"}}]}"#,
            "t.json: case 0 (\"b\"): expect.verdict: \"fine\" is not one of",
        ),
        (
            r#"{"cases":[{"name":"c","request":{"method":"GET","url":"u","class":"write"},"response":{"status":200},"expect":{}}]}"#,
            "t.json: case 0 (\"c\"): request.class: \"write\" is not one of",
        ),
        (
            r#"{"cases":[{"name":"d","request":{"method":"GET","url":"u","class":"read"},"expect":{}}]}"#,
            "t.json: case 0 (\"d\"): response: missing",
        ),
        (
            r#"{"cases":[{"name":"e","request":{"method":"GET","url":"u","class":"read"},"response":{"status":"x"},"expect":{}}]}"#,
            "t.json: case 0 (\"e\"): field `response.status`",
        ),
        (
            r#"{"cases":[{"name":"f","request":{"method":"GET","url":"u","class":"read"},"transport":"eaten","expect":{}}]}"#,
            "t.json: case 0 (\"f\"): transport: \"eaten\" is not one of",
        ),
        (
            r#"{"cases":[{"name":"g","now":"noon","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{}}]}"#,
            "t.json: case 0 (\"g\"): now: \"noon\" is not an RFC 3339",
        ),
        (
            r#"{"cases":[{"name":"h","part":"stream-middle","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{}}]}"#,
            "t.json: case 0 (\"h\"): part: \"stream-middle\" is not one of",
        ),
        (
            r#"{"cases":[{"name":"i","part":"stream-end","request":{"method":"GET","url":"u","class":"read"},"transport":"connect-failed","expect":{}}]}"#,
            "t.json: case 0 (\"i\"): part: a transport failure is read as complete",
        ),
        (
            r#"{"cases":[{"name":"j","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"plan":{"class":"urgent"}}}]}"#,
            "t.json: case 0 (\"j\"): expect.plan.class: \"urgent\" is not one of",
        ),
        (
            r#"{"cases":[{"name":"k","request":{"method":"GET","url":"u","class":"read"},"transport":"reset-after-send","expect":{"usage":{}}}]}"#,
            "t.json: case 0 (\"k\"): expect.usage: a transport failure has no response",
        ),
        (
            r#"{"cases":[{"name":"l","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"usage":{"tokens":-1}}}]}"#,
            "t.json: case 0 (\"l\"): field `expect.usage.tokens`",
        ),
        (
            r#"{"cases":[{"name":"m","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{}}]}"#,
            "t.json: case 0 (\"m\"): expect: checks nothing",
        ),
        (
            r#"{"cases":[{"name":"n","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"tolerance_ms":5}}]}"#,
            "t.json: case 0 (\"n\"): expect: checks nothing",
        ),
        (
            r#"{"cases":[{"name":"o","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"observations":[]}}]}"#,
            "t.json: case 0 (\"o\"): expect.observations: empty, which checks nothing",
        ),
        (
            r#"{"cases":[{"name":"p","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"verdict":"success","usage_exact":true}}]}"#,
            "t.json: case 0 (\"p\"): expect.usage_exact: checks nothing without \"usage\"",
        ),
        (
            r#"{"cases":[{"name":"q","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"verdict":"success","plan":{}}}]}"#,
            "t.json: case 0 (\"q\"): expect.plan: checks nothing",
        ),
        (
            r#"{"cases":[{"name":"r","request":{"method":"GET","url":"u","class":"read"},"response":{"status":200},"expect":{"plan":{"cost":{}}}}]}"#,
            "t.json: case 0 (\"r\"): expect.plan.cost: empty, which checks nothing",
        ),
        (
            r#"{"cases":[{"name":"s","request":{"method":"GET","url":"u","class":"read"},"response":{"status":0},"expect":{"verdict":"success"}}]}"#,
            "t.json: case 0 (\"s\"): response.status: 0 is not an HTTP status",
        ),
        (
            r#"{"cases":[{"name":"t","request":{"method":"GET","url":"u","class":"read"},"response":{"status":999},"expect":{"verdict":"success"}}]}"#,
            "t.json: case 0 (\"t\"): response.status: 999 is not an HTTP status",
        ),
        (
            "{\"cases\":[{\"name\":\"u\",\"request\":{\"method\":\"GET\",\"url\":\"u\",\"class\":\"read\"},\"response\":{\"status\":200},\"expect\":{\"\\u001b[2K\\nok\":1}}]}",
            "t.json: case 0 (\"u\"): field `expect.\\u{1b}[2K\\nok`: unknown field `\\u{1b}[2K\\nok`",
        ),
        (r#"{"cases":[]}"#, "t.json: \"cases\" is empty"),
        (
            r#"{"tests":[]}"#,
            "t.json: missing the top-level \"cases\" array",
        ),
        (r#"{"cases":[}"#, "t.json: not valid JSON"),
    ];
    for (text, want) in bad {
        let e = vectors::parse(Path::new("t.json"), text)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(want), "got: {e}\nwant prefix: {want}");
    }
}

/// Issue 12, item 6: the runner handed a vector's credentials to the plugin, and the FAIL
/// line printed them back.
#[test]
fn a_vectors_credentials_reach_neither_the_plugin_nor_the_fail_line() {
    let rt = runtime();
    let plugin = hostile(&rt);
    let headers = [
        ("Authorization", "Bearer sk-live-secret-1"),
        ("Cookie", "session=secret-2"),
        ("Proxy-Authorization", "Basic secret-3"),
        ("X-Api-Key", "secret-4"),
        ("api-key", "secret-5"),
        ("openai-api-key", "secret-6"),
        ("x-goog-api-key", "secret-7"),
        ("content-type", "application/json"),
    ];
    let headers: Vec<String> = headers
        .iter()
        .map(|(n, v)| format!(r#"["{n}","{v}"]"#))
        .collect();
    let text = format!(
        r#"{{"cases":[{{"name":"echo",
        "request":{{"method":"POST","url":"https://hostile.test/echo","class":"read","headers":[{}]}},
        "response":{{"status":200}},"expect":{{"error_code":null}}}}]}}"#,
        headers.join(",")
    );
    let report = vectors::run(
        &*plugin,
        &vectors::parse(Path::new("echo.json"), &text).unwrap(),
    );
    let failure = report.results[0].failure.as_deref().unwrap();
    assert!(
        failure.contains(r"Authorization:[redacted]\nCookie:[redacted]\n"),
        "{failure}"
    );
    assert!(!failure.contains("secret"), "{failure}");
    let lines: Vec<String> = report.lines(plugin.name()).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("FAIL hostile echo.json :: echo: error_code: expected null, got "),
        "{}",
        lines[0]
    );
    assert!(!lines[0].contains("secret"), "{}", lines[0]);
}
