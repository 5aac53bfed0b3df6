use std::path::Path;
use std::time::Duration;

use super::*;
use crate::credentials::CredentialSource;
use crate::transport::ExtraRoot;

const FULL: &str = r#"
state_dir = "state"
margin = 0.9

[providers.openai]
plugin = "openai"
base_url = "https://api.openai.com"
[providers.openai.credentials.team-key]
env = "OPENAI_API_KEY"
[providers.openai.limits]
requests_per_minute = 500

[providers.gateway]
plugin = "plugins/gateway.wasm"
vectors = "plugins/gateway.json"
reload = "watch"
[providers.gateway.plugin_limits]
call_deadline_ms = 2
max_memory_mib = 8
max_warm_instances = 0
[providers.gateway.credentials.default]
file = "secrets/gateway"
header = "x-api-key"
[providers.gateway.limits]
requests_per_minute = 60

[retry]
max_delayed_requests = 8
[retry.classes.read]
max_attempts = 2
max_wait_ms = 5000
retry_statuses = [429, 503]

[audit]
checkpoint_every = 16
retention_days = 30
witness = "/mnt/elsewhere/audit.witness"

[transport]
connect_timeout_ms = 2000
extra_roots = ["ca.pem"]

[plugins]
call_deadline_ms = 20
"#;

#[test]
fn a_whole_file_is_read_with_its_paths_taken_from_its_directory() {
    let c = SluiceConfig::from_toml(FULL, Path::new("/etc/sluice")).unwrap();
    assert_eq!(c.state_dir.as_deref(), Some(Path::new("/etc/sluice/state")));
    let openai = &c.providers["openai"];
    assert_eq!(openai.plugin, PluginSource::Bundled("openai".into()));
    assert_eq!(openai.base_url.as_deref(), Some("https://api.openai.com"));
    assert_eq!(
        openai.credentials["team-key"],
        CredentialSource::env("OPENAI_API_KEY")
    );
    let gateway = &c.providers["gateway"];
    assert_eq!(
        gateway.plugin,
        PluginSource::File("/etc/sluice/plugins/gateway.wasm".into())
    );
    assert_eq!(
        gateway.vectors.as_deref(),
        Some(Path::new("/etc/sluice/plugins/gateway.json"))
    );
    assert_eq!(
        gateway.plugin_limits,
        crate::plugin::PluginLimits {
            call_deadline: Some(Duration::from_millis(2)),
            max_memory_bytes: Some(8 << 20),
            max_warm_instances: Some(0),
            ..Default::default()
        }
    );
    assert!(openai.plugin_limits.is_default() && openai.vectors.is_none());
    assert_eq!(
        (openai.reload, gateway.reload),
        (ReloadTrigger::Manual, ReloadTrigger::Watch)
    );
    assert_eq!(
        gateway.credentials["default"],
        CredentialSource::file("/etc/sluice/secrets/gateway").in_header("x-api-key", None)
    );
    assert_eq!(c.admission.providers.len(), 2);
    assert_eq!(c.retry.max_delayed_requests, 8);
    assert_eq!(
        c.retry
            .budget(crate::contract::RequestClass::Read)
            .max_attempts,
        2
    );
    assert_eq!(c.audit.checkpoint_every.get(), 16);
    assert_eq!(c.audit.retention, Some(Duration::from_secs(30 * 86_400)));
    assert_eq!(
        c.audit.witness.as_deref(),
        Some(Path::new("/mnt/elsewhere/audit.witness"))
    );
    assert_eq!(c.transport.timeouts.connect, Duration::from_secs(2));
    assert_eq!(
        c.transport.extra_roots,
        vec![ExtraRoot::PemFile("/etc/sluice/ca.pem".into())]
    );
    assert_eq!(c.plugin_call_deadline, Some(Duration::from_millis(20)));
}

