//! Spend budgets at the wire, on virtual time: a host in front of a fake OpenAI-style
//! provider whose answers report usage, its wall clock set to a chosen date (tokio's paused
//! clock moves it). The provider's ledger says what was sent; the journal says what each
//! tenant spent.

use std::sync::Arc;
use std::time::Duration;

use sluice::Sluice;
use sluice::admission::TaskId;
use sluice::budget::{Budget, Measure, Window};
use sluice::clock::{TokioWallClock, tokio_now};
use sluice::contract::RequestClass;
use sluice::execute::{Call, NextAction, Outcome, Reason, Terminal};
use sluice::journal::State;
use sluice::journal::escalations::{Choice, Decision, Kind};
use sluice::retry::RetryConfig;
use sluice::writes::WriteOutcome;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::stack::{builder, transport, write};

const CHAT: &str = "/v1/chat/completions";

/// Tenants of tier `free` may make 2 calls a month and spend 20 000 micro-units a month,
/// in Berlin; `gpt-4o` costs 2.50 per million input tokens and 10.00 per million output.
const BUDGETS: &str = r#"
[budgets]
time_zone = "Europe/Berlin"

[tiers.free.budgets]
requests_per_month = 2
spend_micros_per_month = 20000

[tenants]
default_tier = "free"

[providers.openai.limits]
requests_per_minute = 600

[providers.openai.prices."gpt-4o"]
input_micros_per_million = 2500000
output_micros_per_million = 10000000
"#;

fn utc(s: &str) -> i64 {
    s.parse::<jiff::Timestamp>().unwrap().as_millisecond()
}

/// A host in front of `fake` with `config`, its state in `dir`, its wall clock at `wall_ms`.
fn host(config: &str, dir: &std::path::Path, wall_ms: i64) -> Sluice {
    builder(
        "openai",
        config,
        RetryConfig::default(),
        transport(Duration::from_secs(30)),
    )
    .clock(Arc::new(TokioWallClock::starting_at(wall_ms)))
    .state_dir(dir)
    .build()
    .expect("a host")
}

/// A chat completion for `tenant`: a prompt of 100 tokens (400 characters) and up to 1 000
/// tokens of answer.
fn chat(fake: &FakeProvider, tenant: &str) -> Call {
    let body = serde_json::json!({
        "model": "gpt-4o",
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": "x".repeat(400)}],
    });
    Call::post("openai", fake.url(CHAT), body.to_string())
        .credential("team-key")
        .tenant(tenant)
        .class(RequestClass::Read)
        .header("content-type", "application/json")
}

fn ended(outcome: Outcome) -> Box<Terminal> {
    match outcome {
        Outcome::Ended(t) => t,
        Outcome::Succeeded { .. } => panic!("expected the call to end without success"),
    }
}

fn used(sluice: &Sluice, tenant: &str, budget: Budget) -> u64 {
    let budgets = sluice.executor().budgets().expect("budgets");
    let standing = budgets.standing(tenant).unwrap();
    standing.iter().find(|s| s.budget == budget).unwrap().used
}

const SPEND: Budget = Budget::new(Measure::SpendMicros, Window::Month);
const REQUESTS: Budget = Budget::new(Measure::Requests, Window::Month);
const TOKENS: Budget = Budget::new(Measure::Tokens, Window::Day);

