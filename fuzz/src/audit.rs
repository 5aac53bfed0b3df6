//! Real audit logs for the audit targets: written by `sluice::audit::AuditLog` with a fixed
//! key, so a target (and the seed corpus) can hold logs whose checkpoints really verify.

use std::num::NonZeroU32;
use std::path::Path;

use sluice::audit::{AuditKey, AuditLog, AuditSettings, Event, EventKind, VerifyingKey};

/// The signing key of every log the targets write. A fuzzing key, signing nothing else.
pub const SECRET: [u8; 32] = [7; 32];

/// The public key that verifies [`SECRET`]'s checkpoints.
pub fn verifying_key() -> VerifyingKey {
    AuditKey::from_bytes(&SECRET).verifying_key()
}

/// One event to append.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct EventSpec {
    pub kind: u8,
    pub after_ms: u16,
    pub task: Option<u8>,
    pub attempt: Option<u8>,
    pub status: Option<u16>,
    pub detail: Option<String>,
}

/// What every non-checkpoint event can be.
const KINDS: [EventKind; 11] = [
    EventKind::ActionRequested,
    EventKind::ActionSent,
    EventKind::ActionResult,
    EventKind::RetryScheduled,
    EventKind::ReconciliationRequired,
    EventKind::Reconciled,
    EventKind::Escalated,
    EventKind::Decision,
    EventKind::Cancelled,
    EventKind::BodyDisclosed,
    EventKind::AccessApproved,
];

/// A whole log: its events and how often it signs a checkpoint.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct ChainSpec {
    pub events: Vec<EventSpec>,
    pub checkpoint_every: u8,
    /// Prune the log before closing it: drop the records older than this many milliseconds
    /// after the first event (`AuditLog::prune`, which writes a signed `pruned` record).
    pub prune_after_ms: Option<u16>,
}

impl ChainSpec {
    /// One of 256 chains, picked by `seed`: 1 to 12 events with details that JSON must
    /// escape (quotes, backslashes, controls, non-ASCII), a checkpoint every 1 to 5 records,
    /// and one chain in three pruned before it is closed. Few enough that a target can keep every chain it signed.
    pub fn from_seed(seed: u8) -> Self {
        const DETAILS: [&str; 6] = [
            "",
            "approved by ops",
            "\"quoted\" \\ back",
            "tab\there\u{1}",
            "é ✓ 🚀",
            "{\"event\":\"checkpoint\"}",
        ];
        let mut x = u32::from(seed).wrapping_mul(2_654_435_761).wrapping_add(1);
        let mut next = |n: u32| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x % n
        };
        let events = (0..1 + next(12))
            .map(|_| EventSpec {
                kind: next(11) as u8,
                after_ms: next(5_000) as u16,
                task: (next(4) > 0).then(|| next(200) as u8),
                attempt: (next(2) > 0).then(|| next(5) as u8),
                status: (next(2) > 0).then(|| [200, 201, 409, 429, 500][next(5) as usize]),
                detail: (next(3) > 0).then(|| DETAILS[next(6) as usize].to_owned()),
            })
            .collect();
        let checkpoint_every = 1 + next(5) as u8;
        let prune_after_ms = (next(3) == 0).then(|| next(30_000) as u16);
        Self {
            events,
            checkpoint_every,
            prune_after_ms,
        }
    }
}

/// Writes the log of `spec` at `log` (and its witness at `witness`), pruned if `spec` says
/// so and closed with a final checkpoint, and returns both files' bytes. Existing files are replaced.
///
/// # Panics
/// When the writer fails: the scratch directory is the target's own.
pub fn write_chain(spec: &ChainSpec, log: &Path, witness: &Path) -> (Vec<u8>, Vec<u8>) {
    for f in [log, witness] {
        let _ = std::fs::remove_file(f);
    }
    let settings = AuditSettings {
        checkpoint_every: NonZeroU32::new(u32::from(spec.checkpoint_every.max(1)))
            .unwrap_or(NonZeroU32::MIN),
        retention: None,
        witness: Some(witness.to_path_buf()),
        new_witness_epoch: false,
    };
    let start = crate::NOW_MS;
    let mut now = start;
    let writer = AuditLog::open(log, AuditKey::from_bytes(&SECRET), settings, now)
        .expect("open a new audit log");
    for e in &spec.events {
        now += i64::from(e.after_ms);
        writer.append(&event(e, now)).expect("append");
    }
    if let Some(after) = spec.prune_after_ms {
        writer.prune(start + i64::from(after), now).expect("prune");
    }
    writer.close(now).expect("close");
    (
        std::fs::read(log).expect("read the log back"),
        std::fs::read(witness).expect("read the witness back"),
    )
}

/// The event `spec` describes, at `time_ms`.
pub fn event(spec: &EventSpec, time_ms: i64) -> Event {
    let mut e = Event::new(KINDS[usize::from(spec.kind) % KINDS.len()], time_ms);
    if let Some(t) = spec.task {
        e = e.task(format!("task-{t}")).action(format!("action-{t}"));
    }
    if let Some(a) = spec.attempt {
        e = e.attempt(u32::from(a));
    }
    if let Some(s) = spec.status {
        e = e.status(s);
    }
    if let Some(d) = &spec.detail {
        e = e.detail(d);
    }
    e
}
