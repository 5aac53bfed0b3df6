//! Parsing and validating admission configurations.

use super::*;

#[test]
fn the_module_example_parses() {
    let doc = include_str!("../config.rs");
    let example: String = doc
        .lines()
        .skip_while(|l| !l.starts_with("//! ```toml"))
        .skip(1)
        .take_while(|l| !l.starts_with("//! ```"))
        .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start()))
        .collect();
    let c = Config::from_toml(&example).unwrap();
    assert_eq!(c.tiers["paid"].weight.get(), 4);
    assert_eq!(
        c.providers["openai"].models["gpt-4o"]
            .tokens_per_minute
            .map(NonZeroU64::get),
        Some(30_000)
    );
    let named: Vec<_> = c.providers["openai"]
        .named_scopes()
        .map(|n| (n.name, n.key))
        .collect();
    assert_eq!(named, [("model:gpt-4o".into(), "models.gpt-4o".into())]);
    assert_eq!(c.tenants.assign["acme"], "paid");
}

#[test]
fn an_empty_file_is_the_defaults() {
    assert_eq!(Config::from_toml("").unwrap(), Config::default());
}

fn err(text: &str) -> String {
    Config::from_toml(text).unwrap_err().to_string()
}

#[test]
fn errors_name_the_key() {
    let e = err("[providers.openai.limits]\nrequests_per_minit = 5\n");
    assert!(e.contains("requests_per_minit"), "{e}");
    let e = err("[providers.openai.limits]\nrequests_per_minute = 0\n");
    assert!(e.contains("requests_per_minute"), "{e}");
    let e = err("[providers.openai]\nmargin = 1.5\n");
    assert!(e.starts_with("`providers.openai.margin`"), "{e}");
    let e = err("[tenants.assign]\nacme = \"gold\"\n");
    assert!(e.starts_with("`tenants.assign.acme`"), "{e}");
    assert!(e.contains("[tiers.gold]"), "{e}");
    let e = err("[tiers.free]\nweight = 0\n");
    assert!(e.contains("weight"), "{e}");
    // Finer than the clock: the error names the model's key, quoted as TOML needs it.
    let e = err("[providers.openai.models.\"gpt-4.1\"]\ntokens_per_minute = 100000000000\n");
    assert!(
        e.contains("providers.openai.models.\"gpt-4.1\".tokens_per_minute"),
        "{e}"
    );
}

#[test]
fn a_model_configured_twice_is_refused_naming_both_keys() {
    let e = err("[providers.openai.models.gpt-4o]\ntokens_per_minute = 10\n\
         [providers.openai.scopes.\"model:gpt-4o\"]\ntokens_per_minute = 20\n");
    assert!(e.starts_with("`providers.openai.models.gpt-4o`"), "{e}");
    assert!(
        e.contains("`providers.openai.scopes.\"model:gpt-4o\"`"),
        "{e}"
    );
}