#[test]
fn an_admission_only_file_is_a_configuration_whose_providers_use_their_bundled_plugins() {
    let text = include_str!("../../../examples/admission.toml");
    let c = SluiceConfig::from_toml(text, Path::new(".")).unwrap();
    assert_eq!(
        c.providers["github"].plugin,
        PluginSource::Bundled("github".into())
    );
    assert!(c.providers["openai"].credentials.is_empty());
    assert_eq!(c.state_dir, None);
}

/// The error `text` gives, as printed.
fn error(text: &str) -> String {
    SluiceConfig::from_toml(text, Path::new("."))
        .unwrap_err()
        .to_string()
}

#[test]
fn every_bad_key_is_named_in_its_error() {
    let cases = [
        (
            "[providers.openai.credentials.k]\nenvv = \"X\"\n",
            "providers.openai.credentials.k",
        ),
        (
            "[providers.openai.credentials.k]\nenv = \"X\"\nfile = \"y\"\n",
            "providers.openai.credentials.k",
        ),
        ("[audit]\nchekpoint_every = 3\n", "audit.chekpoint_every"),
        ("[audit]\ncheckpoint_every = 0\n", "audit.checkpoint_every"),
        (
            "[transport]\nconnect_timeout_ms = -1\n",
            "transport.connect_timeout_ms",
        ),
        (
            "[transport]\nextra_roots = [3]\n",
            "transport.extra_roots[0]",
        ),
        (
            "[plugins]\ncall_deadline_ms = \"5\"\n",
            "plugins.call_deadline_ms",
        ),
        ("state_dir = 3\n", "state_dir"),
        (
            "[retry.classes.read]\nmax_attempts = 0\nmax_wait_ms = 1\nretry_statuses = []\n",
            "retry.classes.read.max_attempts",
        ),
        ("[retry]\nbackoff = 3\n", "retry.backoff"),
        (
            "[providers.openai]\nbase_url = \"api.openai.com\"\n",
            "providers.openai.base_url",
        ),
        (
            "[providers.openai]\nplugins = \"openai\"\n",
            "providers.openai.plugins",
        ),
        (
            "[providers.openai.limits]\nrequests_per_minute = -5\n",
            "providers.openai.limits.requests_per_minute",
        ),
        ("margin = 7\n", "margin"),
        (
            "[providers.acme.plugin_limits]\nmax_memory_mib = 0\n",
            "providers.acme.plugin_limits.max_memory_mib",
        ),
        (
            "[providers.acme.plugin_limits]\ncall_deadline_ms = 60001\n",
            "providers.acme.plugin_limits.call_deadline_ms",
        ),
        (
            "[providers.acme.plugin_limits]\nmemory_mib = 8\n",
            "providers.acme.plugin_limits.memory_mib",
        ),
        (
            "[providers.acme]\nplugin_limits = 3\n",
            "providers.acme.plugin_limits",
        ),
        (
            "[providers.acme]\nvectors = \"\"\n",
            "providers.acme.vectors",
        ),
        (
            "[providers.openai.generations.\"o3\"]\ndefault_max_output = 0\n",
            "providers.openai.generations.o3.default_max_output",
        ),
        (
            "[providers.openai.generations.\"o3\"]\ntimeout = 5\n",
            "providers.openai.generations.o3.timeout",
        ),
        (
            "[providers.openai.generations]\no3 = 5\n",
            "providers.openai.generations.o3",
        ),
        (
            "audit = 3\n",
            "`audit`: invalid type: integer `3`, expected a table",
        ),
        (
            "[store]\nurl = \"redis://x\"\nhosts = 0\n",
            "`store.hosts`: from 1 to 10000, not 0",
        ),
        (
            "[providers.openai.prices.\"gpt-4.1\"]\ninput_micros_per_million = 1\noutput_micros_per_million = -1\n",
            "`providers.openai.prices.\"gpt-4.1\".output_micros_per_million`: from 0 to",
        ),
    ];
    for (text, key) in cases {
        let e = error(text);
        assert!(
            e.contains(key),
            "{text:?} gave {e:?}, which does not name {key}"
        );
    }
}

