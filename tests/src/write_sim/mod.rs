//! A seeded, deterministic simulation of the write path, looking for the next way an action
//! could be done twice.
//!
//! One scenario is two hosts sharing a store, three providers (one of each [`Kind`]), and an
//! agent, driven by one seed through a few dozen events: the agent submits, resubmits, or
//! — told a write was not sent — retries it under a new name; hosts die at any step of the
//! write path and start again; and damage strikes the records the guarantee rests on:
//!
//! - a host's journal rolled back to any earlier commit, emptied, or copied from the other
//!   host; its state directory wiped (journal and store epoch; the audit log with it when
//!   the scenario keeps the log there);
//! - the store flushed, one claim evicted (only a store that evicts keys can), or rolled
//!   back to an older snapshot (only a store without an append-only file can);
//! - a second process started with a host's id and a state directory of its own;
//! - attempts whose request or answer is lost, and writes refused before their first byte;
//! - an operator who accepts a journal the witnesses refused, decides escalated actions,
//!   and recovers a store that lost its state.
//!
//! After every event three invariants are checked: no action has more than one effect at a
//! provider; every action the agent was told succeeded has exactly one; no action the agent
//! was told was not sent (refused by the host that holds it, before its first byte) and did
//! not submit again is done later. A host that did not take an action at all (another host
//! owns it, the store lost its state) says only that nothing went from it: the agent submits
//! that one again under its own name. A broken one returns the seed
//! and the trace of events that led there.
//!
//! What is outside the model:
//! - losing every record of an action at once (journal, audit log and the store's claim):
//!   no host can know it then, and only a provider that honours keys stops the resend. The
//!   scenarios keep the log in the state directory only when the store cannot lose claims,
//!   and start a second process with a host's id (whose state directory is thrown away
//!   when it stops) only in a store that does not lose its state.
//! - claims expiring (kept 30 days); a group's journal on PostgreSQL, where claims are rows
//!   and takeover moves them; clock jumps and a host frozen past its lease (leases and
//!   takeover exist only with a group's journal).

mod host;
mod parts;

use std::collections::{BTreeMap, BTreeSet};

use sluice::journal::KeySecret;

pub use host::{Host, Told, Wire};
pub use parts::{Identity, Kind, Provider, Store};

use host::{Step, World};

/// Events in one scenario.
pub const EVENTS: usize = 40;

/// What one scenario did, to count across a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Submits the agent made.
    pub submits: u64,
    /// Submits answered "not sent".
    pub not_sent: u64,
    /// Submits that went to a person.
    pub escalated: u64,
    /// Starts the witnesses refused.
    pub refused_starts: u64,
    /// Damage done to a journal or a state directory.
    pub local_damage: u64,
    /// Damage done to the store.
    pub store_damage: u64,
    /// Process deaths mid-write.
    pub deaths: u64,
    /// Effects at providers.
    pub effects: u64,
}

impl Tally {
    /// Adds `other` to this one.
    pub fn add(&mut self, other: &Self) {
        self.submits += other.submits;
        self.not_sent += other.not_sent;
        self.escalated += other.escalated;
        self.refused_starts += other.refused_starts;
        self.local_damage += other.local_damage;
        self.store_damage += other.store_damage;
        self.deaths += other.deaths;
        self.effects += other.effects;
    }
}

/// An invariant broken: the seed, what broke, and the events that led there.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The scenario's seed.
    pub seed: u64,
    /// Which invariant, and for which action.
    pub what: String,
    /// The scenario's events, in order.
    pub trace: Vec<String>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "seed {}: {}", self.seed, self.what)?;
        for (i, e) in self.trace.iter().enumerate() {
            writeln!(f, "  {i:>2}. {e}")?;
        }
        Ok(())
    }
}

/// One of the agent's actions, and what it was told last.
#[derive(Debug, Clone)]
struct Intent {
    identity: Identity,
    provider: usize,
    told: Option<Told>,
}

/// One scenario's world.
struct Scenario {
    seed: u64,
    rng: fastrand::Rng,
    store: Store,
    store_snapshots: Vec<Store>,
    providers: Vec<Provider>,
    hosts: Vec<Host>,
    /// A second process with host 0's id, and a state directory of its own.
    twin: Option<Host>,
    clash_seen: bool,
    /// Whether the audit log is kept in the state directory (wiped with it).
    log_in_dir: bool,
    /// The store lost its state.
    store_lost: bool,
    /// A second process ran with a host's id (its state directory thrown away when it
    /// stops): never with a store that loses its state (see the module's doc).
    twinned: bool,
    secret: KeySecret,
    intents: Vec<Intent>,
    succeeded: BTreeSet<Identity>,
    /// Actions last told "not sent", with their effects then.
    not_sent: BTreeMap<Identity, u32>,
    next_name: u32,
    next_journal: u64,
    trace: Vec<String>,
    tally: Tally,
    /// Chances, in percent.
    die: u32,
    refuse: u32,
}

