//! `--fake-faults`: the fake providers behind `sluice serve --fake-providers` play a 429
//! storm, and the agent never sees it — as `docs/sidecar.md` shows a newcomer.

use std::net::SocketAddr;

use crate::sidecar::{Sidecar, http};

const CHAT: &str =
    r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":16}"#;

#[test]
fn a_429_storm_the_fake_providers_play_is_absorbed() {
    let sidecar =
        Sidecar::readme_example_with("agent-secret", &["--fake-faults", "rpm=60,429=20%"]);
    assert!(
        sidecar
            .log()
            .contains("(429 on 20% of attempts, limit 60 requests/min)"),
        "{}",
        sidecar.log()
    );
    let addr: SocketAddr = sidecar.url.trim_start_matches("http://").parse().unwrap();
    let mut retried = 0;
    for _ in 0..20 {
        let answer = http(
            addr,
            "POST",
            "/openai/v1/chat/completions",
            "agent-secret",
            CHAT,
        )
        .expect("the sidecar answers");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        if !answer.contains("x-sluice-attempts: 1\r\n") {
            retried += 1;
        }
    }
    // One attempt in five is refused, evenly: 20 calls take about 25 attempts.
    assert!((3..=7).contains(&retried), "{retried} calls needed a retry");
    let metrics = sidecar.metrics();
    let limited = metrics
        .lines()
        .find(|l| l.starts_with("sluice_retries_total") && l.contains("rate-limited"))
        .unwrap_or_else(|| panic!("no rate-limited retries counted:\n{metrics}"));
    assert!(limited.ends_with(&format!(" {retried}")), "{limited}");
}
