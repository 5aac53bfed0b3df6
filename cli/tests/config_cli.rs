//! `sluice config check` given what a careless or hostile user gives it: a fifo, a huge
//! file, numbers no one means, a file that is not there.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use support::stderr;

/// The environment variables the example files read their secrets from.
const EXAMPLE_SECRETS: [&str; 9] = [
    "OPENAI_API_KEY",
    "AZURE_EASTUS_KEY",
    "AZURE_WESTEUROPE_KEY",
    "RESEARCH_AGENT_TOKEN",
    "ANTHROPIC_API_KEY",
    "STRIPE_SECRET_KEY",
    "SLUICE_ADMIN_TOKEN",
    "SLUICE_AGENT_TOKEN",
    "GITHUB_TOKEN",
];

/// Runs `sluice config check path`, killed after 30 s if it has not answered, with none of
/// the example files' secrets in its environment.
fn check(path: &Path) -> Output {
    check_with(path, &[])
}

/// [`check`], with the environment variables `env` set.
fn check_with(path: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    for var in EXAMPLE_SECRETS {
        command.env_remove(var);
    }
    let mut child = command
        .envs(env.iter().copied())
        .args(["config", "check"])
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sluice");
    // Polled every 20 ms, 1 500 times: 30 s.
    for _ in 0..1_500 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    panic!("`config check {}` hangs", path.display());
}

/// Issue: `config check` on a fifo hung, waiting for a writer that never comes.
#[cfg(target_os = "linux")]
#[test]
fn a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("admission.toml");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .unwrap();
    let o = check(&fifo);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a regular file"), "{err}");
    assert!(err.contains(fifo.to_str().unwrap()), "{err}");
}

/// Issue: a 33 MB configuration took 1.8 GB to check.
#[test]
fn a_file_over_a_mebibyte_is_refused_before_it_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("admission.toml");
    let line = "# a comment that makes the file large, and nothing else\n";
    std::fs::write(&big, line.repeat(33 * 1024 * 1024 / line.len())).unwrap();
    let o = check(&big);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("at most 1 MiB"), "{err}");
}

/// Issue: `max_wait_ms = 18446744073709551615` and `margin = 1e-300` were accepted.
#[test]
fn numbers_no_one_means_are_refused_naming_the_key_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.toml");
    for (text, key, range) in [
        (
            "[queue]\nmax_wait_ms = 86400001\n",
            "`queue.max_wait_ms`",
            "at most 86400000",
        ),
        // Beyond a TOML integer (64-bit signed): refused by the parser, at its line.
        (
            "[queue]\nmax_wait_ms = 18446744073709551615\n",
            "line 2",
            "too large",
        ),
        ("margin = 1e-300\n", "`margin`", "between 0.01 and 1"),
    ] {
        std::fs::write(&file, text).unwrap();
        let o = check(&file);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(key) && err.contains(range), "{text}: {err}");
    }
}

/// Issue: "No such file or directory ...: No such file or directory ..." said it twice.
#[test]
fn a_missing_file_is_reported_once() {
    let o = check(Path::new("/nonexistent/admission.toml"));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert!(err.contains("/nonexistent/admission.toml"), "{err}");
}

/// Issue: "No such file or directory … : No such file or directory …": an error that shows its
/// cause in its message and returns it as its source too was printed with both. Every
/// command's error line says each cause once.
#[test]
fn every_command_says_a_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("journal.sqlite");
    std::fs::write(
        &text,
        "not a database, only text long enough for a header\n",
    )
    .unwrap();
    for args in [
        vec!["config", "check", "/nonexistent/admission.toml"],
        vec!["escalations", "list", "--journal", text.to_str().unwrap()],
        vec!["plugin", "test", "openai", "/nonexistent/vectors.json"],
        vec!["plugin", "inspect", "/nonexistent/plugin.wasm"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(&args)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        let parts: Vec<&str> = err.trim().split(": ").collect();
        for (i, part) in parts.iter().enumerate() {
            assert!(
                !parts[i + 1..].contains(part),
                "{args:?}: `{part}` twice in: {err}"
            );
        }
    }
}

/// Issue: provider keys `"\u001b[31mred"` and `"a\nfake: valid"` printed a raw ESC and a
/// forged `fake: valid` line, with exit 0.
#[test]
fn names_from_the_file_print_escaped_and_cannot_forge_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.toml");
    std::fs::write(
        &file,
        "[providers.\"\\u001b[31mred\"]\nplugin = \"openai\"\n\
         [providers.\"a\\nfake: valid\"]\nplugin = \"stripe\"\n\
         [providers.\"ops\\u00ad\"]\nplugin = \"github\"\n\
         [providers.\"ops\\u00ad\".scopes.\"s\\u2028x\"]\n\
         requests_per_minute = 60\n\
         [tiers.\"t\\u3164\"]\n",
    )
    .unwrap();
    let o = check(&file);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let valid = out.lines().filter(|l| l.ends_with(": valid")).count();
    assert_eq!(valid, 1, "a forged line:\n{out}");
    for c in ['\u{1b}', '\u{ad}', '\u{2028}', '\u{3164}'] {
        assert!(!out.contains(c), "printed {c:?} raw: {out:?}");
    }
    for shown in [
        r"provider \u{1b}[31mred ",
        r"provider a\nfake: valid ",
        r"provider ops\u{ad} ",
        r"scope s\u{2028}x",
        r"tier t\u{3164}:",
    ] {
        assert!(out.contains(shown), "no `{shown}` in:\n{out}");
    }
}