/// Issue: `max_wait_ms = 18446744073709551615` and `margin = 1e-300` were accepted.
#[test]
fn every_number_has_a_range_and_its_error_names_key_and_range() {
    for (text, key, range) in [
        (
            "[queue]\nmax_wait_ms = 18446744073709551615\n",
            "queue.max_wait_ms",
            "at most 86400000 (a day)",
        ),
        ("margin = 1e-300\n", "margin", "between 0.01 and 1"),
        ("margin = nan\n", "margin", "between 0.01 and 1"),
        (
            "[providers.openai]\nmargin = 0.001\n",
            "providers.openai.margin",
            "between 0.01 and 1",
        ),
        (
            "[providers.openai]\nmax_wait_ms = 86400001\n",
            "providers.openai.max_wait_ms",
            "at most 86400000",
        ),
        (
            "[queue]\nmax_queued = 4294967295\n",
            "queue.max_queued",
            "at most 10000000",
        ),
        (
            "[queue]\nmax_queued_per_scope = 10000001\n",
            "queue.max_queued_per_scope",
            "at most 10000000",
        ),
        (
            "[providers.openai]\nmax_queued = 4294967295\n",
            "providers.openai.max_queued",
            "at most 10000000",
        ),
        (
            "[queue]\nmax_unconfigured_scopes = 65537\n",
            "queue.max_unconfigured_scopes",
            "at most 65536",
        ),
        (
            "[providers.openai]\nmax_unconfigured_scopes = 4294967295\n",
            "providers.openai.max_unconfigured_scopes",
            "at most 65536",
        ),
        (
            "[queue]\nunconfigured_idle_ms = 86400001\n",
            "queue.unconfigured_idle_ms",
            "at most 86400000",
        ),
        (
            "[providers.openai.limits]\nconcurrent_requests = 4294967295\n",
            "providers.openai.limits.concurrent_requests",
            "at most 1000000",
        ),
        (
            "[providers.github.scopes.search]\nconcurrent_requests = 2000000\n",
            "providers.github.scopes.search.concurrent_requests",
            "at most 1000000",
        ),
        (
            "[tiers.gold]\nweight = 4294967295\n",
            "tiers.gold.weight",
            "at most 10000",
        ),
        (
            "[tiers.gold]\nmax_queued = 10000001\n",
            "tiers.gold.max_queued",
            "at most 10000000",
        ),
        (
            "[tiers.gold]\nmax_in_flight = 1000001\n",
            "tiers.gold.max_in_flight",
            "at most 1000000",
        ),
        (
            "[tiers.gold.limits]\nconcurrent_requests = 1000001\n",
            "tiers.gold.limits.concurrent_requests",
            "at most 1000000",
        ),
    ] {
        let e = err(text);
        assert!(e.starts_with(&format!("`{key}`")), "{text}: {e}");
        assert!(e.contains(range), "{text}: {e}");
    }
    // The ends of each range are accepted.
    Config::from_toml(
        "margin = 0.01\n[queue]\nmax_wait_ms = 86400000\nmax_queued = 10000000\n\
         max_unconfigured_scopes = 0\nunconfigured_idle_ms = 86400000\n\
         [providers.p]\nmargin = 1.0\nmax_unconfigured_scopes = 65536\n\
         [providers.p.limits]\nconcurrent_requests = 1000000\n\
         [tiers.t]\nweight = 10000\nmax_in_flight = 1000000\n",
    )
    .unwrap();
}

fn from_file(path: &Path) -> Result<Config, ConfigError> {
    // A fifo that is waited on never answers: the check must not wait.
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        // A receiver gone has given up waiting: there is no one to tell.
        let _ = tx.send(Config::from_file(&path));
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .expect("reading the configuration waits")
}

#[test]
fn only_a_regular_file_of_at_most_a_mebibyte_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    let line = "# a comment, and nothing else\n";
    let lines = usize::try_from(MAX_FILE_BYTES).unwrap() / line.len() + 1;
    std::fs::write(&big, line.repeat(lines)).unwrap();
    let e = from_file(&big).unwrap_err();
    assert!(matches!(e, ConfigError::TooLarge { .. }), "{e}");
    assert!(e.to_string().contains("at most 1 MiB"), "{e}");
    std::fs::write(&big, line.repeat(lines - 1)).unwrap();
    from_file(&big).unwrap();

    let e = from_file(dir.path()).unwrap_err();
    assert!(matches!(e, ConfigError::NotAFile { .. }), "{e}");
    #[cfg(target_os = "linux")]
    {
        let fifo = dir.path().join("fifo.toml");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        let e = from_file(&fifo).unwrap_err();
        assert!(matches!(e, ConfigError::NotAFile { .. }), "{e}");
        assert!(e.to_string().contains("fifo.toml"), "{e}");
    }

    let binary = dir.path().join("binary.toml");
    std::fs::write(&binary, b"margin = 0.9\n\xff\xfe").unwrap();
    let e = from_file(&binary).unwrap_err();
    assert!(e.to_string().contains("not UTF-8"), "{e}");
    // The cause is in the message, and not returned again as a source.
    assert!(std::error::Error::source(&e).is_none(), "{e}");
}
