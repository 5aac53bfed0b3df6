//! A host as the simulation runs it: a process with a state directory (journal, audit log,
//! the store epoch it joined), taking an action through the write path's steps — claim,
//! record, refuse or send, settle — each of which the process may die after.
//!
//! The steps follow `sluice::writes` (`Writes::write`, `send`, `settle`, `recover`); the
//! decisions that carry the guarantee are the host's own code, called here: every state
//! move is checked against [`State::may_become`], keys come from [`KeySecret`], a start
//! holds the journal to the log with [`witnesses::standing`], and a claim asks the store's
//! settings of [`judge_durability`].

use std::collections::BTreeSet;

use sluice::admission::shared::judge_durability;
use sluice::journal::{KeySecret, State};
use sluice::writes::witnesses::{self, Standing};

use super::parts::{Identity, Journal, Kind, Log, Provider, Row, Store};

/// What the agent is told of a submit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// Done.
    Succeeded,
    /// The provider refused it.
    Failed,
    /// Nothing was sent, and nothing will be unless the agent submits it again.
    NotSent,
    /// This host did not take it (another host owns it, the store lost its state or could
    /// lose a claim, another process uses this host's id): nothing was sent from here, but
    /// the action may be in another host's hands; submit it again, under its own name.
    NotTaken,
    /// A person decides (an uncertain write at a provider that cannot be asked, or a record
    /// lost).
    Escalated,
    /// No answer: the host died, or would not start.
    Unknown,
}

/// A host's state directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    /// The journal.
    pub journal: Journal,
    /// The audit log (kept beside the journal, so a wiped directory loses both).
    pub log: Log,
    /// The store epoch this host joined (`store.epoch`).
    pub epoch: Option<u64>,
}

/// A host: its id in the store, its state directory, and its process.
#[derive(Debug)]
pub struct Host {
    /// Its `[store] host_id`.
    pub id: String,
    /// Its state directory.
    pub dir: StateDir,
    /// Whether its process runs (a start the witnesses refused leaves it down).
    pub up: bool,
    /// Actions this process claimed and has not recorded yet.
    claimed_here: BTreeSet<Identity>,
    /// Journals as they were after each commit, for damage that rolls one back.
    pub snapshots: Vec<Journal>,
}

/// Where a submit is: a step may be the process's last.
#[allow(missing_debug_implementations, reason = "closures")]
pub struct Step<'a> {
    /// Draws whether the process dies here.
    pub die: &'a mut dyn FnMut() -> bool,
    /// Draws what the wire does to an attempt.
    pub wire: &'a mut dyn FnMut() -> Wire,
    /// Draws whether admission refuses the write before its first byte.
    pub refuse: &'a mut dyn FnMut() -> bool,
}

/// What the wire does to one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Delivered and answered.
    Answered,
    /// Delivered; the answer was lost.
    AnswerLost,
    /// Lost on the way (the host cannot tell it from [`Wire::AnswerLost`]).
    RequestLost,
    /// Delivered and refused by the provider, for sure; no effect.
    Rejected,
}

/// The world a host acts in.
#[allow(missing_debug_implementations, reason = "a borrow of the scenario")]
pub struct World<'a> {
    /// The store.
    pub store: &'a mut Store,
    /// The providers.
    pub providers: &'a mut [Provider],
    /// The group's key secret.
    pub secret: &'a KeySecret,
    /// Whether another live process uses the host's id (and the host saw it).
    pub clash_seen: bool,
    /// The last id drawn (journals, epochs), so that a seed draws the same ones.
    pub ids: &'a mut u64,
}

impl World<'_> {
    fn fresh_id(&mut self) -> u64 {
        *self.ids += 1;
        *self.ids
    }
}

/// The process died at a step.
#[derive(Debug)]
struct Died;

impl Host {
    /// A host `id` with a new state directory; `journal_id` names its journal.
    pub fn new(id: &str, journal_id: u64) -> Self {
        Self {
            id: id.to_owned(),
            dir: StateDir {
                journal: Journal::new(journal_id),
                log: Log::default(),
                epoch: None,
            },
            up: false,
            claimed_here: BTreeSet::new(),
            snapshots: Vec::new(),
        }
    }

    /// Moves `identity` to `to` in one committed transaction (checked against the host's
    /// own table of moves), bumping the mark; then the log names the mark.
    fn advance(&mut self, identity: &Identity, to: State) {
        let row = self
            .dir
            .journal
            .rows
            .get_mut(identity)
            .expect("a recorded action");
        assert!(
            row.state.may_become(to),
            "the write path moved {identity:?} from {:?} to {to:?}, which the journal refuses",
            row.state
        );
        row.state = to;
        self.committed(Some(identity));
    }

    /// A transaction committed (of `identity`'s, or none): the mark bumped, then logged.
    fn committed(&mut self, identity: Option<&Identity>) {
        self.dir.journal.seq += 1;
        self.snapshots.push(self.dir.journal.clone());
        if self.snapshots.len() > 32 {
            self.snapshots.remove(0);
        }
        let mark = (self.dir.journal.id, self.dir.journal.seq);
        self.dir.log.last = Some(mark);
        if let Some(identity) = identity {
            self.dir.log.known.insert(identity.clone(), mark);
        }
    }

