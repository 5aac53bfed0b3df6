//! Hosts in this process sharing one `redis-server`: holds, claims, tenants' quotas, costs
//! above the burst, shared slots, calls given up or cancelled at the gate, and the fallback
//! when Redis is unreachable.

use std::sync::Arc;
use std::time::Duration;

use sluice::Sluice;
use sluice::admission::TaskId;
use sluice::admission::shared::ClaimError;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome, Reason};
use sluice::writes::{WriteError, WriteOutcome};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::write;
use tokio::task::JoinHandle;

use crate::support::{
    CHAT, Stage, chat, flush_all, host, load, only_the_first_host_sends, payment, rate,
    worst_excess,
};

/// Hosts A and B on one quota; A's call is answered 429 with `Retry-After: 2`, and A has
/// had the moment it takes to share the hold. Returns A's call (it goes again after the
/// hold) and host B.
async fn held_by_a_429(stage: &Stage) -> (JoinHandle<Outcome>, Sluice) {
    let fake = &stage.fake;
    fake.script(
        CHAT,
        [Fault::RateLimited {
            retry_after: Some(RetryAfter::Seconds(2)),
        }],
    );
    let limits = "requests_per_minute = 6000";
    let a = stage.host("a", "openai", limits);
    let b = stage.host("b", "openai", limits);
    let call = chat(fake);
    let first = tokio::spawn(async move { a.executor().execute(&call).await });
    while fake.answered(429) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    (first, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_seen_by_one_host_holds_the_scope_for_the_other() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::OpenAi).await;
    let fake = &stage.fake;
    let (first, b) = held_by_a_429(&stage).await;
    let call = chat(fake);
    assert!(matches!(
        b.executor().execute(&call).await,
        Outcome::Succeeded { .. }
    ));
    assert!(matches!(
        first.await.expect("a's call"),
        Outcome::Succeeded { .. }
    ));
    let attempts = fake.attempts();
    let refused_at = attempts[0].at;
    assert_eq!(attempts[0].status, Some(429));
    for later in &attempts[1..] {
        let after = later.at.saturating_sub(refused_at);
        assert!(
            after >= Duration::from_millis(1_900),
            "an attempt {after:?} after the 429"
        );
    }
    assert_eq!(attempts.len(), 3, "one 429, then one call from each host");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_host_given_the_same_action_refuses_it_naming_its_owner() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::Stripe).await;
    let fake = &stage.fake;
    let limits = "requests_per_minute = 6000";
    let a = stage.host("host-a", "stripe", limits);
    let b = stage.host("host-b", "stripe", limits);
    let pay = payment(fake, "invoice-42");
    only_the_first_host_sends(&a, &b, &pay).await;
    // Host A may write it again (it is its own): answered from its journal, not resent.
    assert!(matches!(
        a.write(&pay).await,
        Ok(WriteOutcome::Succeeded { .. })
    ));
    assert_eq!(fake.stored().len(), 1);
    assert_eq!(fake.attempts().len(), 1);
    assert!(b.journal().all().expect("journal").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_a_host_paces_at_its_share_of_the_limit() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    // A port nothing listens on: the store is unreachable from the start.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    // 600 a minute paced at 540: 9 a second; two hosts, so 4.5 a second for this one.
    let sluice = Arc::new(host(
        (&format!("redis://127.0.0.1:{port}"), "sluice", ""),
        "alone",
        "openai",
        dir.path(),
        "requests_per_minute = 600",
    ));
    let times = load(&[sluice], 4, &chat(&fake), &fake, Duration::from_secs(8)).await;
    let rate = rate(&times);
    println!("{} attempts at {rate:.2}/s", times.len());
    assert!(
        (3.8..=4.6).contains(&rate),
        "{rate:.2}/s: not half of the 9/s pace"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_own_quota_holds_across_hosts() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::OpenAi).await;
    let fake = &stage.fake;
    // The account allows far more; tenant acme's tier allows 120 a minute, paced at 108:
    // 1.8 a second across both hosts, not 1.8 from each.
    let limits = "requests_per_minute = 60000\n\n[tiers.small.limits]\nrequests_per_minute = 120\n\n\
                  [tenants.assign]\nacme = \"small\"";
    let a = Arc::new(stage.host("a", "openai", limits));
    let b = Arc::new(stage.host("b", "openai", limits));
    let times = load(&[a, b], 4, &chat(fake), fake, Duration::from_secs(8)).await;
    let excess = worst_excess(&times, 60.0 / 108.0);
    let rate = rate(&times);
    println!(
        "{} attempts at {rate:.2}/s, worst excess {excess:.2}",
        times.len()
    );
    assert!(
        excess <= 2.0,
        "{excess:.1} attempts beyond the tenant's pace"
    );
    assert!(rate >= 1.6, "{rate:.2}/s: the tenant's quota was not used");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_costing_more_than_the_burst_goes_once_the_shared_quota_was_idle_long_enough() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::OpenAi).await;
    let fake = &stage.fake;
    // 100 000 tokens a minute paced at 99%: a burst of 1 001 tokens. The call plans about
    // 1 500 (its max_tokens and its prompt): more than the burst, less than the limit.
    let limits = "margin = 0.99\n---\ntokens_per_minute = 100000";
    let a = stage.host("a", "openai", limits);
    let call = Call::post(
        "openai",
        fake.url(CHAT),
        r#"{"model":"gpt-4o","max_tokens":1500,"messages":[{"role":"user","content":"hi"}]}"#,
    )
    .credential("team-key")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json")
    .deadline(Duration::from_secs(10));
    let outcome = tokio::time::timeout(Duration::from_secs(10), a.executor().execute(&call))
        .await
        .expect("admitted: a cost above the burst fits after an idle stretch");
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    assert_eq!(fake.attempts().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_slot_is_taken_again_soon_after_it_frees_not_when_its_lease_expires() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::OpenAi).await;
    let fake = &stage.fake;
    fake.script(
        CHAT,
        std::iter::repeat_n(Fault::Slow(Duration::from_millis(200)), 12),
    );
    // One slot for both hosts; leases of 10 s (the default).
    let limits = "requests_per_minute = 60000\nconcurrent_requests = 1";
    let hosts = [
        Arc::new(stage.host("a", "openai", limits)),
        Arc::new(stage.host("b", "openai", limits)),
    ];
    let call = chat(fake);
    #[allow(clippy::disallowed_methods, reason = "a test's stopwatch")]
    let started = tokio::time::Instant::now();
    let mut calls = Vec::new();
    for sluice in &hosts {
        for _ in 0..2 {
            let (s, call) = (sluice.clone(), call.clone());
            calls.push(tokio::spawn(async move {
                for _ in 0..3 {
                    assert!(matches!(
                        s.executor().execute(&call).await,
                        Outcome::Succeeded { .. }
                    ));
                }
            }));
        }
    }
    for c in calls {
        c.await.expect("a caller");
    }
    let took = started.elapsed();
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 12);
    // One at a time: each arrived after the one before had its 200 ms.
    for pair in attempts.windows(2) {
        let gap = pair[1].at.saturating_sub(pair[0].at);
        assert!(gap >= Duration::from_millis(190), "two calls {gap:?} apart");
    }
    println!("12 calls of 200 ms through one shared slot in {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "{took:?}: waited for leases to expire"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_live_process_with_the_same_host_id_refuses_writes() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::Stripe).await;
    let fake = &stage.fake;
    let limits = "requests_per_minute = 6000";
    let first = stage.host("api-1", "stripe", limits);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Another process given the same id (its own state directory).
    let second = stage.another_process("api-1", "stripe", limits);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pay = |action: &str| {
        write(
            "stripe",
            "invoice-7",
            action,
            &fake.url("/v1/payment_intents"),
            RequestClass::UncertainWrite,
            "amount=100&currency=usd",
        )
    };
    match second.write(&pay("pay")).await {
        Err(WriteError::Claim(ClaimError::HostIdInUse { host, .. })) => assert_eq!(host, "api-1"),
        other => panic!("two owners of one host id: {other:?}"),
    }
    assert!(matches!(
        first.write(&pay("pay")).await,
        Ok(WriteOutcome::Succeeded { .. })
    ));
    assert_eq!(fake.stored().len(), 1);
    assert!(second.journal().all().expect("journal").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_given_up_while_the_store_answers_leaves_no_slot_taken() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    // The store may take 5 s to answer; one slot for both hosts, on leases of 10 s.
    let stage = Stage::alone(Style::OpenAi)
        .await
        .store_keys("timeout_ms = 5000");
    let fake = &stage.fake;
    let limits = "requests_per_minute = 60000\nconcurrent_requests = 1";
    let a = stage.host("a", "openai", limits);
    let b = stage.host("b", "openai", limits);
    let call = chat(fake);
    // Each host has its connection and its scripts loaded (one call each)...
    for sluice in [&a, &b] {
        let outcome = sluice.executor().execute(&call).await;
        assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    }
    // ...when Redis stalls for 1.5 s; host A's caller gives up while A's check waits for
    // the answer, which then takes the one slot.
    stage.server().pause_clients(Duration::from_millis(1_500));
    let gave_up =
        tokio::time::timeout(Duration::from_millis(300), a.executor().execute(&call)).await;
    assert!(gave_up.is_err(), "{gave_up:?}");
    #[allow(clippy::disallowed_methods, reason = "a test's stopwatch")]
    let started = tokio::time::Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(15), b.executor().execute(&call))
        .await
        .expect("host B's call");
    let took = started.elapsed();
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    println!("host B's call went {took:?} after host A's caller gave up");
    assert!(
        took < Duration::from_secs(4),
        "{took:?}: the slot came back only when its lease expired"
    );
    assert_eq!(fake.attempts().len(), 3, "host A's given-up call was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_at_the_gate_when_its_task_is_cancelled_is_not_sent() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let stage = Stage::start(Style::OpenAi).await;
    let fake = &stage.fake;
    let (first, b) = held_by_a_429(&stage).await;
    let b = Arc::new(b);
    let call = chat(fake);
    // Host B knows of the hold only from the store: its call waits at the gate.
    let task = TaskId::named("job-7");
    let waiting = {
        let (b, call) = (b.clone(), call.clone().task(task));
        tokio::spawn(async move { b.executor().execute(&call).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "host B's call did not wait");
    b.executor().cancel_task(task);
    let outcome = waiting.await.expect("host B's call");
    let Outcome::Ended(t) = &outcome else {
        panic!("host B's call was not refused: {outcome:?}");
    };
    assert_eq!(t.reason, Reason::Cancelled, "{t:?}");
    assert!(!t.sent, "{t:?}");
    assert!(matches!(
        first.await.expect("a's call"),
        Outcome::Succeeded { .. }
    ));
    assert_eq!(fake.attempts().len(), 2, "the 429 and host A's retry only");
}

/// Issue 26: host A did an action, host B refused it; then Redis restarted without
/// persistence, and host B accepted the same action and sent it again — a duplicate at a
/// provider that ignores keys. After the loss, a host that joined the store refuses every
/// action its own journal does not hold (also after it restarts), its own actions go on,
/// and once an operator recovers the store's ownership the claims its hosts re-registered
/// still name their owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_lost_its_state_never_lets_a_second_host_take_an_action() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let mut stage = Stage::alone(Style::GitHub).await;
    let limits = "requests_per_minute = 6000";
    let issues = stage.fake.url("/repos/acme/app/issues");
    let open = |action: &str| open_issue(&issues, action);
    let a = stage.host("host-a", "github", limits);
    let b = stage.host("host-b", "github", limits);
    let done = a.write(&open("c1")).await.expect("host A's write");
    assert!(matches!(done, WriteOutcome::Succeeded { .. }), "{done:?}");
    assert!(matches!(
        b.write(&open("c1")).await,
        Err(WriteError::Claim(ClaimError::Elsewhere { .. }))
    ));

    stage.restart_redis();

    for action in ["c1", "c2"] {
        match answered(&b, &open(action)).await {
            Err(WriteError::Claim(ClaimError::StoreLostState { .. })) => {}
            other => panic!("host B took {action} from a store that lost its state: {other:?}"),
        }
    }
    // Host A's own action is its journal's: answered from it, never resent.
    assert!(matches!(
        answered(&a, &open("c1")).await,
        Ok(WriteOutcome::Succeeded { .. })
    ));
    // Not ready for writes, saying why (what `/readyz` answers).
    let why = b.writes().refused_because().expect("writes are refused");
    assert!(why.contains("lost its state"), "{why}");
    // Host B restarted (its state kept) still knows the store lost its state.
    drop(b);
    let b = stage.host("host-b", "github", limits);
    assert!(matches!(
        b.write(&open("c1")).await,
        Err(WriteError::Claim(ClaimError::StoreLostState { .. }))
    ));
    assert_eq!(stage.fake.stored().len(), 1);
    assert_eq!(stage.fake.duplicates(), 0);

    // The operator recovers once both hosts run: A re-registered c1 when it saw the loss.
    let epoch = stage
        .operator_store()
        .recover_ownership()
        .await
        .expect("recover");
    assert!(!epoch.is_empty());
    match b.write(&open("c1")).await {
        Err(WriteError::Claim(ClaimError::Elsewhere { owner, .. })) => assert_eq!(owner, "host-a"),
        other => panic!("host B took c1 after the recovery: {other:?}"),
    }
    assert_eq!(b.writes().refused_because(), None, "ready again");
    let c2 = b.write(&open("c2")).await.expect("a new action");
    assert!(matches!(c2, WriteOutcome::Succeeded { .. }), "{c2:?}");
    assert_eq!(stage.fake.stored().len(), 2);
    assert_eq!(stage.fake.duplicates(), 0);

    // Lost again, right after the recovery: A re-registers again, in the new store's life,
    // and the operator recovers once it has (as `sluice store recover` insists).
    stage.restart_redis();
    assert!(matches!(
        answered(&a, &open("a3")).await,
        Err(WriteError::Claim(ClaimError::StoreLostState { .. }))
    ));
    re_registered(&stage, "host-a").await;
    stage
        .operator_store()
        .recover_ownership()
        .await
        .expect("recover again");
    match answered(&b, &open("c1")).await {
        Err(WriteError::Claim(ClaimError::Elsewhere { owner, .. })) => assert_eq!(owner, "host-a"),
        other => panic!("host B took c1 after the second loss: {other:?}"),
    }
    assert_eq!(stage.fake.stored().len(), 2);
    assert_eq!(stage.fake.duplicates(), 0);
}

/// The store loses its state at each step of host A's write — before the intent is
/// committed, after it, with the attempt marked sent, once it is answered, once its result
/// is committed: however far A got, host B (which had joined the store) never takes the
/// action, A keeps it, and once the operator recovers, the claim A re-registered names A.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_loses_its_state_at_any_step_of_a_write_never_lets_it_be_done_twice() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    for at in [
        "recording",
        "intent-committed",
        "sent-1",
        "answered-1",
        "result-succeeded",
    ] {
        let stage = Stage::alone(Style::GitHub).await;
        let limits = "requests_per_minute = 6000";
        let issues = stage.fake.url("/repos/acme/app/issues");
        let open = |action: &str| open_issue(&issues, action);
        let url = stage.redis_url();
        let a = stage.host_with_steps("host-a", "github", limits, move |step| {
            if step.name() == at {
                flush_all(&url);
            }
        });
        let b = stage.host("host-b", "github", limits);
        // B has joined the store: an action of its own.
        let mine = b.write(&open("b0")).await.expect("host B's own write");
        assert!(matches!(mine, WriteOutcome::Succeeded { .. }), "{mine:?}");

        let done = answered(&a, &open("c1")).await;
        assert!(
            matches!(done, Ok(WriteOutcome::Succeeded { .. })),
            "{at}: {done:?}"
        );
        match answered(&b, &open("c1")).await {
            Err(WriteError::Claim(ClaimError::StoreLostState { .. })) => {}
            other => panic!("{at}: host B took c1 from a store that lost its state: {other:?}"),
        }
        // A sees the loss at its next claim, and re-registers what its journal holds.
        assert!(matches!(
            answered(&a, &open("a2")).await,
            Err(WriteError::Claim(ClaimError::StoreLostState { .. }))
        ));
        stage
            .operator_store()
            .recover_ownership()
            .await
            .expect("recover");
        match answered(&b, &open("c1")).await {
            Err(WriteError::Claim(ClaimError::Elsewhere { owner, .. })) => {
                assert_eq!(owner, "host-a", "{at}");
            }
            other => panic!("{at}: host B took c1 after the recovery: {other:?}"),
        }
        assert_eq!(stage.fake.stored().len(), 2, "{at}: b0 and c1, once each");
        assert_eq!(stage.fake.duplicates(), 0, "{at}");
    }
}

