//! One pool on two hosts: two members, each its own provider endpoint with its own limit,
//! judged at the providers — hosts sharing Redis keep every member within its limit, where
//! hosts that count each for itself (the naive router's per-host counters) go over it.

use std::sync::Arc;
use std::time::Duration;

use sluice::Sluice;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_tests::stack::{builder, transport};

use crate::support::{CHAT, Stage};

/// The members' limits, requests a minute.
const LIMITS: [u64; 2] = [120, 240];
/// Long enough for two hosts pacing each at a member's whole rate to pass its minute's limit
/// (each sends its burst and 90% of the pace: 2 × (10% + 90% × 40/60) = 140% of it).
const RUN: Duration = Duration::from_secs(40);

async fn members() -> Vec<FakeProvider> {
    let mut all = Vec::new();
    for rpm in LIMITS {
        let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(rpm))
            .await
            .expect("fake");
        all.push(fake);
    }
    all
}

/// The provider's limits table's body, then each member's endpoint and limit, and the pool.
fn pooled(members: &[FakeProvider]) -> String {
    let mut text = String::from("requests_per_minute = 60\n");
    for (i, (fake, rpm)) in members.iter().zip(LIMITS).enumerate() {
        text.push_str(&format!(
            "[providers.openai.credentials.m{i}]\nenv = \"SLUICE_TEST_UNUSED_KEY\"\n\
             base_url = \"{}\"\n[providers.openai.credentials.m{i}.limits]\n\
             requests_per_minute = {rpm}\n",
            fake.url("")
        ));
    }
    text.push_str("[providers.openai.pools.gpt]\nmembers = [\"m0\", \"m1\"]\n");
    text
}

fn call() -> Call {
    Call::post(
        "openai",
        CHAT,
        r#"{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .pool("gpt")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json")
    .deadline(Duration::from_secs(120))
}

/// Keeps 6 callers per host calling the pool for [`RUN`]; returns the calls that failed.
async fn drive(hosts: &[Arc<Sluice>]) -> usize {
    let failed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut callers = Vec::new();
    for sluice in hosts {
        for _ in 0..6 {
            let (s, failed) = (sluice.clone(), failed.clone());
            callers.push(tokio::spawn(async move {
                loop {
                    if !matches!(
                        s.executor().execute(&call()).await,
                        Outcome::Succeeded { .. }
                    ) {
                        failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    tokio::time::sleep(RUN).await;
    for c in &callers {
        c.abort();
    }
    failed.load(std::sync::atomic::Ordering::Relaxed)
}

/// What each member's provider answered: (200s, 429s).
fn answered(members: &[FakeProvider]) -> Vec<(usize, usize)> {
    members
        .iter()
        .map(|m| (m.answered(200), m.answered(429)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_sharing_redis_keep_every_member_of_a_pool_within_its_limit() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::OpenAi).await;

    // Hosts sharing the members' quotas through Redis.
    let shared_members = members().await;
    let limits = pooled(&shared_members);
    let a = Arc::new(stage.host("a", "openai", &limits));
    let b = Arc::new(stage.host("b", "openai", &limits));

    // The same two hosts' configuration, each counting only its own calls: run beside them.
    let naive_members = members().await;
    let config = format!("[providers.openai.limits]\n{}", pooled(&naive_members));
    let retry = RetryConfig {
        backoff_base_ms: 50,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    };
    let dir = tempfile::tempdir().expect("dir");
    let alone = |id: &str| {
        let host = builder(
            "openai",
            &config,
            retry.clone(),
            transport(Duration::from_secs(5)),
        )
        .state_dir(dir.path().join(id))
        .build()
        .expect("a host");
        Arc::new(host)
    };
    let (shared_hosts, naive_hosts) = ([a, b], [alone("a"), alone("b")]);
    let (shared_failed, naive_failed) = tokio::join!(drive(&shared_hosts), drive(&naive_hosts));
    let shared = answered(&shared_members);
    let naive = answered(&naive_members);

    println!(
        "pool on two hosts, {} s: sharing Redis {shared:?} (200s, 429s by member), \
         {shared_failed} calls failed; counting per host {naive:?}, {naive_failed} failed",
        RUN.as_secs()
    );
    for (i, (ok, limited)) in shared.iter().enumerate() {
        assert_eq!(
            *limited, 0,
            "m{i} went over its limit with Redis shared: {shared:?}"
        );
        // Its pace over the run (90% of its limit), nearly all of it, and never more than
        // that and the limit's burst.
        let paced = LIMITS[i] as f64 * 0.9 * RUN.as_secs_f64() / 60.0;
        let most = paced + LIMITS[i] as f64 * 0.1;
        assert!(*ok as f64 >= 0.9 * paced, "m{i}: {ok} of {paced:.0} paced");
        assert!(*ok as f64 <= most + 2.0, "m{i}: {ok}, more than {most:.0}");
    }
    assert!(
        naive.iter().any(|(_, limited)| *limited > 0),
        "hosts counting for themselves should go over a member's limit: {naive:?}"
    );
}
