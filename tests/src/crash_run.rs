//! Seeded kill -9 runs of a host process, judged at the provider: the shared part of
//! `tests/tests/never_twice/crash.rs` and its soak.
//!
//! A run starts a fake provider in this process and a host process (`crash_host`) that
//! writes a task's actions to it. The host dies by SIGKILL at a seeded step of its writes —
//! stopped dead there, or some milliseconds after it, mid-work — and is restarted until a
//! run of it finishes. Then the provider's ledger judges, not the host's own account: each
//! action's effects are the stored writes that carry its client reference, so a write
//! stored twice is a duplicate whatever key it came with.
//!
//! Two providers: Stripe's style, which stores a write once per `Idempotency-Key` (the host
//! settles an uncertain write by a resend with the same key), and GitHub's, whose create
//! endpoint ignores the key (the host settles by looking for the reference in the
//! repository's issue list). Against GitHub's, a host that resent blindly would duplicate.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sluice::audit::verify;
use sluice::journal::{Journal, State, client_reference};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};

pub use crate::damage::Damage;
use crate::stack::{Paths, audit_key};
use crate::store_loss::{HOST_ID, StoreLoss};

/// Which provider a run writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Stripe's style: a write is stored once per `Idempotency-Key`.
    Stripe,
    /// GitHub's style: every accepted POST creates a new issue, whatever its key.
    GitHub,
}

impl Provider {
    /// Both.
    pub const ALL: [Self; 2] = [Self::Stripe, Self::GitHub];

    /// Its name, which is also its bundled plugin's.
    pub fn name(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::GitHub => "github",
        }
    }

    /// The provider named `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The fake provider's style.
    pub fn style(self) -> Style {
        match self {
            Self::Stripe => Style::Stripe,
            Self::GitHub => Style::GitHub,
        }
    }

    /// The path the writes go to.
    pub fn path(self) -> &'static str {
        match self {
            Self::Stripe => "/v1/payment_intents",
            Self::GitHub => "/repos/acme/ledger/issues",
        }
    }

    /// The body of action `action` (the `i`-th) of `task`: it carries the action's client
    /// reference where the provider keeps it — Stripe's metadata, an HTML comment in the
    /// issue's text — so the provider can be searched for it.
    pub fn body(self, task: &str, action: &str, i: usize) -> String {
        let reference = client_reference(task, action);
        match self {
            Self::Stripe => format!(
                "amount={}&currency=usd&metadata[client_reference]={reference}",
                100 + i
            ),
            Self::GitHub => serde_json::json!({
                "title": format!("Invoice {i} paid"),
                "body": format!("Paid invoice {i}.\n\n<!-- {reference} -->"),
            })
            .to_string(),
        }
    }

    /// The classes its writes may be declared with: GitHub's cannot be deduplicated, so
    /// they are uncertain writes.
    fn class(self, rng: &mut fastrand::Rng) -> &'static str {
        match self {
            Self::Stripe if rng.bool() => "idempotent_write",
            _ => "uncertain_write",
        }
    }
}

/// How a run's first host dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kill {
    /// Stopped dead at its k-th step, then killed.
    PausedAt(u32),
    /// Killed `ms` milliseconds after printing its k-th step, mid-work.
    After(u32, u64),
    /// Killed `ms` milliseconds after its n-th attempt was marked sent: while that attempt
    /// is on the wire or at the provider, which may still act on it.
    InFlight(u32, u64),
}

impl Kill {
    /// The step the host stops dead at, if it is killed that way.
    pub(crate) fn pause(self) -> Option<u32> {
        match self {
            Self::PausedAt(k) => Some(k),
            Self::After(..) | Self::InFlight(..) => None,
        }
    }
}

/// The step a killed host printed last (`start` before its first).
pub(crate) fn killed_at(lines: &[String]) -> String {
    lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("step ").and_then(|r| r.split(' ').nth(1)))
        .unwrap_or("start")
        .to_owned()
}

/// One seeded run: what the provider does and where the host dies.
#[derive(Debug, Clone)]
pub struct Run {
    /// The provider.
    pub provider: Provider,
    /// The seed everything below comes from.
    pub seed: u64,
    /// Actions the task writes (1 to 3).
    pub actions: usize,
    /// Their declared class.
    pub class: &'static str,
    /// The faults the provider plays on the first writes.
    pub faults: Vec<Fault>,
    /// How the first host dies.
    pub kill: Kill,
    /// The state damaged between the first host's death and its restart (the damage soak).
    pub damage: Option<Damage>,
}