/// Issue: a parse error echoed the raw line, control bytes included, and a 400 KB line whole.
#[test]
fn a_parse_error_echoes_its_line_escaped_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admission.toml");
    let said = |text: &str| {
        std::fs::write(&file, text).unwrap();
        let o = check(&file);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.len() < 1_000, "{} bytes of error", err.len());
        assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
        err
    };
    let long = "x".repeat(400_000);

    let err = said("margin = 0.9 \u{1b}[2K\rfake: valid\n");
    assert!(err.contains("line 1, column 15"), "{err}");
    assert!(
        err.contains(r"`margin = 0.9 \u{1b}[2K\rfake: valid`"),
        "{err}"
    );

    // Wrong early in a long line: the line's start, cut after 200 characters.
    let err = said(&format!("# first\nmargin = = {long}\u{1b}\n"));
    assert!(err.contains("line 2, column 10"), "{err}");
    let quoted = format!("`margin = = {}…`", &long[..189]);
    assert!(err.ends_with(&format!("{quoted}\n")), "{err}");

    // Wrong at the end of a long line: the characters around the error, cut before.
    let err = said(&format!("margin = 0.9 {long}\u{1b}[2K\rfake: valid\n"));
    assert!(err.contains("line 1, column 400015"), "{err}");
    assert!(err.contains(r"`…xxx"), "{err}");
    assert!(err.contains(r"xxx\u{1b}[2K\rfake: valid`"), "{err}");
}

/// The documented whole-host file checks, and says which credential cannot be read now:
/// without its secrets, the host would not start, and `config check` exits 1 saying so.
#[test]
fn the_example_configuration_file_checks_and_names_each_credentials_source() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sluice.toml");
    let o = check(&example);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        out.contains("the configuration is valid, but the host will not start as things are"),
        "{out}"
    );
    for shown in [
        "provider openai (paced at 90%)",
        "  plugin: bundled openai",
        "  base URL: https://api.openai.com",
        "  credential team-key: $OPENAI_API_KEY, sent in authorization",
        "  credential team-key: $ANTHROPIC_API_KEY, sent in x-api-key",
        "  credential app: /run/secrets/github-token",
        "audit: a checkpoint every 64 records, kept 400 days",
        "  signing key: /etc/sluice/audit.key (NOT READABLE NOW, the host will not start",
        "  idempotency key secret: derived from the audit signing key",
    ] {
        assert!(out.contains(shown), "no `{shown}` in:\n{out}");
    }
}

/// The pools example checks, and says each member's endpoint and limits and each pool.
#[test]
fn the_pools_example_checks_and_names_each_pool_and_member() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/pools.toml");
    let o = check(&example);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(1),
        "its keys are not set: {}",
        stderr(&o)
    );
    for shown in [
        "  credential azure-eastus: $AZURE_EASTUS_KEY, sent in api-key",
        "  credential azure-eastus goes to https://contoso-eastus.openai.azure.com, path \
         /openai/deployments/gpt-4o/{path}?api-version=2024-10-21",
        "  credential azure-eastus's own bucket:",
        "    requests_per_minute: 2700, paced at 2430 per 60 s",
        "  pool gpt-4o: azure-eastus (weight 3), azure-westeurope (weight 2), project — a read \
         goes with the member that would admit it soonest",
    ] {
        assert!(out.contains(shown), "no `{shown}` in:\n{out}");
    }
}

/// The sidecar's example file checks, and says where agents and the admin API connect and
/// whether each token can be read now.
#[test]
fn the_sidecar_example_checks_and_names_each_tokens_source() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/serve.toml");
    let o = check(&example);
    assert_eq!(o.status.code(), Some(1), "no secret is set: {}", stderr(&o));
    // With every secret it reads set, the host would start: 0.
    let secrets = [
        ("OPENAI_API_KEY", "sk-x"),
        ("ANTHROPIC_API_KEY", "sk-ant-x"),
        ("SLUICE_ADMIN_TOKEN", "admin"),
        ("SLUICE_AGENT_TOKEN", "agent"),
    ];
    let o = check_with(&example, &secrets);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    for shown in [
        "serve: agents at 127.0.0.1:8700, 1 agent, shutdown within 10000 ms, provider keys sent \
         by agents refused",
        "  admin API at 127.0.0.1:8701 (at most 64 connections), token from $SLUICE_ADMIN_TOKEN",
        "  agent research: tenant acme, priorities interactive, standard, background, token from $SLUICE_AGENT_TOKEN",
        "  at most 1024 connections, each request read within 30000 ms, 10 wrong tokens an address a minute",
    ] {
        assert!(out.contains(shown), "no `{shown}` in:\n{out}");
    }
}

