//! The `sluice plugin` and `sluice config` commands, run as a user runs them.

mod support;

use std::process::Command;

use support::{sluice, stderr, stdout, write_tmp};

fn vectors_of(plugin: &str) -> String {
    format!(
        "{}/../plugins/{plugin}/vectors.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn bundled_vectors_all_pass() {
    let o = sluice(&["plugin", "test", "--bundled"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let last = out.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    assert!(
        out.lines().filter(|l| l.starts_with("ok   ")).count() >= 50,
        "{out}"
    );
    for name in [
        "openai",
        "anthropic",
        "github",
        "stripe",
        "ietf",
        "gemini",
        "bedrock",
    ] {
        assert!(
            out.contains(&format!("ok   {name} plugins/{name}/vectors.json :: ")),
            "{name} missing"
        );
    }
}

#[test]
fn a_named_plugin_against_a_file() {
    let o = sluice(&["plugin", "test", "github", &vectors_of("github")]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(
        stdout(&o)
            .lines()
            .last()
            .unwrap()
            .ends_with(" passed, 0 failed")
    );
}

#[test]
fn a_wrong_expectation_exits_1_and_names_the_case() {
    let path = write_tmp(
        "wrong.json",
        r#"{"cases":[
          {"name":"right","request":{"method":"GET","url":"https://api.github.com/","class":"read"},
           "response":{"status":502},"expect":{"verdict":"transient"}},
          {"name":"wrong on purpose","request":{"method":"GET","url":"https://api.github.com/","class":"read"},
           "response":{"status":403,"headers":[["retry-after","9"]]},"expect":{"verdict":"auth-error"}}]}"#,
    );
    let o = sluice(&["plugin", "test", "github", path.to_str().unwrap()]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("ok   github"), "{out}");
    assert!(
        out.contains("FAIL github")
            && out.contains(":: wrong on purpose: verdict: expected auth-error, got rate-limited"),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some("1 passed, 1 failed"));
}

#[test]
fn a_malformed_file_exits_2_naming_file_case_and_field() {
    let path = write_tmp(
        "malformed.json",
        r#"{"cases":[{"name":"typo","request":{"method":"GET","url":"u","class":"read"},
           "response":{"status":200},"expect":{"retry_after":5}}]}"#,
    );
    let o = sluice(&["plugin", "test", "ietf", path.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("malformed.json")
            && err.contains("case 0 (\"typo\")")
            && err.contains("expect.retry_after"),
        "{err}"
    );
}

#[test]
fn a_missing_file_or_plugin_exits_2_with_a_clear_error() {
    let o = sluice(&["plugin", "test", "ietf", "/nonexistent/v.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/v.json"), "{}", stderr(&o));

    let o = sluice(&["plugin", "test", "acme", &vectors_of("ietf")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no bundled plugin is named `acme`"),
        "{}",
        stderr(&o)
    );

    let o = sluice(&["plugin", "inspect", "/nonexistent/p.wasm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the plugin file /nonexistent/p.wasm: cannot read: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn inspect_shows_description_exports_and_limits() {
    let o = sluice(&["plugin", "inspect", "stripe"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("plugin    stripe 0.1.0"), "{out}");
    assert!(out.contains("hosts     api.stripe.com"), "{out}");
    assert!(out.contains("contract  sluice:policy@0.5.0"), "{out}");
    for f in [
        "describe",
        "plan-request",
        "read-response",
        "reconcile",
        "read-reconciliation",
    ] {
        assert!(
            out.contains(&format!("sluice:policy/policy@0.5.0#{f}")),
            "{f} missing: {out}"
        );
    }
    assert!(
        out.contains("deadline per call   250 ms") && out.contains("memory              16 MiB"),
        "{out}"
    );
}

#[test]
fn list_names_the_bundled_plugins() {
    let o = sluice(&["plugin", "list"]);
    assert_eq!(
        stdout(&o),
        "openai\nanthropic\ngithub\nstripe\nietf\ngemini\nbedrock\n"
    );
}

#[test]
fn the_example_admission_configuration_checks() {
    let example = format!("{}/../examples/admission.toml", env!("CARGO_MANIFEST_DIR"));
    let o = sluice(&["config", "check", &example]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("valid"), "{out}");
    assert!(
        out.contains("requests_per_minute: 500, paced at 450 per 60 s with a burst of 51"),
        "{out}"
    );
    // A model's table is the scope plugins name for the model, shown with the key that set it.
    assert!(out.contains("scope model:gpt-4o (models.gpt-4o):"), "{out}");
    assert!(
        out.contains("scope model:gpt-4.1-mini (models.\"gpt-4.1-mini\"):"),
        "{out}"
    );
    assert!(out.contains("scope search (scopes.search):"), "{out}");
}

#[test]
fn a_bad_admission_configuration_exits_2_naming_the_key() {
    let path = write_tmp("bad-admission.toml", "[providers.openai]\nmargin = 0\n");
    let o = sluice(&["config", "check", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`providers.openai.margin`"),
        "{}",
        stderr(&o)
    );
    let o = sluice(&["config", "check", "/nonexistent/admission.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/admission.toml"),
        "{}",
        stderr(&o)
    );
}

/// tracing's warnings carried ANSI colour codes into files and pipes.
#[cfg(unix)]
#[test]
fn warnings_carry_no_colour_codes_when_stderr_is_not_a_terminal() {
    use std::os::unix::fs::PermissionsExt as _;
    let cache = tempfile::tempdir().unwrap();
    // A cache directory others can write: the host warns and compiles in memory.
    let dir = cache.path().join("sluice").join("components");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["plugin", "inspect", "openai", "--deadline-ms", "250"])
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .expect("run sluice");
    let err = stderr(&o);
    assert!(
        err.contains("not using the compiled-component cache"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "colour codes in a pipe: {err:?}");
}