impl Run {
    /// The run of `seed` against `provider`.
    pub fn seeded(provider: Provider, seed: u64) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed);
        let faults = (0..rng.usize(0..3))
            .map(|_| match rng.u8(0..4) {
                0 => Fault::StoreThenDrop,
                1 => Fault::Slow(Duration::from_millis(450)),
                2 => Fault::RateLimited {
                    retry_after: Some(RetryAfter::Millis(100)),
                },
                _ => Fault::Unavailable { retry_after: None },
            })
            .collect();
        let actions = rng.usize(1..=3);
        let class = provider.class(&mut rng);
        // A write has about 6 to 10 steps; kill somewhere in the first actions' lives.
        let k = rng.u32(1..=(actions as u32 * 7));
        let kill = match rng.u8(0..6) {
            0 => Kill::After(k, rng.u64(0..120)),
            1 => Kill::InFlight(rng.u32(1..=actions as u32), rng.u64(0..300)),
            _ => Kill::PausedAt(k),
        };
        Self {
            provider,
            seed,
            actions,
            class,
            faults,
            kill,
            damage: None,
        }
    }

    /// The run of `seed` against `provider`, with `damage` done to its state between the
    /// killed host and its restart.
    pub fn damaged(provider: Provider, seed: u64, damage: Damage) -> Self {
        Self {
            damage: Some(damage),
            ..Self::seeded(provider, seed)
        }
    }

    pub(crate) fn task(&self) -> String {
        format!("task-{}-{}", self.provider.name(), self.seed)
    }
}

/// What the provider and the journal hold after a run.
#[derive(Debug, Clone, Default)]
pub struct Judgement {
    /// Logical actions the journal holds.
    pub actions: usize,
    /// Writes the provider stored.
    pub effects: usize,
    /// Stored writes whose client reference an earlier stored write carried: an action done
    /// twice.
    pub duplicates: usize,
    /// Actions lost: the journal says done but the provider holds nothing, or the action
    /// was left unsettled (or the restarted host never finished).
    pub lost: usize,
    /// Effects nothing accounts for: of an action the journal calls failed or cancelled, or
    /// of no action at all.
    pub phantoms: usize,
    /// Actions done, with the provider's id recorded.
    pub succeeded: usize,
    /// Actions refused by the provider, with nothing stored.
    pub failed: usize,
    /// Actions handed to a person.
    pub escalated: usize,
    /// Of those, the ones the provider holds (the person will find them done).
    pub escalated_done: usize,
    /// Actions a first lookup did not find and a second one, a provider timeout later, did:
    /// an attempt still at the provider landed in between. Each would have been a duplicate
    /// had the first lookup been believed.
    pub found_by_second_look: usize,
    /// The step the first host died at (`start` before its first step).
    pub killed_at: String,
    /// How the first restart on damaged state went: `refused` (and the operator's remedy
    /// applied), `reported` (started, saying what it found), or `harmless` (nothing the
    /// damage touched was there yet).
    pub damaged_start: Option<&'static str>,
    /// Everything that is wrong, in words; empty for a good run.
    pub problems: Vec<String>,
    /// What the hosts printed, for a failure's message.
    pub log: Vec<String>,
}