/// A group that shares quotas through Redis but keeps a journal on each host would count
/// each tenant's budgets on every host apart: refused, naming `journal.url`, unless the
/// operator says so (`budgets.per_host`); with a group journal, or no budget, it is fine.
#[test]
#[cfg(all(feature = "redis", feature = "postgres"))]
fn budgets_in_a_group_without_a_shared_journal_are_refused_unless_per_host() {
    let store = "[store]\nurl = \"redis://127.0.0.1:6379\"\nhosts = 4\n";
    let spend = "[tenants.budgets.acme]\nspend_micros_per_day = 50000\n";
    let e = error(&format!("{store}{spend}"));
    assert!(e.contains("`journal.url`: missing"), "{e}");
    assert!(e.contains("up to 4 times"), "{e}");
    assert!(e.contains("per_host = true"), "{e}");
    let requests = "[tiers.free.budgets]\nrequests_per_day = 10\n";
    assert!(error(&format!("{store}{requests}")).contains("`journal.url`"));
    for fine in [
        format!("{store}[budgets]\nper_host = true\n{spend}"),
        format!("{store}[journal]\nurl = \"postgres://sluice@db/sluice\"\n{spend}"),
        format!(
            "{store}[providers.openai.prices.\"gpt-4o\"]\ninput_micros_per_million = 1\noutput_micros_per_million = 1\n"
        ),
        spend.to_owned(),
    ] {
        SluiceConfig::from_toml(&fine, Path::new(".")).unwrap_or_else(|e| panic!("{fine}: {e}"));
    }
}

#[test]
fn a_syntax_error_names_its_line() {
    let e = error("[providers.openai]\nplugin = \n");
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn a_credential_that_cannot_be_read_is_named_by_provider_and_label() {
    let text =
        "[providers.openai.credentials.team-key]\nenv = \"SLUICE_TEST_SURELY_UNSET_VARIABLE\"\n";
    let c = SluiceConfig::from_toml(text, Path::new(".")).unwrap();
    let e = c.check_credentials("sluice.toml").unwrap_err().to_string();
    assert!(e.contains("providers.openai.credentials.team-key"), "{e}");
    assert!(e.contains("SLUICE_TEST_SURELY_UNSET_VARIABLE"), "{e}");
}

#[test]
fn a_sigv4_credential_is_read_with_its_file_from_the_config_s_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("aws"),
        "[bedrock]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = s\n",
    )
    .unwrap();
    let text = "[providers.bedrock.credentials.main.sigv4]\nregion = \"us-west-2\"\n\
                file = \"aws\"\nprofile = \"bedrock\"\n";
    let c = SluiceConfig::from_toml(text, dir.path()).unwrap();
    let source = &c.providers["bedrock"].credentials["main"];
    let sigv4 = source.sigv4.as_ref().unwrap();
    assert_eq!(
        (sigv4.region.as_str(), sigv4.service.as_str()),
        ("us-west-2", "bedrock")
    );
    assert_eq!(
        sigv4.file.as_deref(),
        Some(dir.path().join("aws").as_path())
    );
    c.check_credentials("sluice.toml").unwrap();
    let both = "[providers.bedrock.credentials.main]\nenv = \"K\"\n\
                sigv4 = { region = \"us-east-1\" }\n";
    let e = error(both);
    assert!(
        e.contains("providers.bedrock.credentials.main") && e.contains("sigv4"),
        "{e}"
    );
    let unknown = "[providers.bedrock.credentials.main.sigv4]\nregion = \"us-east-1\"\nkey = 1\n";
    assert!(error(unknown).contains("key"), "{}", error(unknown));
    let bad =
        "[providers.bedrock.credentials.main.sigv4]\nregion = \"us-east-1\"\nfile = \"nope\"\n";
    let c = SluiceConfig::from_toml(bad, dir.path()).unwrap();
    let e = c.check_credentials("sluice.toml").unwrap_err().to_string();
    assert!(
        e.contains("providers.bedrock.credentials.main") && e.contains("nope"),
        "{e}"
    );
}