async fn fake() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_spent_budget_refuses_at_once_while_another_tenant_goes_through() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let sluice = host(BUDGETS, dir.path(), utc("2026-03-10T12:00:00Z"));
    for _ in 0..2 {
        let outcome = sluice.execute(&chat(&fake, "acme")).await;
        assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    }
    assert_eq!(fake.attempts().len(), 2);

    let before = tokio_now();
    let t = ended(sluice.execute(&chat(&fake, "acme")).await);
    assert_eq!(
        tokio_now(),
        before,
        "refused at once, not after a wait in the queue"
    );
    let Reason::BudgetSpent(spent) = &t.reason else {
        panic!("expected a spent budget: {:?}", t.reason);
    };
    assert_eq!(spent.tenant, "acme");
    assert_eq!(spent.budget, REQUESTS);
    // April begins at midnight in Berlin: 22:00 UTC on 31 March.
    assert_eq!(spent.resets_at_ms, utc("2026-03-31T22:00:00Z"));
    let until = Duration::from_millis(
        u64::try_from(utc("2026-03-31T22:00:00Z") - utc("2026-03-10T12:00:00Z")).unwrap(),
    );
    assert_eq!(t.next_action, NextAction::WaitForQuota(Some(until)));
    assert!(!t.sent);
    assert_eq!((t.attempts, t.waited), (0, Duration::ZERO));
    assert_eq!(
        fake.attempts().len(),
        2,
        "nothing was sent for the refused call"
    );
    assert!(
        t.reason.to_string().contains("requests_per_month"),
        "{}",
        t.reason
    );

    // Another tenant of the same tier has its own budget.
    let outcome = sluice.execute(&chat(&fake, "bob")).await;
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    assert_eq!(fake.attempts().len(), 3);
    assert_eq!(
        used(&sluice, "acme", REQUESTS),
        2,
        "a refused call is not counted"
    );
    sluice.close().unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn spend_is_estimated_before_the_call_and_corrected_by_the_usage_it_reports() {
    let fake = fake().await;
    fake.script(CHAT, [Fault::Slow(Duration::from_secs(10))]);
    let dir = tempfile::tempdir().unwrap();
    let sluice = Arc::new(host(BUDGETS, dir.path(), utc("2026-03-10T12:00:00Z")));
    let call = chat(&fake, "acme");
    let running = {
        let sluice = sluice.clone();
        tokio::spawn(async move { sluice.execute(&call).await })
    };
    tokio::time::sleep(Duration::from_secs(5)).await;
    // While the provider thinks: the plugin's estimate, 101 prompt tokens (the 400
    // characters and the role's 4) and the whole max_tokens, unsplit, priced at the output
    // price (the higher): 1 101 × 10.
    assert_eq!(used(&sluice, "acme", TOKENS), 1_101);
    assert_eq!(used(&sluice, "acme", SPEND), 11_010);

    let outcome = running.await.unwrap();
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    let out = fake.attempts()[0].output_tokens;
    assert!(
        out > 0 && out < 1_000,
        "the fake answers shorter than max_tokens: {out}"
    );
    // Corrected to what the answer reported: 100 input tokens at 2.50 per million, and
    // the output it produced at 10.00.
    assert_eq!(used(&sluice, "acme", TOKENS), 100 + out);
    assert_eq!(used(&sluice, "acme", SPEND), 250 + 10 * out);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_call_that_sent_nothing_gives_its_charge_back_and_one_without_usage_keeps_it() {
    let fake = fake().await;
    fake.script(
        CHAT,
        [Fault::Status {
            status: 400,
            code: "invalid_request",
        }],
    );
    let dir = tempfile::tempdir().unwrap();
    let sluice = host(BUDGETS, dir.path(), utc("2026-03-10T12:00:00Z"));
    // Answered with an error that reports no usage: the estimate stands.
    let t = ended(sluice.execute(&chat(&fake, "acme")).await);
    assert!(t.sent, "{t:?}");
    assert_eq!(used(&sluice, "acme", SPEND), 11_010);
    // A call of a cancelled task is never sent: its charge is given back.
    let task = TaskId::named("cancelled-task");
    sluice.executor().cancel_task(task);
    let t = ended(sluice.execute(&chat(&fake, "bob").task(task)).await);
    assert_eq!(t.reason, Reason::Cancelled);
    assert!(!t.sent, "{t:?}");
    assert_eq!(used(&sluice, "bob", REQUESTS), 0);
    assert_eq!(fake.attempts().len(), 1);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_month_ends_at_midnight_in_berlin_across_which_calls_go_through_again() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    // 23:30 on 31 March in Berlin (21:30 UTC).
    let sluice = host(BUDGETS, dir.path(), utc("2026-03-31T21:30:00Z"));
    for _ in 0..2 {
        let outcome = sluice.execute(&chat(&fake, "acme")).await;
        assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    }
    let t = ended(sluice.execute(&chat(&fake, "acme")).await);
    assert!(matches!(t.reason, Reason::BudgetSpent(_)), "{:?}", t.reason);

    // 29 minutes on, still March in Berlin (and in UTC): still refused.
    tokio::time::sleep(Duration::from_secs(29 * 60)).await;
    let t = ended(sluice.execute(&chat(&fake, "acme")).await);
    assert!(matches!(t.reason, Reason::BudgetSpent(_)), "{:?}", t.reason);
    // Past midnight in Berlin, 22:00 on 31 March in UTC: April's budget is whole.
    tokio::time::sleep(Duration::from_secs(2 * 60)).await;
    let outcome = sluice.execute(&chat(&fake, "acme")).await;
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    assert_eq!(used(&sluice, "acme", REQUESTS), 1, "April counts from zero");
    assert_eq!(fake.attempts().len(), 3);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_restart_in_the_middle_of_the_month_keeps_what_was_spent() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let first = host(BUDGETS, dir.path(), utc("2026-03-10T12:00:00Z"));
    for _ in 0..2 {
        let outcome = first.execute(&chat(&fake, "acme")).await;
        assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    }
    let spent = used(&first, "acme", SPEND);
    first.close().unwrap();
    drop(first);

    // Five days later, a new host on the same state directory.
    let second = host(BUDGETS, dir.path(), utc("2026-03-15T12:00:00Z"));
    assert_eq!(used(&second, "acme", SPEND), spent);
    assert_eq!(used(&second, "acme", REQUESTS), 2);
    let t = ended(second.execute(&chat(&fake, "acme")).await);
    assert!(matches!(t.reason, Reason::BudgetSpent(_)), "{:?}", t.reason);
    assert_eq!(
        fake.attempts().len(),
        2,
        "the restarted host sent nothing for it"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_write_blocked_by_a_spent_budget_escalates_with_wait_raise_or_cancel_and_sends_nothing() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let sluice = host(BUDGETS, dir.path(), utc("2026-03-10T12:00:00Z"));
    for _ in 0..2 {
        let outcome = sluice.execute(&chat(&fake, "acme")).await;
        assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    }
    let w = write(
        "openai",
        "t",
        "upload",
        &fake.url("/v1/files"),
        RequestClass::IdempotentWrite,
        "purpose=assistants",
    );
    let outcome = sluice.write(&w).await.unwrap();
    let WriteOutcome::Escalated { action, escalation } = outcome else {
        panic!("a spent budget goes to a person: {outcome:?}")
    };
    assert_eq!(action.state, State::Escalated);
    assert_eq!(fake.attempts().len(), 2, "nothing was sent for the write");
    let e = sluice.journal().escalations().get(escalation).unwrap();
    assert_eq!(e.kind, Kind::BudgetSpent);
    assert_eq!(
        Kind::BudgetSpent.options(),
        [Choice::Wait, Choice::RaiseBudget, Choice::Cancel]
    );
    for shown in ["wait", "raise-budget", "cancel", "requests_per_month"] {
        assert!(
            e.case_json.contains(shown),
            "no `{shown}` in:\n{}",
            e.case_json
        );
    }

    let cancel = Decision {
        choice: Choice::Cancel,
        decided_by: "ops@example".into(),
        operation_id: None,
        note: String::new(),
    };
    sluice
        .journal()
        .escalations()
        .resolve(escalation, &cancel, 0)
        .unwrap();
    sluice.escalations().apply().await.unwrap();
    assert_eq!(
        sluice.journal().get(action.id).unwrap().state,
        State::Cancelled
    );
    assert_eq!(fake.attempts().len(), 2);
}

/// A budget's charge to a group's journal in PostgreSQL that waits there (here, on a lock
/// another session holds) waits on the blocking pool: the thread the call was made on goes
/// on serving every other task meanwhile. On a single-threaded runtime, as each of the
/// sidecar's connection workers is, a charge made on the thread itself would stop them all
/// until the lock went.
#[tokio::test(flavor = "current_thread")]
async fn a_charge_waiting_on_a_group_journal_holds_up_no_other_task_on_its_thread() {
    let Some(url) = sluice_tests::postgres::fresh_schema() else {
        return;
    };
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!("{BUDGETS}\n[journal]\nurl = \"{url}\"\n");
    let sluice = host(&config, dir.path(), utc("2026-03-10T12:00:00Z"));
    assert!(sluice.journal().is_shared());

    // Another session takes the budgets' table for 600 ms.
    let holder = std::process::Command::new("psql")
        .args([
            url.as_str(),
            "-qAtc",
            "BEGIN; LOCK TABLE budget_use IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(0.6); COMMIT;",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("psql runs (Debian's postgresql-client)");
    let held = || {
        let out = std::process::Command::new("psql")
            .args([
                url.as_str(),
                "-qAtc",
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
                 WHERE c.relname = 'budget_use' AND l.mode = 'AccessExclusiveLock' AND l.granted",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    };
    let mut tries = 0;
    while !held() {
        tries += 1;
        assert!(tries < 200, "the other session never took the lock");
        std::thread::sleep(Duration::from_millis(5));
    }

    let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let ticker = tokio::spawn({
        let ticks = ticks.clone();
        async move {
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    let started = tokio_now();
    let outcome = sluice.execute(&chat(&fake, "acme")).await;
    let waited = tokio_now() - started;
    ticker.abort();
    let status = tokio::task::spawn_blocking(move || {
        let mut holder = holder;
        holder.wait()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(status.success(), "the other session: {status}");

    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    assert!(
        waited >= Duration::from_millis(300),
        "the charge waited for the lock ({waited:?}): the test holds what it means to"
    );
    let ticks = ticks.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        ticks >= 30,
        "the runtime's other task ran {ticks} times in {waited:?}, every 5 ms: the charge \
         held the thread"
    );
    assert_eq!(used(&sluice, "acme", REQUESTS), 1);
}
