//! Crash safety: a host process is killed with SIGKILL at a seeded-random step of its writes
//! — before the intent is committed, after it, with an attempt marked sent, while the
//! attempt is at the provider, after the answer arrived, during reconciliation — then
//! restarted until its work is done. Whatever the kill point, the provider holds at most
//! one effect per logical action, exactly one for every action the journal calls
//! succeeded, none for one it calls failed or cancelled, the journal ends with nothing
//! left unsettled, and the audit log still verifies.
//!
//! `CRASH_RUNS` sets the number of seeded runs (24 by default).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sluice::audit::verify;
use sluice::journal::{Journal, State};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{Paths, audit_key};

const OBJECTS: &str = "/v1/objects";

/// How a run's first host dies.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// Stopped dead at its k-th step, then killed.
    PausedAt(u32),
    /// Killed `ms` milliseconds after printing its k-th step, mid-work.
    After(u32, u64),
}

fn spawn(
    url: &str,
    dir: &Path,
    task: &str,
    actions: usize,
    class: &str,
    pause: Option<u32>,
) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crash_host"));
    cmd.args([
        url,
        &dir.display().to_string(),
        task,
        &actions.to_string(),
        class,
    ]);
    if let Some(k) = pause {
        cmd.args(["--pause-at", &k.to_string()]);
    }
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("host.stderr"))
        .expect("a stderr file");
    cmd.stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start the host")
}

/// Runs the host until it prints `until` (then kills it) or ends; returns what it printed.
fn run(mut child: Child, kill: Option<Kill>) -> Vec<String> {
    let stdout = child.stdout.take().expect("piped");
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let step: Option<u32> = line
            .strip_prefix("step ")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok());
        lines.push(line.clone());
        match kill {
            Some(Kill::PausedAt(_)) if line == "paused" => break,
            Some(Kill::After(k, ms)) if step == Some(k) => {
                std::thread::sleep(Duration::from_millis(ms));
                break;
            }
            _ => {}
        }
    }
    // SIGKILL: no destructor, no flush, no goodbye.
    let _ = child.kill();
    let _ = child.wait();
    lines
}

fn check(fake: &FakeProvider, paths: &Paths, seed: u64, log: &[String]) {
    let journal = Journal::open_or_create(&paths.journal).unwrap();
    let stored = fake.stored();
    for action in journal.all().unwrap() {
        let effects: Vec<_> = stored
            .iter()
            .filter(|s| s.idempotency_key.as_deref() == Some(action.idempotency_key.as_str()))
            .collect();
        let ctx = || format!("seed {seed}: {action:?}\n{}", log.join("\n"));
        assert!(effects.len() <= 1, "a duplicated effect: {}", ctx());
        match action.state {
            State::Succeeded => {
                assert_eq!(effects.len(), 1, "succeeded without an effect: {}", ctx());
                assert_eq!(
                    action.operation_id.as_deref(),
                    Some(effects[0].id.as_str()),
                    "{}",
                    ctx()
                );
            }
            State::Failed | State::Cancelled => {
                assert!(
                    effects.is_empty(),
                    "an effect of a failed action: {}",
                    ctx()
                );
            }
            State::Escalated => {}
            State::Pending | State::Sent | State::Uncertain | State::Reconciling => {
                panic!("left unsettled: {}", ctx())
            }
        }
    }
    assert!(
        stored.len() <= journal.all().unwrap().len(),
        "seed {seed}: an effect no action accounts for"
    );
    verify(
        &paths.audit,
        &audit_key().verifying_key(),
        Some(&paths.witness),
        true,
    )
    .unwrap_or_else(|e| panic!("seed {seed}: the audit log: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_at_any_step_of_a_write_never_duplicates_it() {
    let runs: u64 = std::env::var("CRASH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(24);
    let mut killed_at = std::collections::BTreeMap::<String, u32>::new();
    for seed in 0..runs {
        let mut rng = fastrand::Rng::with_seed(seed);
        let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
            .await
            .unwrap();
        let faults: Vec<Fault> = (0..rng.usize(0..3))
            .map(|_| match rng.u8(0..4) {
                0 => Fault::StoreThenDrop,
                1 => Fault::Slow(Duration::from_millis(150)),
                2 => Fault::RateLimited {
                    retry_after: Some(RetryAfter::Millis(100)),
                },
                _ => Fault::Unavailable { retry_after: None },
            })
            .collect();
        fake.script(OBJECTS, faults.clone());
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::under(dir.path());
        let url = fake.url(OBJECTS);
        let actions = rng.usize(1..=3);
        let class = if rng.bool() {
            "uncertain_write"
        } else {
            "idempotent_write"
        };
        let task = format!("task-{seed}");
        // A write has about 6 to 9 steps; kill somewhere in the first actions' lives.
        let k = rng.u32(1..=(actions as u32 * 7));
        let kill = if rng.u8(0..3) == 0 {
            Kill::After(k, rng.u64(0..120))
        } else {
            Kill::PausedAt(k)
        };
        let pause = match kill {
            Kill::PausedAt(k) => Some(k),
            Kill::After(..) => None,
        };
        let (u, d, t) = (url.clone(), dir.path().to_owned(), task.clone());
        let first = tokio::task::spawn_blocking(move || {
            run(spawn(&u, &d, &t, actions, class, pause), Some(kill))
        })
        .await
        .unwrap();
        let died = first
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("step ").and_then(|r| r.split(' ').nth(1)))
            .unwrap_or("start")
            .to_owned();
        *killed_at.entry(died).or_default() += 1;
        // Restart until a run finishes its work.
        let mut log = vec![format!(
            "seed {seed}: {actions} {class} action(s), faults {faults:?}, kill {kill:?}"
        )];
        log.extend(first);
        let mut finished = false;
        for _ in 0..3 {
            let (u, d, t) = (url.clone(), dir.path().to_owned(), task.clone());
            let lines = tokio::task::spawn_blocking(move || {
                run(spawn(&u, &d, &t, actions, class, None), None)
            })
            .await
            .unwrap();
            log.push("-- restarted --".into());
            finished = lines.last().is_some_and(|l| l == "done");
            log.extend(lines);
            if finished {
                break;
            }
        }
        let stderr = std::fs::read_to_string(dir.path().join("host.stderr")).unwrap_or_default();
        assert!(
            finished,
            "the restarted host never finished:\n{}\n{stderr}",
            log.join("\n")
        );
        check(&fake, &paths, seed, &log);
    }
    println!("killed at: {killed_at:?}");
    if runs >= 24 {
        for step in [
            "recording",
            "intent-committed",
            "sent-1",
            "answered-1",
            "reconciling",
        ] {
            assert!(
                killed_at.contains_key(step),
                "no run was killed at `{step}`: {killed_at:?}"
            );
        }
    }
}
