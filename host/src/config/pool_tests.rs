//! Pools and credentials' own limits and endpoints, as the file gives them.

use std::path::Path;

use super::SluiceConfig;

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
base_url = "https://east.example.azure.com/"
path = "/openai/deployments/gpt-4o/{path}?api-version=2024-10-21"
[providers.openai.credentials.east.limits]
requests_per_minute = 3000
[providers.openai.credentials.east.models.gpt-4o]
tokens_per_minute = 450000
[providers.openai.pools.gpt]
members = ["team", "east"]
weights = { east = 3 }
"#;

fn error(text: &str) -> String {
    SluiceConfig::from_toml(text, Path::new("."))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_pool_and_its_members_own_limits_and_endpoints_are_read() {
    let c = SluiceConfig::from_toml(POOLED, Path::new(".")).unwrap();
    let east = &c.providers["openai"].credentials["east"];
    assert_eq!(east.header, "api-key");
    assert_eq!(
        east.base_url.as_deref(),
        Some("https://east.example.azure.com")
    );
    assert!(east.path.as_deref().unwrap().contains("{path}"));
    let admission = &c.admission.providers["openai"];
    let own = &admission.credentials["east"];
    assert_eq!(
        own.limits
            .as_ref()
            .unwrap()
            .requests_per_minute
            .unwrap()
            .get(),
        3000
    );
    assert!(own.models.contains_key("gpt-4o"));
    assert!(
        !admission.credentials.contains_key("team"),
        "no limits of its own"
    );
    let pool = &admission.pools["gpt"];
    let weighted: Vec<(&str, u32)> = pool.weighted().collect();
    assert_eq!(weighted, [("team", 1), ("east", 3)]);
}

#[test]
fn a_bad_pool_is_named_with_what_to_do() {
    let cases = [
        (
            POOLED.replace(
                r#"members = ["team", "east"]"#,
                r#"members = ["team", "east", "west"]"#,
            ),
            "providers.openai.pools.gpt.members",
            "`west` is not one of the provider's credentials",
        ),
        (
            POOLED.replace(r#"members = ["team", "east"]"#, "members = []"),
            "providers.openai.pools.gpt.members",
            "is empty",
        ),
        (
            POOLED.replace(r#"["team", "east"]"#, r#"["team", "team"]"#),
            "providers.openai.pools.gpt.members",
            "names `team` twice",
        ),
        (
            POOLED.replace("east = 3", "west = 3"),
            "providers.openai.pools.gpt.weights.west",
            "not a member",
        ),
        (
            POOLED.replace(
                "[providers.openai.pools.gpt]",
                "[providers.openai.pools.team]",
            ),
            "providers.openai.pools.team",
            "also a credential's label",
        ),
        (
            POOLED.replace("base_url = \"https://east", "base_url = \"east"),
            "providers.openai.credentials.east.base_url",
            "absolute",
        ),
        (
            POOLED.replace("path = \"/openai", "path = \"openai"),
            "providers.openai.credentials.east.path",
            "starts with `/`",
        ),
        (
            POOLED.replace("requests_per_minute = 3000", "requests_per_minutes = 3000"),
            "requests_per_minutes",
            "unknown field",
        ),
    ];
    for (text, key, why) in cases {
        let e = error(&text);
        assert!(e.contains(key), "{key}: {e}");
        assert!(e.contains(why), "{why}: {e}");
    }
}