    /// Starts the process: the journal held to the log (refused when behind or replaced,
    /// unless `accept`: then every action the log knows and the journal does not is
    /// recorded lost), then every unfinished action resumed. `None`: it did not start;
    /// else what each resumed action came to.
    pub fn start(
        &mut self,
        accept: bool,
        world: &mut World<'_>,
        step: &mut Step<'_>,
    ) -> Option<Vec<String>> {
        self.claimed_here.clear();
        let standing =
            witnesses::standing(&self.dir.journal.mark(), self.dir.log.last_mark().as_ref());
        if standing == Standing::Agree && self.dir.log.last.is_none() {
            // A new log beside a journal that never moved: its id drawn anew, and logged.
            self.dir.journal.id = world.fresh_id();
            self.committed(None);
        }
        if standing != Standing::Agree {
            if !accept {
                self.up = false;
                return None;
            }
            // What the log knows and the journal does not, and what the log saw move after
            // the journal's copy, is lost (`witnesses::hold`).
            let (id, seq) = (self.dir.journal.id, self.dir.journal.seq);
            let known: Vec<(Identity, (u64, u64))> = self
                .dir
                .log
                .known
                .iter()
                .map(|(i, m)| (i.clone(), *m))
                .collect();
            for (identity, (logged_id, logged_seq)) in known {
                let moved_since = logged_id != id || logged_seq > seq;
                match self.dir.journal.rows.get_mut(&identity) {
                    None => {
                        let key = world.secret.key(&identity.0, &identity.1);
                        self.dir.journal.rows.insert(
                            identity,
                            Row {
                                key,
                                state: State::Lost,
                                provider: 0,
                            },
                        );
                    }
                    Some(row)
                        if moved_since && !row.state.is_final() && row.state != State::Lost =>
                    {
                        assert!(row.state.may_become(State::Lost), "{:?}", row.state);
                        row.state = State::Lost;
                    }
                    Some(_) => {}
                }
            }
            // And what is not over and the log does not know: another host's, or an older
            // copy's.
            for (identity, row) in &mut self.dir.journal.rows {
                if !self.dir.log.known.contains_key(identity)
                    && !row.state.is_final()
                    && row.state != State::Lost
                {
                    assert!(row.state.may_become(State::Lost), "{:?}", row.state);
                    row.state = State::Lost;
                }
            }
            // The accepted journal is one of its own from now on: a new id.
            let logged = self.dir.log.last.map_or(0, |(_, seq)| seq);
            self.dir.journal.seq = self.dir.journal.seq.max(logged);
            self.dir.journal.id = world.fresh_id();
            self.committed(None);
        }
        self.up = true;
        // The upkeep joins the store's epoch soon after a start, if it has one (hosts
        // never make it).
        if self.dir.epoch.is_none() {
            self.dir.epoch = world.store.epoch;
        }
        let unfinished: Vec<Identity> = self
            .dir
            .journal
            .rows
            .iter()
            .filter(|(_, r)| r.state.is_unfinished())
            .map(|(i, _)| i.clone())
            .collect();
        let mut resumed = Vec::new();
        for identity in unfinished {
            let told = self.go_on(&identity, world, step);
            resumed.push(format!("{} {told:?}", identity.1));
            if told.is_err() {
                self.up = false;
                break;
            }
        }
        Some(resumed)
    }

    /// The agent submits `identity`, for provider `provider`.
    pub fn submit(
        &mut self,
        identity: &Identity,
        provider: usize,
        world: &mut World<'_>,
        step: &mut Step<'_>,
    ) -> Told {
        if !self.up {
            return Told::Unknown;
        }
        match self.write(identity, provider, world, step) {
            Ok(told) => told,
            Err(Died) => {
                self.up = false;
                Told::Unknown
            }
        }
    }

