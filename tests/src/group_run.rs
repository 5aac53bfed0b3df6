//! Seeded kill -9 runs of a host of a group that shares its journal in PostgreSQL, judged
//! at the provider: the host dies at a seeded step of its writes (as in [`crate::crash_run`])
//! and is never restarted; another host of the group, with a state directory of its own,
//! is given the same task (as a load balancer sends an agent's retry to another replica).
//! It is refused each action the dead host owns until that host's lease and grace have run
//! out, takes them over, settles them as the dead host would have, and then answers the
//! task from the journal. The provider's ledger judges, against the group's journal.
//!
//! A [`Group`] of two is the dead host and the one given its task after the kill. A larger
//! group runs the others beside the dead host, each writing a task of its own to the same
//! provider (and sharing quotas on Redis, when one is given), and keeps them alive a few
//! leases after their work, so that a live, busy host takes the dead one's writes over; the
//! dead host's task then goes to one of them (seeded).

use std::path::Path;

use sluice::journal::Journal;
use sluice_fake_provider::{FakeConfig, FakeProvider};

use crate::crash_run::{
    Judgement, Kill, Launch, Run, judge_actions, judge_audit, killed_at, watch,
};
use crate::stack::Paths;

/// The lease of the runs' hosts, in milliseconds: the second host takes over after twice
/// this, at most half of it later.
pub const LEASE_TTL_MS: u64 = 600;

/// A group's shape.
#[derive(Debug, Clone, Copy)]
pub struct Group<'a> {
    /// The journal the hosts share (PostgreSQL).
    pub journal_url: &'a str,
    /// The Redis the hosts share quotas on, if any.
    pub store: Option<&'a str>,
    /// The hosts beside the one killed (at least one).
    pub others: usize,
}

impl Group<'_> {
    /// The names (and state directories) of the hosts beside the one killed.
    fn ids(&self) -> Vec<String> {
        match self.others {
            0 | 1 => vec!["second".to_owned()],
            n => (1..=n).map(|h| format!("h{h}")).collect(),
        }
    }
}

/// Performs `run` in `group` (host processes of the binary `host_bin`), keeping their state
/// directories under `dir`.
///
/// # Panics
/// When the fake provider or a host process cannot start.
pub async fn perform_group(run: &Run, host_bin: &Path, dir: &Path, group: Group<'_>) -> Judgement {
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
    let journal_url = group.journal_url;
    let options = |id: &str, linger: bool| {
        let mut o = vec![
            "--journal-url".to_owned(),
            journal_url.to_owned(),
            "--lease-ttl-ms".to_owned(),
            LEASE_TTL_MS.to_string(),
        ];
        if let Some(store) = group.store {
            o.extend([
                "--store".into(),
                store.into(),
                "--host-id".into(),
                id.into(),
            ]);
        }
        if linger {
            // Alive through the dead host's lease and grace, and a takeover after them.
            o.extend(["--linger-ms".into(), (LEASE_TTL_MS * 5).to_string()]);
        }
        o
    };
    let host = |launch: &Launch, id: &str, pause: Option<u32>, kill: Option<Kill>, linger| {
        let (launch, options, state) = (launch.clone(), options(id, linger), dir.join(id));
        let actions = run.actions;
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&state).expect("a state directory");
            watch(launch.child(&state, actions, pause, &options), kill)
        })
    };
    let pause = run.kill.pause();
    let first = host(&launch, "first", pause, Some(run.kill), false);
    // The others of a larger group, each writing a task of its own meanwhile.
    let ids = group.ids();
    let beside: Vec<_> = ids
        .iter()
        .filter(|_| group.others > 1)
        .map(|id| {
            let own = Launch {
                task: format!("{}-{id}", launch.task),
                ..launch.clone()
            };
            (id, host(&own, id, None, None, true))
        })
        .collect();
    let first = first.await.expect("the first host");
    let killed_at = killed_at(&first);
    let mut log = vec![format!("{run:?}")];
    log.extend(first);
    let mut unfinished = Vec::new();
    for (id, other) in beside {
        let lines = other.await.expect("a host of the group");
        // Its own work done; what it took over while it lingered may follow.
        if !lines.iter().any(|l| l == "done") {
            let stderr = std::fs::read_to_string(dir.join(id).join("host.stderr"));
            unfinished.push(format!(
                "host {id} never finished: {}",
                stderr.unwrap_or_default()
            ));
        }
        log.push(format!("-- host {id} --"));
        log.extend(lines);
    }
    // The dead host's task goes to another host: after the kill in a group of two, else to
    // one of those that ran beside it (which took its writes over, or is about to).
    let taker = &ids[usize::try_from(run.seed).unwrap_or(0) % ids.len()];
    log.push(format!("-- killed; its task to {taker} --"));
    let second_dir = dir.join(taker);
    // Restarted (on its own state) until a run of it finishes.
    let mut finished = false;
    for _ in 0..3 {
        let lines = host(&launch, taker, None, None, false)
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
    let audited = |p: &Paths| std::fs::metadata(&p.audit).is_ok_and(|m| m.len() > 0);
    let mut judgement = judge_actions(&fake, actions, Some(&second).filter(|p| audited(p)));
    // Each other host's log too: any of them may have taken the dead host's writes over.
    for id in ids.iter().filter(|id| *id != taker) {
        let paths = Paths::under(&dir.join(id));
        if audited(&paths) {
            judge_audit(&mut judgement, &paths);
        }
    }
    judgement.lost += unfinished.len();
    judgement.problems.extend(unfinished);
    if !finished {
        judgement.lost += 1;
        let stderr = std::fs::read_to_string(second_dir.join("host.stderr")).unwrap_or_default();
        judgement
            .problems
            .push(format!("the second host never finished: {stderr}"));
    }
    // Whichever host took the dead one's writes says so on its standard error, with how
    // many (a host taken over with nothing unfinished says `actions=0`).
    let took = ids.iter().any(|id| {
        std::fs::read_to_string(dir.join(id).join("host.stderr")).is_ok_and(|e| {
            e.lines()
                .any(|l| l.contains(TOOK_OVER) && !l.contains("actions=0"))
        })
    });
    if took {
        log.push(TOOK_OVER.into());
    }
    judgement.killed_at = killed_at;
    judgement.log = log;
    judgement
}

/// What a host logs when it takes the dead host's writes, and what a run's log then holds.
pub const TOOK_OVER: &str = "took over the unfinished writes";

/// Whether another host of `judgement`'s run took writes over from the dead one.
pub fn took_over(judgement: &Judgement) -> bool {
    judgement.log.iter().any(|l| l == TOOK_OVER)
}