/// A `[serve]` table's mistakes are named by key: an agent's unknown credential label, an
/// undefined tier, an admin API without a token.
#[test]
fn a_serve_table_mistake_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    let provider = "[providers.openai]\nbase_url = \"http://127.0.0.1:1\"\n\
                    [providers.openai.credentials.team]\nenv = \"K\"\n";
    let agent = "[serve.agents.bot]\ntoken = { env = \"T\" }\ntenant = \"acme\"\n";
    for (text, key) in [
        (
            format!("{provider}{agent}credentials = {{ openai = \"other\" }}\n"),
            "`serve.agents.bot.credentials.openai`: provider `openai` has no credential and no pool named `other`",
        ),
        (
            format!("{provider}{agent}tier = \"gold\"\n"),
            "`serve.agents.bot.tier`: no tier `gold` is defined",
        ),
        (
            format!("{provider}[serve.admin]\nlisten = \"127.0.0.1:9\"\n"),
            "`serve.admin.token`: the admin API needs a token",
        ),
        (
            format!("{provider}[serve]\nlisten = \"localhost\"\n"),
            "`serve.listen`: an address and port",
        ),
    ] {
        std::fs::write(&file, &text).unwrap();
        let o = check(&file);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(key), "{text}: {err}");
    }
}

/// A provider whose plugin is neither bundled nor a file is refused, naming the key.
#[test]
fn a_plugin_that_cannot_be_found_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    for (text, key) in [
        (
            "[providers.acme]\n",
            "`providers.acme.plugin`: no bundled plugin is named `acme`",
        ),
        (
            "[providers.acme]\nplugin = \"plugins/acme.wasm\"\n",
            "`providers.acme.plugin`:",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let o = check(&file);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(key), "{text}: {err}");
    }
}

/// The external-plugin example checks, and shows each plugin's vectors, own limits and what
/// reloads it; a vector file that is not there is named by its key.
#[test]
fn the_plugin_example_shows_vectors_own_limits_and_reload_and_a_missing_vector_file_is_named() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins.toml");
    let secrets = [
        ("OPENAI_API_KEY", "sk-x"),
        ("ANTHROPIC_API_KEY", "sk-ant-x"),
    ];
    let o = check_with(&example, &secrets);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for shown in [
        "/plugins/openai/vectors.json (must pass at start and at each reload)",
        "  plugin limits: call deadline 10 ms, memory 32 MiB, table 10000 elements, 4 warm \
         instances, 5000 calls per instance; the runtime's for the rest",
        "  plugin limits: the runtime's",
        "  reload: on request (admin API, the library)",
    ] {
        assert!(out.contains(shown), "no `{shown}` in:\n{out}");
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    std::fs::write(
        &file,
        "[providers.openai]\nvectors = \"gone.json\"\n[providers.openai.plugin_limits]\n\
         max_memory_mib = 8\n",
    )
    .unwrap();
    let o = check(&file);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`providers.openai.vectors`") && err.contains("gone.json: no such file"),
        "{err}"
    );
}

/// `config check` is a pre-deploy gate: it takes several files (each reported, the worst
/// exit status wins), loads each plugin and runs its vectors — a plugin that fails one is a
/// host that will not start, exit 1, with the failing case named.
#[test]
fn several_files_are_checked_and_a_plugin_failing_its_vectors_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/openai/vectors.json");
    let mut cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&vectors).unwrap()).unwrap();
    cases["cases"][0]["expect"]["verdict"] = "rate-limited".into();
    let wrong = dir.path().join("wrong.json");
    std::fs::write(&wrong, cases.to_string()).unwrap();
    let passing = dir.path().join("passing.toml");
    std::fs::write(
        &passing,
        format!("[providers.openai]\nvectors = \"{}\"\n", vectors.display()),
    )
    .unwrap();
    let failing = dir.path().join("failing.toml");
    std::fs::write(&failing, "[providers.openai]\nvectors = \"wrong.json\"\n").unwrap();

    let o = check(&passing);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("  loaded: openai "), "{out}");
    assert!(out.contains("  vectors run: "), "{out}");
    assert!(out.contains(" cases pass"), "{out}");

    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["config", "check"])
        .args([&passing, &failing])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("passing.toml: valid"), "{out}");
    assert!(out.contains("failing.toml: valid"), "{out}");
    assert!(
        out.contains("1 of ") && out.contains("cases FAIL, the host will not start"),
        "{out}"
    );
    let first = cases["cases"][0]["name"].as_str().unwrap();
    assert!(out.contains(&format!("    {first}: ")), "{out}");
}
