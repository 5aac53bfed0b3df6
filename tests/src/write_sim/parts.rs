//! The simulation's parts outside the host: providers of the three kinds, the shared store,
//! and the host's two records (journal and audit log) as values that damage can roll back,
//! empty, copy or wipe.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sluice::journal::State;

/// An action's identity: its task and its name.
pub type Identity = (String, String);

/// How a provider treats a write it receives twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A second request with the same idempotency key does nothing (Stripe).
    HonoursKeys,
    /// Every request is a new effect, but what was done can be looked up (GitHub).
    LookedUp,
    /// Every request is a new effect, and nothing can be looked up.
    Blind,
}

impl Kind {
    /// The three, in order.
    pub const ALL: [Self; 3] = [Self::HonoursKeys, Self::LookedUp, Self::Blind];
}

/// A provider: what it did, by the action that asked for it.
#[derive(Debug, Clone)]
pub struct Provider {
    /// Its kind.
    pub kind: Kind,
    /// Effects done, by action.
    pub effects: HashMap<Identity, u32>,
    /// Keys seen (for [`Kind::HonoursKeys`]).
    keys: BTreeSet<String>,
}

impl Provider {
    /// A provider of `kind` that did nothing yet.
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            effects: HashMap::new(),
            keys: BTreeSet::new(),
        }
    }

    /// Receives `identity`'s request under `key`: an effect, unless the provider honours
    /// keys and saw this one.
    pub fn receive(&mut self, identity: &Identity, key: &str) {
        if self.kind == Kind::HonoursKeys && !self.keys.insert(key.to_owned()) {
            return;
        }
        *self.effects.entry(identity.clone()).or_default() += 1;
    }

    /// Whether `identity` was done, when this provider can say.
    pub fn look_up(&self, identity: &Identity) -> Option<bool> {
        (self.kind == Kind::LookedUp).then(|| self.effects.get(identity).is_some_and(|n| *n > 0))
    }

    /// How many times `identity` was done.
    pub fn done(&self, identity: &Identity) -> u32 {
        self.effects.get(identity).copied().unwrap_or(0)
    }
}

/// The shared store (Redis): claims and the ownership epoch, and how it keeps keys.
#[derive(Debug, Clone, Default)]
pub struct Store {
    /// Who claimed each action.
    pub claims: BTreeMap<Identity, String>,
    /// The ownership epoch.
    pub epoch: Option<u64>,
    /// The epoch an operator set after a loss.
    pub recovered: Option<u64>,
    /// Whether it evicts keys when full (a `maxmemory` with an evicting policy).
    pub evicts: bool,
    /// Whether it keeps an append-only file.
    pub aof: bool,
}

impl Store {
    /// What `INFO` says of it (the lines the host reads).
    pub fn info(&self) -> String {
        format!(
            "# Memory\r\nmaxmemory:{}\r\nmaxmemory_policy:{}\r\n\r\n# Persistence\r\naof_enabled:{}\r\n",
            if self.evicts { 67_108_864 } else { 0 },
            if self.evicts {
                "volatile-lru"
            } else {
                "noeviction"
            },
            u8::from(self.aof)
        )
    }
}

/// One action's row in a journal.
#[derive(Debug, Clone)]
pub struct Row {
    /// Its idempotency key.
    pub key: String,
    /// Where it is.
    pub state: State,
    /// The provider it goes to.
    pub provider: usize,
}

/// A host's journal: its mark and its rows.
#[derive(Debug, Clone)]
pub struct Journal {
    /// Drawn when it was made.
    pub id: u64,
    /// Bumped by every transaction that records or moves an action.
    pub seq: u64,
    /// The actions.
    pub rows: BTreeMap<Identity, Row>,
}

impl Journal {
    /// A new, empty journal with id `id`.
    pub fn new(id: u64) -> Self {
        Self {
            id,
            seq: 0,
            rows: BTreeMap::new(),
        }
    }

    /// The mark, as the host's type.
    pub fn mark(&self) -> sluice::journal::Mark {
        sluice::journal::Mark {
            id: self.id.to_string(),
            seq: self.seq,
        }
    }
}

/// A host's audit log: the last mark it names, and the actions it knows.
#[derive(Debug, Clone, Default)]
pub struct Log {
    /// The last journal mark an event named: (id, seq).
    pub last: Option<(u64, u64)>,
    /// The actions it recorded, each with the mark its last record of it names.
    pub known: BTreeMap<Identity, (u64, u64)>,
}

impl Log {
    /// The last mark, as the host's type.
    pub fn last_mark(&self) -> Option<sluice::audit::JournalMark> {
        self.last.map(|(id, seq)| sluice::audit::JournalMark {
            id: id.to_string(),
            seq,
        })
    }
}