/// Runs the scenario of `seed`.
///
/// # Errors
/// The first [`Violation`] of an invariant.
pub fn run(seed: u64) -> Result<Tally, Violation> {
    let mut s = Scenario::new(seed);
    s.start_all();
    for _ in 0..EVENTS {
        s.event();
        s.check()?;
    }
    // The end of the day: every host running again, every escalation decided, every
    // action the agent did not give up on resubmitted.
    for i in 0..s.hosts.len() {
        if !s.hosts[i].up {
            s.start(i, true);
        }
    }
    s.check()?;
    Ok(s.tally)
}

impl Scenario {
    fn new(seed: u64) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed);
        let evicts = rng.u32(..100) < 25;
        let aof = rng.u32(..100) < 75;
        // The group's epoch, as `sluice store init` makes it.
        let store = Store {
            evicts,
            aof,
            epoch: Some(1),
            ..Store::default()
        };
        // A log in the state directory leaves the store's claims the only witness of a
        // wiped host: only where they cannot be lost.
        let log_in_dir = !evicts && aof && rng.bool();
        let mut secret = [0; 32];
        rng.fill(&mut secret);
        Self {
            seed,
            store,
            store_snapshots: Vec::new(),
            providers: Kind::ALL.iter().map(|k| Provider::new(*k)).collect(),
            hosts: vec![Host::new("h0", 1), Host::new("h1", 2)],
            twin: None,
            clash_seen: false,
            log_in_dir,
            store_lost: false,
            twinned: false,
            secret: KeySecret::from_bytes(secret),
            intents: Vec::new(),
            succeeded: BTreeSet::new(),
            not_sent: BTreeMap::new(),
            next_name: 0,
            next_journal: 3,
            trace: vec![format!(
                "store evicts={evicts} aof={aof}; audit log {}",
                if log_in_dir {
                    "in the state directory"
                } else {
                    "kept elsewhere"
                }
            )],
            tally: Tally::default(),
            die: rng.u32(0..=15),
            refuse: rng.u32(0..=30),
            rng,
        }
    }

    fn journal_id(&mut self) -> u64 {
        self.next_journal += 1;
        self.next_journal
    }

    fn start_all(&mut self) {
        for i in 0..self.hosts.len() {
            self.start(i, false);
        }
    }

    /// Runs `f` with a host's world and steps, drawn from the scenario's generator.
    fn with_world<T>(
        &mut self,
        host: Option<usize>,
        f: impl FnOnce(&mut Host, &mut World<'_>, &mut Step<'_>) -> T,
    ) -> T {
        let (die, refuse) = (self.die, self.refuse);
        let rng = std::cell::RefCell::new(self.rng.fork());
        let deaths = std::cell::Cell::new(0);
        let mut die_fn = || {
            let dies = rng.borrow_mut().u32(..100) < die;
            deaths.set(deaths.get() + u64::from(dies));
            dies
        };
        let mut wire_fn = || match rng.borrow_mut().u32(..100) {
            0..70 => Wire::Answered,
            70..80 => Wire::AnswerLost,
            80..90 => Wire::RequestLost,
            _ => Wire::Rejected,
        };
        let mut refuse_fn = || rng.borrow_mut().u32(..100) < refuse;
        let mut step = Step {
            die: &mut die_fn,
            wire: &mut wire_fn,
            refuse: &mut refuse_fn,
        };
        let mut world = World {
            store: &mut self.store,
            providers: &mut self.providers,
            secret: &self.secret,
            // Only the two processes with h0's id see their clash.
            clash_seen: self.clash_seen && host.is_none_or(|i| i == 0),
            ids: &mut self.next_journal,
        };
        let host = match host {
            Some(i) => &mut self.hosts[i],
            None => self.twin.as_mut().expect("a twin"),
        };
        let out = f(host, &mut world, &mut step);
        self.tally.deaths += deaths.get();
        out
    }

    fn start(&mut self, i: usize, accept: bool) {
        let started = self.with_world(Some(i), |h, w, s| h.start(accept, w, s));
        self.trace.push(format!(
            "h{i} starts{}: {}",
            if accept { " (journal accepted)" } else { "" },
            match &started {
                Some(resumed) if resumed.is_empty() => "up".to_owned(),
                Some(resumed) => format!("up, resumed {}", resumed.join(", ")),
                None => "refused by the witnesses".to_owned(),
            }
        ));
        if started.is_none() {
            self.tally.refused_starts += 1;
        }
    }

    fn event(&mut self) {
        let roll = self.rng.u32(..100);
        match roll {
            0..50 => self.submit(),
            50..58 => {
                let i = self.rng.usize(..self.hosts.len());
                self.hosts[i].up = false;
                self.trace.push(format!("h{i} dies"));
            }
            58..68 => {
                let i = self.rng.usize(..self.hosts.len());
                if !self.hosts[i].up {
                    let accept = self.rng.u32(..100) < 40;
                    self.start(i, accept);
                }
            }
            68..80 => self.local_damage(),
            80..88 => self.store_damage(),
            88..92 => self.twin_event(),
            92..96 => {
                // Decisions are carried out by a running host.
                let i = self.rng.usize(..self.hosts.len());
                if self.hosts[i].up {
                    self.hosts[i].decide();
                    self.trace
                        .push(format!("a person decides h{i}'s escalations"));
                }
            }
            _ => self.recover_store(),
        }
        if self.rng.u32(..100) < 30 {
            let snapshot = self.store.clone();
            self.store_snapshots.push(snapshot);
        }
    }

    fn submit(&mut self) {
        // A new action, a resubmit of one not finished, or (rarely) of one finished.
        let open: Vec<usize> = (0..self.intents.len())
            .filter(|i| {
                matches!(
                    self.intents[*i].told,
                    None | Some(Told::Unknown | Told::NotTaken)
                )
            })
            .collect();
        let k = if !open.is_empty() && self.rng.u32(..100) < 60 {
            open[self.rng.usize(..open.len())]
        } else if !self.intents.is_empty() && self.rng.u32(..100) < 15 {
            self.rng.usize(..self.intents.len())
        } else {
            self.next_name += 1;
            let provider = self.rng.usize(..self.providers.len());
            self.intents.push(Intent {
                identity: ("task".to_owned(), format!("pay-{}", self.next_name)),
                provider,
                told: None,
            });
            self.intents.len() - 1
        };
        let to_twin = self.twin.is_some() && self.rng.u32(..100) < 30;
        let host = if to_twin {
            None
        } else {
            Some(self.rng.usize(..self.hosts.len()))
        };
        let intent = self.intents[k].clone();
        let told = self.with_world(host, |h, w, s| {
            h.submit(&intent.identity, intent.provider, w, s)
        });
        self.tally.submits += 1;
        self.not_sent.remove(&intent.identity);
        let at = host.map_or("the twin of h0".to_owned(), |i| format!("h{i}"));
        self.trace.push(format!(
            "agent submits {} (provider {:?}) to {at}: {told:?}",
            intent.identity.1, self.providers[intent.provider].kind
        ));
        match told {
            Told::Succeeded => {
                self.succeeded.insert(intent.identity.clone());
            }
            Told::NotSent => {
                self.tally.not_sent += 1;
                let done = self.providers[intent.provider].done(&intent.identity);
                self.not_sent.insert(intent.identity.clone(), done);
                if self.rng.bool() {
                    // Retried as apps do: under a new name.
                    self.next_name += 1;
                    self.intents.push(Intent {
                        identity: ("task".to_owned(), format!("pay-{}", self.next_name)),
                        provider: intent.provider,
                        told: None,
                    });
                    self.intents[k].told = Some(Told::NotSent);
                    return;
                }
                // Resubmitted later under its own name.
                self.intents[k].told = None;
                return;
            }
            Told::Escalated => self.tally.escalated += 1,
            _ => {}
        }
        self.intents[k].told = Some(told);
    }

    fn local_damage(&mut self) {
        let i = self.rng.usize(..self.hosts.len());
        self.tally.local_damage += 1;
        let what = match self.rng.u32(..4) {
            0 => {
                let count = self.hosts[i].snapshots.len();
                if count == 0 {
                    return;
                }
                let copy = self.hosts[i].snapshots[self.rng.usize(..count)].clone();
                let seq = copy.seq;
                self.hosts[i].dir.journal = copy;
                format!("h{i}'s journal restored from a copy at sequence {seq}")
            }
            1 => {
                let id = self.journal_id();
                self.hosts[i].dir.journal = parts::Journal::new(id);
                format!("h{i}'s journal emptied and made again")
            }
            2 => {
                let other = self.hosts[1 - i].dir.journal.clone();
                self.hosts[i].dir.journal = other;
                format!("h{}'s journal copied over h{i}'s", 1 - i)
            }
            _ => {
                let id = self.journal_id();
                self.hosts[i].dir.journal = parts::Journal::new(id);
                self.hosts[i].dir.epoch = None;
                if self.log_in_dir {
                    self.hosts[i].dir.log = parts::Log::default();
                }
                format!("h{i}'s state directory wiped")
            }
        };
        self.hosts[i].up = false;
        self.trace.push(what);
        let accept = self.rng.u32(..100) < 30;
        self.start(i, accept);
    }

    fn store_damage(&mut self) {
        self.tally.store_damage += 1;
        let what = match self.rng.u32(..3) {
            0 if !self.log_in_dir && !self.twinned => {
                self.store_lost = true;
                self.store = Store {
                    evicts: self.store.evicts,
                    aof: self.store.aof,
                    ..Store::default()
                };
                "the store flushed".to_owned()
            }
            1 if self.store.evicts && !self.store.claims.is_empty() => {
                let at = self.rng.usize(..self.store.claims.len());
                let key = self.store.claims.keys().nth(at).cloned().expect("a claim");
                self.store.claims.remove(&key);
                format!("the store evicts the claim of {}", key.1)
            }
            2 if !self.store.aof && !self.store_snapshots.is_empty() && !self.twinned => {
                self.store_lost = true;
                let at = self.rng.usize(..self.store_snapshots.len());
                self.store = self.store_snapshots[at].clone();
                "the store restarts from an older snapshot".to_owned()
            }
            _ => return,
        };
        self.trace.push(what);
    }

    fn twin_event(&mut self) {
        if self.twin.take().is_some() {
            self.clash_seen = false;
            self.trace.push("the twin of h0 stops".to_owned());
            return;
        }
        // A host that never joined trusts the store as it finds it, so it starts only
        // while the store is whole (docs/shared-state.md).
        let whole = self.store.epoch.is_some()
            && self
                .hosts
                .iter()
                .all(|h| h.dir.epoch.is_none_or(|e| self.store.epoch == Some(e)));
        if !whole || self.store_lost {
            return;
        }
        self.twinned = true;
        let id = self.journal_id();
        self.clash_seen = self.rng.bool();
        self.twin = Some(Host::new("h0", id));
        let started = self.with_world(None, |h, w, s| h.start(false, w, s));
        self.trace.push(format!(
            "a second process starts as h0 with a state directory of its own ({}): {}",
            if self.clash_seen {
                "the clash seen"
            } else {
                "the clash not seen yet"
            },
            if started.is_some() { "up" } else { "refused" }
        ));
    }

    fn recover_store(&mut self) {
        // Only after a loss, and only once every host runs and re-registered its actions.
        let lost = self
            .hosts
            .iter()
            .any(|h| h.dir.epoch.is_some_and(|e| self.store.epoch != Some(e)));
        if !lost || self.hosts.iter().any(|h| !h.up) {
            return;
        }
        // Every running process re-registers what its journal holds (a second process
        // with a host's id as well).
        for h in self.hosts.iter().chain(self.twin.iter().filter(|t| t.up)) {
            for identity in h.dir.journal.rows.keys() {
                self.store
                    .claims
                    .entry(identity.clone())
                    .or_insert_with(|| h.id.clone());
            }
        }
        let epoch = self.journal_id();
        self.store.epoch = Some(epoch);
        self.store.recovered = Some(epoch);
        self.trace.push("an operator recovers the store".to_owned());
    }

    fn check(&mut self) -> Result<(), Violation> {
        self.tally.effects = self
            .providers
            .iter()
            .map(|p| p.effects.values().map(|n| u64::from(*n)).sum::<u64>())
            .sum();
        for intent in &self.intents {
            let done = self.providers[intent.provider].done(&intent.identity);
            let what = if done > 1 {
                Some(format!("{} was done {done} times", intent.identity.1))
            } else if done == 0 && self.succeeded.contains(&intent.identity) {
                Some(format!(
                    "{} was told succeeded and not done",
                    intent.identity.1
                ))
            } else if self
                .not_sent
                .get(&intent.identity)
                .is_some_and(|then| done > *then)
            {
                Some(format!(
                    "{} was told not sent and done later",
                    intent.identity.1
                ))
            } else {
                None
            };
            if let Some(what) = what {
                return Err(Violation {
                    seed: self.seed,
                    what,
                    trace: self.trace.clone(),
                });
            }
        }
        Ok(())
    }
}
