//! The sidecar's front door on arbitrary requests: agent admission
//! (`sluice_serve::agents::Agents::admit`), the `x-sluice-*` hints
//! (`sluice_serve::hints::Hints::take`) and the path check
//! (`sluice_serve::request_path::check`).
//!
//! Asserts: an admitted request keeps no credential header nor an account header its agent
//! may not set, and was admitted for the agent's token; a refusal is of a request without
//! that token; hints read are removed from the headers and each text hint is one printable
//! line within its bound; a path the check lets through has no `.` or `..` segment in any
//! spelling and no encoded separator.
#![no_main]

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use sluice_serve::agents::{Agents, Refusal, digest};
use sluice_serve::config::{AgentConfig, ServeConfig, TokenSource};
use sluice_serve::hints::Hints;

const TOKEN: &str = "fuzz-agent-token";

/// Header names the front door reads, and a few it must pass on.
const NAMES: &[&str] = &[
    "authorization",
    "x-api-key",
    "api-key",
    "x-sluice-token",
    "cookie",
    "x-auth-token",
    "x-goog-api-key",
    "openai-organization",
    "openai-project",
    "content-type",
    "x-sluice-class",
    "x-sluice-priority",
    "x-sluice-task",
    "x-sluice-action",
    "x-sluice-goal",
    "x-sluice-tenant",
    "x-sluice-deadline-ms",
    "idempotency-key",
];

fn agents() -> &'static Agents {
    static AGENTS: OnceLock<Agents> = OnceLock::new();
    AGENTS.get_or_init(|| {
        let mut config = ServeConfig::default();
        config.agents.insert(
            "bot".into(),
            AgentConfig {
                token: TokenSource::Sha256(digest(TOKEN)),
                tenant: "acme".into(),
                tier: None,
                name_tenant: true,
                credentials: Default::default(),
                priorities: sluice::admission::ClassSet::ALL,
                pass_headers: vec!["openai-project".into()],
                class_hints: false,
            },
        );
        Agents::load(&config).expect("the fuzz agent")
    })
}

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    headers: Vec<(u8, &'a [u8])>,
    path: &'a str,
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = Input::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let mut headers = HeaderMap::new();
    for (i, value) in input.headers.iter().take(32) {
        let name = HeaderName::from_static(NAMES[usize::from(*i) % NAMES.len()]);
        if let Ok(v) = HeaderValue::from_bytes(value) {
            headers.append(name, v);
        }
    }
    let carried_token = headers.iter().any(|(_, v)| {
        let v = v.to_str().unwrap_or("");
        let t = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
            .unwrap_or(v)
            .trim();
        t == TOKEN
    });
    match agents().admit(&mut headers, &["x-goog-api-key".to_owned()]) {
        Ok(admitted) => {
            assert!(carried_token, "admitted without the agent's token");
            assert_eq!(admitted.agent.name, "bot");
            for name in headers.keys() {
                let n = name.as_str();
                assert!(!sluice::headers::is_credential(n), "{n} left in");
                assert!(
                    !sluice::headers::is_account(n) || n == "openai-project",
                    "{n} left in"
                );
            }
        }
        Err(Refusal::NoToken | Refusal::UnknownToken) => {}
        Err(Refusal::ProviderKey(h)) => assert!(NAMES.contains(&h.as_str()), "{h}"),
    }
    if let Ok(hints) = Hints::take(&mut headers) {
        for name in headers.keys() {
            assert!(!name.as_str().starts_with("x-sluice-"), "{name} left in");
        }
        for text in [&hints.task, &hints.action, &hints.goal, &hints.tenant]
            .into_iter()
            .flatten()
        {
            assert!(!text.is_empty() && !text.contains(['\n', '\r']), "{text:?}");
        }
    }
    if sluice_serve::request_path::check(input.path).is_ok() {
        let lower = input.path.to_ascii_lowercase();
        for encoded in ["%2f", "%5c", "%00"] {
            assert!(!lower.contains(encoded), "{:?}", input.path);
        }
        for segment in lower.split('/') {
            let dots = segment.replace("%2e", ".");
            assert!(dots != "." && dots != "..", "{:?}", input.path);
        }
    }
});