    fn write(
        &mut self,
        identity: &Identity,
        provider: usize,
        world: &mut World<'_>,
        step: &mut Step<'_>,
    ) -> Result<Told, Died> {
        if let Some(row) = self.dir.journal.rows.get(identity) {
            return Ok(match row.state {
                State::Succeeded => Told::Succeeded,
                State::Failed | State::Cancelled => Told::Failed,
                State::Escalated => Told::Escalated,
                State::Lost => {
                    self.advance(identity, State::Escalated);
                    Told::Escalated
                }
                State::Refused => {
                    // Only the agent's resubmit reopens it.
                    self.advance(identity, State::Pending);
                    return self.send(identity, world, step);
                }
                State::Pending | State::Sent | State::Uncertain | State::Reconciling => {
                    return self.go_on(identity, world, step);
                }
            });
        }
        // Claim before recording.
        if world.clash_seen || judge_durability(&world.store.info()).is_err() {
            return Ok(Told::NotTaken);
        }
        match (self.dir.epoch, world.store.epoch) {
            (None, Some(epoch)) => self.dir.epoch = Some(epoch),
            // No epoch and none joined: nobody can say who did what (`NotInitialized`).
            (None, None) => return Ok(Told::NotTaken),
            (Some(joined), Some(epoch)) if joined == epoch => {}
            (Some(_), Some(epoch)) if world.store.recovered == Some(epoch) => {
                self.dir.epoch = Some(epoch);
            }
            // The store lost its state: refused, unless the journal holds it (above).
            (Some(_), _) => return Ok(Told::NotTaken),
        }
        match world.store.claims.get(identity) {
            None => {
                world.store.claims.insert(identity.clone(), self.id.clone());
            }
            Some(owner) if *owner != self.id => return Ok(Told::NotTaken),
            // Claimed by this host before, and its journal does not hold it: lost state.
            Some(_) if !self.claimed_here.contains(identity) => return Ok(Told::Escalated),
            Some(_) => {}
        }
        self.claimed_here.insert(identity.clone());
        if (step.die)() {
            return Err(Died);
        }
        // Record the intent, with the key derived from the identity.
        self.dir.journal.rows.insert(
            identity.clone(),
            Row {
                key: world.secret.key(&identity.0, &identity.1),
                state: State::Pending,
                provider,
            },
        );
        self.committed(Some(identity));
        self.claimed_here.remove(identity);
        if (step.die)() {
            return Err(Died);
        }
        self.send(identity, world, step)
    }

    /// Sends a `pending` action, or refuses it before its first byte.
    fn send(
        &mut self,
        identity: &Identity,
        world: &mut World<'_>,
        step: &mut Step<'_>,
    ) -> Result<Told, Died> {
        if (step.refuse)() {
            self.advance(identity, State::Refused);
            if (step.die)() {
                return Err(Died);
            }
            return Ok(Told::NotSent);
        }
        self.advance(identity, State::Sent);
        if (step.die)() {
            return Err(Died);
        }
        self.attempt(identity, world, step)
    }

    /// One attempt of a `sent` action, and what follows it.
    fn attempt(
        &mut self,
        identity: &Identity,
        world: &mut World<'_>,
        step: &mut Step<'_>,
    ) -> Result<Told, Died> {
        let row = &self.dir.journal.rows[identity];
        let (key, provider) = (row.key.clone(), row.provider);
        let wire = (step.wire)();
        if matches!(wire, Wire::Answered | Wire::AnswerLost) {
            world.providers[provider].receive(identity, &key);
        }
        if (step.die)() {
            return Err(Died);
        }
        match wire {
            Wire::Answered => {
                self.advance(identity, State::Succeeded);
                Ok(Told::Succeeded)
            }
            Wire::Rejected => {
                self.advance(identity, State::Failed);
                Ok(Told::Failed)
            }
            Wire::AnswerLost | Wire::RequestLost => {
                self.advance(identity, State::Uncertain);
                if (step.die)() {
                    return Err(Died);
                }
                self.settle(identity, world, step)
            }
        }
    }

    /// Takes an unfinished action on as a restarted host does: a `pending` one is sent, a
    /// `sent`, `uncertain` or `reconciling` one settled.
    fn go_on(
        &mut self,
        identity: &Identity,
        world: &mut World<'_>,
        step: &mut Step<'_>,
    ) -> Result<Told, Died> {
        match self.dir.journal.rows[identity].state {
            State::Pending => self.send(identity, world, step),
            State::Sent => {
                self.advance(identity, State::Uncertain);
                self.settle(identity, world, step)
            }
            State::Uncertain | State::Reconciling => self.settle(identity, world, step),
            other => unreachable!("{other:?} is not unfinished"),
        }
    }

    /// Settles an uncertain action: a provider that honours keys is sent it again with
    /// its key; one that can be looked up is asked (twice for "not done": every attempt was
    /// made before, so the provider finished each) and sent it again only when not done;
    /// one that can do neither goes to a person.
    fn settle(
        &mut self,
        identity: &Identity,
        world: &mut World<'_>,
        step: &mut Step<'_>,
    ) -> Result<Told, Died> {
        if self.dir.journal.rows[identity].state == State::Uncertain {
            self.advance(identity, State::Reconciling);
        }
        let provider = self.dir.journal.rows[identity].provider;
        match world.providers[provider].kind {
            Kind::HonoursKeys => {}
            Kind::LookedUp => {
                if world.providers[provider].look_up(identity) == Some(true) {
                    self.advance(identity, State::Succeeded);
                    return Ok(Told::Succeeded);
                }
            }
            Kind::Blind => {
                self.advance(identity, State::Escalated);
                return Ok(Told::Escalated);
            }
        }
        if (step.die)() {
            return Err(Died);
        }
        self.advance(identity, State::Sent);
        self.attempt(identity, world, step)
    }

    /// A person decides each escalated action, having checked with the provider: done is
    /// recorded done; not done is cancelled (the agent may submit it anew); a lost record
    /// is cancelled.
    pub fn decide(&mut self) {
        let escalated: Vec<Identity> = self
            .dir
            .journal
            .rows
            .iter()
            .filter(|(_, r)| r.state == State::Escalated)
            .map(|(i, _)| i.clone())
            .collect();
        for identity in escalated {
            self.advance(&identity, State::Cancelled);
        }
    }
}