/// Performs `run` with the host binary `host_bin`, keeping state under `dir`.
///
/// # Panics
/// When the fake provider or a host process cannot start.
pub async fn perform(run: &Run, host_bin: &Path, dir: &Path) -> Judgement {
    let provider = run.provider;
    let fake = FakeProvider::start(FakeConfig::new(provider.style()))
        .await
        .expect("start the fake provider");
    fake.script_writes(provider.path(), run.faults.clone());
    let url = fake.url(provider.path());
    let mut store = (run.damage == Some(Damage::StoreLost)).then(|| StoreLoss::start(dir));
    let mut options = run.damage.map(|d| d.options(dir)).unwrap_or_default();
    if let Some(s) = &store {
        options.extend(s.options(HOST_ID));
    }
    let launch = Launch {
        bin: host_bin.to_owned(),
        provider,
        url,
        task: run.task(),
        actions: run.actions,
        class: run.class,
    };
    if let Some(d) = run.damage {
        d.prepare(provider, dir);
    }
    if let Some(s) = &mut store {
        s.join_other(&launch).await;
    }
    let host = |pause: Option<u32>, kill: Option<Kill>, more: &[&str]| {
        let launch = launch.clone();
        let (dir, actions) = (dir.to_owned(), run.actions);
        let options: Vec<String> = options
            .iter()
            .cloned()
            .chain(more.iter().map(|s| (*s).to_owned()))
            .collect();
        tokio::task::spawn_blocking(move || {
            watch(launch.child(&dir, actions, pause, &options), kill)
        })
    };
    let pause = run.kill.pause();
    let first = host(pause, Some(run.kill), &[])
        .await
        .expect("the first host");
    let killed_at = killed_at(&first);
    let mut log = vec![format!("{run:?}")];
    log.extend(first);
    let mut problems = Vec::new();
    let mut damaged_start = None;
    let mut remedy: &[&str] = &[];
    if let Some(s) = &mut store {
        s.lose_state();
        damaged_start = Some(
            s.damaged_start(&launch, &fake, &mut log, &mut problems)
                .await,
        );
    } else if let Some(damage) = run.damage {
        let expected = damage.apply(provider, dir);
        let lines = host(None, None, &[])
            .await
            .expect("a host on damaged state");
        log.push(format!(
            "-- restarted on state damaged: {} --",
            damage.name()
        ));
        log.extend(lines);
        let (said, how) = damage.judge_start(provider, dir, expected, &mut problems);
        damaged_start = Some(said);
        remedy = how;
    }
    // Restart until a run finishes its work.
    let mut finished = false;
    for _ in 0..3 {
        if let Some(s) = &mut store {
            s.before_start(HOST_ID).await;
        }
        let lines = host(None, None, std::mem::take(&mut remedy))
            .await
            .expect("a restarted host");
        if let Some(s) = &mut store {
            s.ended(HOST_ID);
        }
        log.push("-- restarted --".into());
        finished = lines.last().is_some_and(|l| l == "done");
        log.extend(lines);
        if finished {
            break;
        }
    }
    if let Some(s) = &mut store {
        s.after_finish(&launch, &fake, &mut log, &mut problems)
            .await;
    }
    let mut judgement = judge(&fake, &Paths::under(dir));
    if !finished {
        judgement.lost += 1;
        let stderr = std::fs::read_to_string(dir.join("host.stderr")).unwrap_or_default();
        judgement
            .problems
            .push(format!("the restarted host never finished: {stderr}"));
    }
    judgement.killed_at = killed_at;
    judgement.damaged_start = damaged_start;
    judgement.problems.extend(problems);
    judgement.log = log;
    judgement
}

/// How to start a run's host process: everything but its state directory, its actions and
/// its options.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) bin: PathBuf,
    pub(crate) provider: Provider,
    pub(crate) url: String,
    pub(crate) task: String,
    pub(crate) actions: usize,
    pub(crate) class: &'static str,
}

impl Launch {
    /// A host process on the state under `dir` doing the task's first `actions` actions,
    /// stopped dead at step `pause` if given; its standard error goes to `dir/host.stderr`.
    pub(crate) fn child(
        &self,
        dir: &Path,
        actions: usize,
        pause: Option<u32>,
        options: &[String],
    ) -> Child {
        let mut cmd = Command::new(&self.bin);
        cmd.args([
            self.provider.name(),
            &self.url,
            &dir.display().to_string(),
            &self.task,
            &actions.to_string(),
            self.class,
        ]);
        if let Some(k) = pause {
            cmd.args(["--pause-at", &k.to_string()]);
        }
        cmd.args(options);
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
}

/// Reads the host's steps until `kill` says it dies (then SIGKILLs it) or it ends; returns
/// what it printed.
pub(crate) fn watch(mut child: Child, kill: Option<Kill>) -> Vec<String> {
    let stdout = child.stdout.take().expect("piped");
    let mut lines = Vec::new();
    let mut sent = 0;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let mut step = line.strip_prefix("step ").unwrap_or_default().split(' ');
        let (n, name) = (step.next().and_then(|n| n.parse().ok()), step.next());
        sent += u32::from(name.is_some_and(|s| s.starts_with("sent-")));
        lines.push(line.clone());
        let wait = match kill {
            Some(Kill::PausedAt(_)) if line == "paused" => 0,
            Some(Kill::After(k, ms)) if n == Some(k) => ms,
            Some(Kill::InFlight(k, ms))
                if name.is_some_and(|s| s.starts_with("sent-")) && sent == k =>
            {
                ms
            }
            _ => continue,
        };
        std::thread::sleep(Duration::from_millis(wait));
        break;
    }
    // SIGKILL: no destructor, no flush, no goodbye.
    let _ = child.kill();
    let _ = child.wait();
    lines
}

