use std::path::Path;

use super::*;

fn error(text: &str) -> String {
    from_toml(text, Path::new(".")).expect_err(text).to_string()
}

#[test]
fn a_bad_key_of_the_serve_table_is_named_as_the_file_writes_it() {
    let cases = [
        (
            "[serve.agents.a]\nname_tenant = \"yes\"\n",
            "serve.agents.a.name_tenant",
        ),
        (
            "[serve]\nagent_provider_keys = \"drop\"\n",
            "`serve.agent_provider_keys`: unknown variant `drop`, expected `refuse` or `strip`",
        ),
        (
            "[serve.agents.a]\ntoken = { env = \"T\" }\ntenant = \"t\"\npass_headers = [\"openai-project\", \"authorization\"]\n",
            "serve.agents.a.pass_headers[1]",
        ),
        (
            "[serve.admin]\n",
            "`serve.admin.token`: the admin API needs a token",
        ),
        ("[serve]\nworkers = 1025\n", "serve.workers"),
        (
            "[serve]\ncode_on_huge_pages = \"yes\"\n",
            "serve.code_on_huge_pages",
        ),
        ("[serve]\nlisten_on = \"x\"\n", "unknown field `listen_on`"),
        (
            "serve = 3\n",
            "`serve`: invalid type: integer `3`, expected a table",
        ),
        (
            "[serve.providers.nope]\nerror_shape = \"openai\"\n",
            "`serve.providers.nope`: no provider of that name",
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

#[test]
fn the_library_alone_takes_the_serve_table_as_written() {
    let text = "[serve]\nworkers = 1025\n";
    assert!(SluiceConfig::from_toml(text, Path::new(".")).is_ok());
    assert!(from_toml(text, Path::new(".")).is_err());
}

#[test]
fn the_sidecar_s_workers_are_one_per_cpu_unless_given_and_zero_is_none() {
    let workers = |text: &str| from_toml(text, Path::new(".")).unwrap().serve.workers;
    assert_eq!(workers(""), None);
    assert_eq!(workers("[serve]\nworkers = 3\n"), Some(3));
    assert_eq!(workers("[serve]\nworkers = 0\n"), Some(0));
}

#[test]
fn the_sidecar_moves_its_code_onto_huge_pages_unless_told_not_to() {
    let huge = |text: &str| {
        from_toml(text, Path::new("."))
            .unwrap()
            .serve
            .code_on_huge_pages
    };
    assert!(huge(""));
    assert!(!huge("[serve]\ncode_on_huge_pages = false\n"));
}

#[test]
fn console_operators_are_read_by_name_and_a_name_the_journal_would_refuse_is_named() {
    let text = "[serve.admin]\ntoken = { env = \"A\" }\n\
                [serve.admin.operators]\n\"ops@example.com\" = { env = \"OPS\" }\n";
    let c = from_toml(text, Path::new(".")).unwrap();
    let admin = c.serve.admin.unwrap();
    assert_eq!(
        admin.operators.get("ops@example.com"),
        Some(&TokenSource::Env("OPS".into()))
    );
    let e = error(
        "[serve.admin]\ntoken = { env = \"A\" }\noperators = { \" ops\" = { env = \"O\" } }\n",
    );
    assert!(e.contains("serve.admin.operators.\" ops\""), "{e}");
    assert!(e.contains("space"), "{e}");
}

const POOLED: &str = r#"
[providers.openai]
base_url = "https://api.openai.com"
[providers.openai.limits]
requests_per_minute = 500
[providers.openai.credentials.team]
env = "OPENAI_API_KEY"
[providers.openai.credentials.east]
env = "AZURE_EAST_KEY"
header = "api-key"
[providers.openai.pools.gpt]
members = ["team", "east"]
"#;

#[test]
fn an_agent_may_name_a_pool() {
    let text = format!(
        "{POOLED}\n[serve.agents.a]\ntoken = {{ sha256 = \"{}\" }}\ntenant = \"t\"\n\
         credentials = {{ openai = \"gpt\" }}\n",
        "ab".repeat(32)
    );
    let c = from_toml(&text, Path::new(".")).unwrap();
    assert_eq!(c.serve.agents["a"].credentials["openai"], "gpt");
    let e = error(&text.replace("openai = \"gpt\"", "openai = \"nope\""));
    assert!(e.contains("no credential and no pool named `nope`"), "{e}");
}

#[test]
fn an_agent_s_tier_is_entered_in_the_host_s_tenants() {
    let text = format!(
        "[tiers.paid]\nweight = 4\n[serve.agents.a]\ntoken = {{ sha256 = \"{}\" }}\n\
         tenant = \"acme\"\ntier = \"paid\"\n",
        "ab".repeat(32)
    );
    let c = from_toml(&text, Path::new(".")).unwrap();
    assert_eq!(c.host.admission.tenants.assign["acme"], "paid");
    let e = error(&text.replace("tier = \"paid\"", "tier = \"gold\""));
    assert!(e.contains("no tier `gold`"), "{e}");
}