/// Action `action` of task `triage`: an issue opened at `issues`, a GitHub-style provider
/// that ignores keys (a second send is a second issue).
/// A claim can vanish from a Redis that evicts keys or keeps no append-only file, and a
/// second host would then take its action and send it again: in such a store no write is
/// claimed, recorded or sent, and the error says which setting to change; with
/// `accept_claim_loss` the operator takes the risk and writes go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_can_lose_a_claim_takes_no_write() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let limits = "requests_per_minute = 6000";
    let stores: [(&[&str], &str); 4] = [
        (&["--appendonly", "no"], "appendonly yes"),
        (
            &[
                "--appendonly",
                "yes",
                "--maxmemory",
                "64mb",
                "--maxmemory-policy",
                "volatile-lru",
            ],
            "maxmemory-policy noeviction",
        ),
        (
            &[
                "--appendonly",
                "yes",
                "--maxmemory",
                "64mb",
                "--maxmemory-policy",
                "allkeys-lfu",
            ],
            "maxmemory-policy noeviction",
        ),
        (
            &[
                "--appendonly",
                "yes",
                "--maxmemory",
                "64mb",
                "--maxmemory-policy",
                "noeviction",
            ],
            "",
        ),
    ];
    for (settings, fix) in stores {
        let stage = Stage::alone_with(settings, Style::GitHub).await;
        let issues = stage.fake.url("/repos/acme/app/issues");
        let a = stage.host("host-a", "github", limits);
        let answer = answered(&a, &open_issue(&issues, "c1")).await;
        if fix.is_empty() {
            assert!(
                matches!(answer, Ok(WriteOutcome::Succeeded { .. })),
                "{answer:?}"
            );
            assert_eq!(stage.fake.stored().len(), 1);
            continue;
        }
        match answer {
            Err(WriteError::Claim(e @ ClaimError::MayVanish { .. })) => {
                let said = e.to_string();
                assert!(
                    said.contains(fix) && said.contains("nothing was sent"),
                    "{said}"
                );
            }
            other => panic!("{settings:?}: a write claimed in a store that can lose it: {other:?}"),
        }
        assert!(stage.fake.attempts().is_empty(), "{settings:?}: sent");
        assert!(
            !a.journal().knows("triage", "c1").expect("journal"),
            "{settings:?}: recorded"
        );
        // The operator takes the risk.
        let stage = stage.store_keys("accept_claim_loss = true");
        let b = stage.host("host-b", "github", limits);
        let taken = answered(&b, &open_issue(&issues, "c2")).await;
        assert!(
            matches!(taken, Ok(WriteOutcome::Succeeded { .. })),
            "{settings:?}: {taken:?}"
        );
        assert_eq!(stage.fake.stored().len(), 1);
    }
}

fn open_issue(issues: &str, action: &str) -> sluice::writes::Write {
    write(
        "github",
        "triage",
        action,
        issues,
        RequestClass::UncertainWrite,
        &format!(r#"{{"title":"{action}"}}"#),
    )
}

/// Waits (up to 15 s) until `host` has re-registered its actions in the stage's store.
async fn re_registered(stage: &Stage, host: &str) {
    let store = stage.operator_store();
    for _ in 0..150 {
        if let Ok(hosts) = store.reclaimed_hosts().await
            && hosts.iter().any(|(h, _)| h == host)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{host} never re-registered its actions");
}

/// `host`'s answer to `w` once the store answers again (right after a restart, a claim may
/// find the connection broken: nothing is sent then, and the host tries the store again).
async fn answered(host: &Sluice, w: &sluice::writes::Write) -> Result<WriteOutcome, WriteError> {
    for _ in 0..100 {
        match host.write(w).await {
            Err(WriteError::Claim(ClaimError::Unreachable { .. })) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
    panic!("the store did not answer again within 10 s");
}