#[test]
fn a_provider_s_generations_are_read_per_model() {
    let c = SluiceConfig::from_toml(
        "[providers.openai.generations.\"o3\"]\ndefault_max_output = 32768\ntimeout_ms = 1800000\n\
         [providers.openai.generations.\"*\"]\ndefault_max_output = 2048\n",
        Path::new("."),
    )
    .unwrap();
    let g = &c.providers["openai"].generations;
    let o3 = g.of(Some("o3-2025-04-16"));
    assert_eq!(o3.default_max_output, Some(32_768));
    assert_eq!(o3.timeout, Some(Duration::from_secs(1800)));
    let other = g.of(Some("gpt-4o"));
    assert_eq!(
        (other.default_max_output, other.timeout),
        (Some(2048), None)
    );
}

/// The certificate files of the stores' TLS are read when the file is loaded: a file that
/// cannot be used, a key without its certificate, or a setting that cannot apply is named
/// by its key, with the file.
#[test]
#[cfg(all(feature = "redis", feature = "postgres"))]
fn the_stores_tls_settings_are_checked_at_load_naming_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = sluice_fake_provider::tls::TestCa::new().unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca.ca_pem()).unwrap();
    let load = |text: &str| SluiceConfig::from_toml(text, dir.path());
    let store = |url: &str, keys: &str| format!("[store]\nurl = \"{url}\"\nhosts = 2\n{keys}\n");
    let refused = |text: String, key: &str, says: &str| {
        let e = load(&text).unwrap_err().to_string();
        assert!(
            e.contains(&format!("`{key}`")) && e.contains(says),
            "{text}: {e}"
        );
    };
    let tls = "rediss://redis.internal:6380";
    refused(
        store("redis://redis.internal:6379", "ca_file = \"ca.pem\""),
        "store.ca_file",
        "is for a rediss:// store",
    );
    refused(
        store(tls, "ca_file = \"gone.pem\""),
        "store.ca_file",
        "gone.pem",
    );
    refused(
        store(tls, "client_cert_file = \"ca.pem\""),
        "store.client_key_file",
        "is missing",
    );
    refused(
        store(
            tls,
            "client_cert_file = \"ca.pem\"\nclient_key_file = \"ca.pem\"",
        ),
        "store.client_key_file",
        "no usable private key",
    );
    refused(
        store(&format!("{tls}/#insecure"), ""),
        "store.url",
        "#insecure",
    );
    let config = load(&store(tls, "ca_file = \"ca.pem\"")).unwrap();
    let store = config.store.unwrap();
    assert_eq!(store.ca_file, Some(dir.path().join("ca.pem")));

    let journal = |query: &str| format!("[journal]\nurl = \"postgres://u@db:5432/j?{query}\"\n");
    refused(
        journal("sslmode=verify-full"),
        "journal.url",
        "need sslrootcert",
    );
    refused(
        journal("sslmode=verify-full&sslrootcert=ca.pem"),
        "journal.url",
        "give its absolute path",
    );
    refused(
        journal("sslmode=verify-full&sslrootcert=/nonexistent/db-ca.pem"),
        "journal.url",
        "/nonexistent/db-ca.pem",
    );
    refused(journal("sslmode=allow"), "journal.url", "sslmode=allow");
    let ca_path = dir.path().join("ca.pem");
    let fine = journal(&format!(
        "sslmode=verify-full&sslrootcert={}",
        ca_path.display()
    ));
    let url = load(&fine).unwrap().journal.url.unwrap();
    assert_eq!(
        url.shown(),
        "postgres://u@db:5432/j",
        "no TLS parameter is shown"
    );
}
