//! Credentials stay put: what an agent sends that is a credential (or an account header it
//! may not set) never reaches the provider and is never journaled — checked at the fake
//! provider, which records the names of every header it received, and in the journal.

use sluice::journal::Journal;
use sluice_fake_provider::{FakeConfig, Style};

use crate::support::{AGENT_TOKEN, PROVIDER_KEY, client, start};
use crate::{agent, fake, provider};

const OTHER_TOKEN: &str = "project-agent-token";

/// What an agent sends beside its token: credentials of its own and account headers.
const SENT: [(&str, &str); 5] = [
    ("cookie", "session=agent-session-cookie"),
    ("x-auth-token", "agent-own-token"),
    ("x-vendor-secret", "agent-own-secret"),
    ("openai-organization", "org-someone-else"),
    ("openai-project", "proj-someone-else"),
];

/// Issue 27: `cookie`, `openai-organization` and `openai-project` passed through (the last
/// two let an agent bill another project on an unscoped key), and a write's headers were
/// journaled with only `Idempotency-Key` removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_s_credentials_and_account_headers_never_reach_the_provider_or_the_journal() {
    let fake = fake(FakeConfig::new(Style::OpenAi)).await;
    let text = format!(
        "{}{}{}",
        provider("openai", &fake.url(""), ""),
        agent("bot", AGENT_TOKEN, "acme", ""),
        agent(
            "projects",
            OTHER_TOKEN,
            "globex",
            "pass_headers = [\"openai-project\"]"
        ),
    );
    let side = start(&text).await;
    let send = |token: &'static str, path: &'static str, action: Option<&'static str>| {
        let mut r = client()
            .post(format!("{}/openai{path}", side.url))
            .bearer_auth(token)
            .header("content-type", "application/json");
        for (k, v) in SENT {
            r = r.header(k, v);
        }
        if let Some(a) = action {
            r = r.header("x-sluice-action", a);
        }
        r.body(r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":8}"#)
            .send()
    };
    // A read and a write of agent `bot`, a read of agent `projects`.
    assert_eq!(
        send(AGENT_TOKEN, "/v1/chat/completions", None)
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        send(AGENT_TOKEN, "/v1/files", Some("upload-1"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        send(OTHER_TOKEN, "/v1/chat/completions", None)
            .await
            .unwrap()
            .status(),
        200
    );

    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 3);
    for (i, a) in attempts.iter().enumerate() {
        for (name, _) in SENT {
            let allowed = i == 2 && name == "openai-project";
            assert_eq!(
                a.headers.iter().any(|h| h == name),
                allowed,
                "attempt {i} ({}): `{name}` in {:?}",
                a.path,
                a.headers
            );
        }
        assert_eq!(
            a.headers.iter().filter(|h| *h == "authorization").count(),
            1,
            "the provider key, once"
        );
    }

    let journal = Journal::open_existing(&side.state.path().join("state/journal.sqlite")).unwrap();
    let actions = journal.all().unwrap();
    assert_eq!(actions.len(), 1);
    let stored = &actions[0].request;
    for (name, value) in SENT {
        assert!(!stored.contains(name), "`{name}` journaled: {stored}");
        assert!(!stored.contains(value), "`{value}` journaled: {stored}");
    }
    assert!(!stored.contains(PROVIDER_KEY));
}