/// The provider's ledger against the journal, and the audit log verified.
fn judge(fake: &FakeProvider, paths: &Paths) -> Judgement {
    let actions = Journal::open_existing(&paths.journal).and_then(|journal| journal.all());
    judge_actions(fake, actions, Some(paths))
}

/// The provider's ledger against `actions` (every action of the journal), and the audit
/// log at `audit` verified when given.
pub(crate) fn judge_actions(
    fake: &FakeProvider,
    actions: Result<Vec<sluice::journal::Action>, sluice::journal::JournalError>,
    audit: Option<&Paths>,
) -> Judgement {
    let stored = fake.stored();
    let mut j = Judgement {
        effects: stored.len(),
        duplicates: fake.duplicates(),
        ..Judgement::default()
    };
    if j.duplicates > 0 {
        j.problems.push(format!(
            "{} duplicated effect(s) at the provider",
            j.duplicates
        ));
    }
    let actions = match actions {
        Ok(actions) => actions,
        Err(e) => {
            j.problems.push(format!("the journal: {e}"));
            return j;
        }
    };
    j.actions = actions.len();
    for action in &actions {
        let effects: Vec<_> = stored
            .iter()
            .filter(|s| s.reference.as_deref() == Some(action.client_reference.as_str()))
            .collect();
        let problem = |j: &mut Judgement, what: &str| {
            j.problems
                .push(format!("{what}: {} {:?}", action.action, action.state));
        };
        match action.state {
            State::Succeeded if effects.is_empty() => {
                j.lost += 1;
                problem(&mut j, "succeeded without an effect");
            }
            State::Succeeded => {
                j.succeeded += 1;
                if action.operation_id.as_deref() != Some(effects[0].id.as_str()) {
                    problem(
                        &mut j,
                        "succeeded with another operation id than the effect's",
                    );
                }
            }
            State::Failed | State::Cancelled | State::Refused => {
                j.failed += usize::from(action.state == State::Failed);
                if !effects.is_empty() {
                    j.phantoms += 1;
                    problem(&mut j, "an effect of an action that did not happen");
                }
            }
            // Lost: recorded from the audit log, and goes to a person when resubmitted.
            State::Escalated | State::Lost => {
                j.escalated += 1;
                j.escalated_done += usize::from(!effects.is_empty());
            }
            State::Pending | State::Sent | State::Uncertain | State::Reconciling => {
                j.lost += 1;
                problem(&mut j, "left unsettled");
            }
        }
    }
    let unaccounted = stored
        .iter()
        .filter(|s| {
            !actions
                .iter()
                .any(|a| s.reference.as_deref() == Some(a.client_reference.as_str()))
        })
        .count();
    if unaccounted > 0 {
        j.phantoms += unaccounted;
        j.problems
            .push(format!("{unaccounted} effect(s) no action accounts for"));
    }
    if let Some(paths) = audit {
        judge_audit(&mut j, paths);
    }
    j
}

/// Adds what the audit log at `paths` says to `j`: the actions found by a second look, and
/// whether the log verifies (signatures, chain, witness).
pub(crate) fn judge_audit(j: &mut Judgement, paths: &Paths) {
    j.found_by_second_look += found_by_second_look(&paths.audit);
    if let Err(e) = verify(
        &paths.audit,
        &audit_key().verifying_key(),
        Some(&paths.witness),
        true,
    ) {
        j.problems.push(format!("the audit log: {e}"));
    }
}

/// Actions whose audit trail shows a lookup that found nothing, then one that found the
/// write.
fn found_by_second_look(audit: &Path) -> usize {
    let log = std::fs::read_to_string(audit).unwrap_or_default();
    let mut missed = std::collections::HashSet::new();
    let mut found = std::collections::HashSet::new();
    for line in log.lines() {
        let Some(record) = line
            .split_once(' ')
            .and_then(|(_, json)| serde_json::from_str::<serde_json::Value>(json).ok())
        else {
            continue;
        };
        let (Some(action), Some(detail)) = (record["action"].as_str(), record["detail"].as_str())
        else {
            continue;
        };
        if detail.starts_with("not found yet") {
            missed.insert(action.to_owned());
        } else if detail.starts_with("found: the write happened") && missed.contains(action) {
            found.insert(action.to_owned());
        }
    }
    found.len()
}
