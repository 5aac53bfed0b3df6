//! Tasks belong to their agent's tenant, and a write that names no task is a task of its
//! own — counted at the provider.

use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};

use crate::support::{AGENT_TOKEN, client, start};
use crate::{agent, fake, provider};

const OBJECTS: &str = "/v1/objects";
const OTHER_TOKEN: &str = crate::NOISY_TOKEN;

fn config(fake: &FakeProvider) -> String {
    format!(
        "{}{}{}",
        provider("stripe", &fake.url(""), ""),
        agent("bot", AGENT_TOKEN, "acme", ""),
        agent("other", OTHER_TOKEN, "globex", ""),
    )
}

/// A payment of `amount` by the agent of `token`, with `hints`: its status, its
/// `x-sluice-replayed` header and its body.
async fn pay(url: &str, token: &str, hints: &[(&str, &str)], amount: u32) -> (u16, bool, String) {
    let mut r = client()
        .post(format!("{url}/stripe{OBJECTS}"))
        .bearer_auth(token)
        .header("content-type", "application/x-www-form-urlencoded");
    for (k, v) in hints {
        r = r.header(*k, *v);
    }
    let r = r.body(format!("amount={amount}")).send().await.unwrap();
    let replayed = r.headers().contains_key("x-sluice-replayed");
    (r.status().as_u16(), replayed, r.text().await.unwrap())
}

/// Issue 27: `x-sluice-task` from any agent could name another's task. Two tenants that
/// pick the same task and action names have two actions: each is done, and neither is
/// answered with the other's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tenants_that_name_one_task_and_action_each_do_their_own() {
    let fake = fake(FakeConfig::new(Style::Stripe)).await;
    let side = start(&config(&fake)).await;
    let hints = [("x-sluice-task", "invoices"), ("x-sluice-action", "pay-1")];
    let (status, replayed, mine) = pay(&side.url, AGENT_TOKEN, &hints, 100).await;
    assert_eq!((status, replayed), (200, false), "{mine}");
    let (status, replayed, theirs) = pay(&side.url, OTHER_TOKEN, &hints, 999).await;
    assert_eq!(
        (status, replayed),
        (200, false),
        "not acme's answer: {theirs}"
    );
    assert_ne!(mine, theirs);
    assert_eq!(fake.stored().len(), 2, "each tenant's payment, once");
    // The same agent again: its own action, answered from the journal.
    let (status, replayed, again) = pay(&side.url, AGENT_TOKEN, &hints, 100).await;
    assert_eq!((status, replayed), (200, true), "{again}");
    assert_eq!(fake.stored().len(), 2);
    let tasks: Vec<String> = side
        .sluice
        .journal()
        .all()
        .unwrap()
        .into_iter()
        .map(|a| a.task)
        .collect();
    assert_eq!(tasks, ["acme/invoices", "globex/invoices"]);
}

/// Issue 27: every write of an agent that named no task was one task `agent:NAME`, so its
/// first write that ran out of time held every later write of the agent until a person
/// decided. Each is now a task of its own: the next goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_runs_out_of_time_holds_only_itself() {
    let fake = fake(FakeConfig::new(Style::Stripe)).await;
    let side = start(&config(&fake)).await;
    // A 429 asking for 30 s, and a write given 2 s: its time budget is spent, a person
    // decides.
    fake.script(
        OBJECTS,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(30)),
        }],
    );
    let first = [
        ("x-sluice-class", "idempotent-write"),
        ("x-sluice-action", "pay-1"),
        ("x-sluice-deadline-ms", "2000"),
    ];
    let (status, _, body) = pay(&side.url, AGENT_TOKEN, &first, 100).await;
    assert_eq!(status, 409, "escalated: {body}");
    // The scope's hold over (a 429 holds the credential's scope), the agent's next write.
    side.sluice.executor().lift_hold("stripe", "team");
    let second = [
        ("x-sluice-class", "idempotent-write"),
        ("x-sluice-action", "pay-2"),
    ];
    let (status, _, body) = pay(&side.url, AGENT_TOKEN, &second, 200).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(fake.stored().len(), 1, "the second payment went");
}
