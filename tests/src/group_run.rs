//! Seeded kill -9 runs of a host of a group that shares its journal in PostgreSQL, judged
//! at the provider: the host dies at a seeded step of its writes (as in [`crate::crash_run`])
//! and is never restarted; a second host of the group, with a state directory of its own,
//! is given the same task (as a load balancer sends an agent's retry to another replica).
//! It is refused each action the dead host owns until that host's lease and grace have run
//! out, takes them over, settles them as the dead host would have, and then answers the
//! task from the journal. The provider's ledger judges, against the group's journal.

use std::path::Path;

use sluice::journal::Journal;
use sluice_fake_provider::{FakeConfig, FakeProvider};

use crate::crash_run::{Judgement, Kill, Launch, Run, judge_actions, killed_at, watch};
use crate::stack::Paths;

/// The lease of the runs' hosts, in milliseconds: the second host takes over after twice
/// this, at most half of it later.
pub const LEASE_TTL_MS: u64 = 600;

/// Performs `run` as a group of two hosts (the binary `host_bin`) sharing the journal at
/// `journal_url`, keeping their state directories under `dir`.
///
/// # Panics
/// When the fake provider or a host process cannot start.
pub async fn perform_group(run: &Run, host_bin: &Path, dir: &Path, journal_url: &str) -> Judgement {
    let provider = run.provider;
    let fake = FakeProvider::start(FakeConfig::new(provider.style()))
        .await
        .expect("start the fake provider");
    fake.script_writes(provider.path(), run.faults.clone());
    let launch = Launch {
        bin: host_bin.to_owned(),
        provider,
        url: fake.url(provider.path()),
        task: run.task(),
        actions: run.actions,
        class: run.class,
    };
    let options = vec![
        "--journal-url".to_owned(),
        journal_url.to_owned(),
        "--lease-ttl-ms".to_owned(),
        LEASE_TTL_MS.to_string(),
    ];
    let host = |state: &Path, pause: Option<u32>, kill: Option<Kill>| {
        let (launch, options, state) = (launch.clone(), options.clone(), state.to_owned());
        let actions = run.actions;
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&state).expect("a state directory");
            watch(launch.child(&state, actions, pause, &options), kill)
        })
    };
    let pause = run.kill.pause();
    let (first_dir, second_dir) = (dir.join("first"), dir.join("second"));
    let first = host(&first_dir, pause, Some(run.kill))
        .await
        .expect("the first host");
    let killed_at = killed_at(&first);
    let mut log = vec![format!("{run:?}")];
    log.extend(first);
    log.push("-- killed; the second host of the group --".into());
    // The second host, restarted (on its own state) until a run of it finishes.
    let mut finished = false;
    for _ in 0..3 {
        let lines = host(&second_dir, None, None)
            .await
            .expect("the second host");
        finished = lines.last().is_some_and(|l| l == "done");
        log.extend(lines);
        if finished {
            break;
        }
        log.push("-- the second host, restarted --".into());
    }
    let actions = Journal::connect_existing(journal_url).and_then(|j| j.all());
    // The second host's audit log holds what it took over and settled; one that only
    // answered from the journal (the dead host had settled everything) audited nothing.
    let second = Paths::under(&second_dir);
    let audited = std::fs::metadata(&second.audit).is_ok_and(|m| m.len() > 0);
    let mut judgement = judge_actions(&fake, actions, audited.then_some(&second));
    if !finished {
        judgement.lost += 1;
        let stderr = std::fs::read_to_string(second_dir.join("host.stderr")).unwrap_or_default();
        judgement
            .problems
            .push(format!("the second host never finished: {stderr}"));
    }
    let stderr = std::fs::read_to_string(second_dir.join("host.stderr")).unwrap_or_default();
    if stderr.contains(TOOK_OVER) {
        log.push(TOOK_OVER.into());
    }
    judgement.killed_at = killed_at;
    judgement.log = log;
    judgement
}

/// What the second host logs when it takes the dead host's writes, and what a run's log
/// then holds.
pub const TOOK_OVER: &str = "took over the unfinished writes";

/// Whether the second host of `judgement`'s run took writes over from the dead one.
pub fn took_over(judgement: &Judgement) -> bool {
    judgement.log.iter().any(|l| l == TOOK_OVER)
}
