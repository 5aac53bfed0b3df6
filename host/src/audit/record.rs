//! The on-disk format, shared by the writer and the verifier: a record's canonical JSON, its
//! hash, the bytes a checkpoint signs, and how a line is split back into its parts.
//!
//! A line is `<hash-hex> <record-json>\n`. The hash of a record is
//! `SHA-256(previous hash (32 bytes) || the record's JSON exactly as stored)`, so verifying
//! never re-serializes anything: it hashes the bytes on disk.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub(crate) use crate::hex::{from_hex, to_hex};

use super::{Event, EventKind, JournalMark, MAX_DETAIL_CHARS, MAX_NAME_CHARS};

/// The `prev` of the first record of a log: 32 zero bytes.
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// What a checkpoint's signature is over, before the covered record's seq and hash.
const CHECKPOINT_DOMAIN: &[u8] = b"sluice-audit-checkpoint\n";

/// One record as stored: the canonical JSON is serde_json of this struct (fields in
/// declaration order, no whitespace, absent options omitted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Record {
    pub seq: u64,
    pub time_ms: i64,
    pub prev: String,
    pub event: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a `pruned` record: the seq the log starts at since retention dropped what came
    /// before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
    /// The journal's mark when the event was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalMark>,
}

impl Record {
    /// Record `seq`, chained to `prev` (hex), stating `event`'s facts and, for a checkpoint,
    /// its signed statement. Names are cut to [`MAX_NAME_CHARS`] and the note to
    /// [`MAX_DETAIL_CHARS`], so that a record always fits in a line a reader accepts.
    pub fn new(seq: u64, prev: String, event: &Event, checkpoint: Option<Checkpoint>) -> Self {
        let name = |n: &Option<String>| n.as_deref().map(|n| cut(n, MAX_NAME_CHARS));
        Self {
            seq,
            time_ms: event.time_ms,
            prev,
            event: event.kind,
            task: name(&event.task),
            action: name(&event.action),
            attempt: event.attempt,
            idempotency_key: name(&event.idempotency_key),
            status: event.status,
            retry_after_ms: event.retry_after_ms,
            scope: name(&event.scope),
            due_ms: event.due_ms,
            detail: event.detail.as_deref().map(|d| cut(d, MAX_DETAIL_CHARS)),
            anchor: None,
            checkpoint,
            journal: event.journal.clone(),
        }
    }

    /// Record `seq`, chained to `prev`, saying that the log now starts at `anchor`.
    pub fn pruned(seq: u64, prev: String, time_ms: i64, anchor: u64) -> Self {
        Self {
            anchor: Some(anchor),
            ..Self::new(seq, prev, &Event::new(EventKind::Pruned, time_ms), None)
        }
    }
}

/// `text` cut to `max` characters.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// A checkpoint's signed statement: "record `covers` has hash `head`".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Checkpoint {
    /// The seq of the record it covers: the one just before the checkpoint.
    pub covers: u64,
    /// That record's hash, hex.
    pub head: String,
    /// The first 16 hex digits of SHA-256 of the public key that verifies `sig`.
    pub key_id: String,
    /// The Ed25519 signature over [`checkpoint_message`], hex.
    pub sig: String,
}

/// A line split into its parts.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// The hash the line states.
    pub hash: [u8; 32],
    /// The record's JSON exactly as stored.
    pub json: &'a [u8],
    /// The record parsed.
    pub record: Record,
}

impl Line<'_> {
    /// The hash the stored bytes actually have, given the record's own `prev`.
    pub fn computed_hash(&self) -> Option<[u8; 32]> {
        let prev = from_hex::<32>(&self.record.prev)?;
        Some(record_hash(&prev, self.json))
    }
}

/// Splits a line (without its newline) into hash and record.
///
/// # Errors
/// What is wrong with the line, for a message.
pub(crate) fn parse_line(line: &[u8]) -> Result<Line<'_>, String> {
    let Some(space) = line.iter().position(|&b| b == b' ') else {
        return Err("not a record: no space between hash and record".into());
    };
    let (hash, json) = (&line[..space], &line[space + 1..]);
    // Lower-case only, as written: a hash that also read in upper case would let the stored
    // bytes change without the verifier noticing.
    let hash = std::str::from_utf8(hash)
        .ok()
        .filter(|h| !h.bytes().any(|b| b.is_ascii_uppercase()))
        .and_then(from_hex::<32>)
        .ok_or("not a record: the hash is not 64 lower-case hex digits")?;
    let record: Record = serde_json::from_slice(json).map_err(|e| format!("not a record: {e}"))?;
    if (record.event == EventKind::Checkpoint) != record.checkpoint.is_some() {
        return Err("not a record: a checkpoint event must carry a checkpoint, and only it".into());
    }
    if (record.event == EventKind::Pruned) != record.anchor.is_some() {
        return Err("not a record: a pruned event must carry an anchor, and only it".into());
    }
    Ok(Line { hash, json, record })
}

/// The canonical JSON of a record.
pub(crate) fn encode(record: &Record) -> Vec<u8> {
    // Serializing plain strings and integers cannot fail.
    serde_json::to_vec(record).unwrap_or_default()
}

/// The line to store for `json` chained after `prev`: `(line with newline, its hash)`.
pub(crate) fn line_for(prev: &[u8; 32], json: &[u8]) -> (Vec<u8>, [u8; 32]) {
    let hash = record_hash(prev, json);
    let mut line = Vec::with_capacity(64 + 2 + json.len());
    line.extend_from_slice(to_hex(&hash).as_bytes());
    line.push(b' ');
    line.extend_from_slice(json);
    line.push(b'\n');
    (line, hash)
}

/// `SHA-256(prev || json)`.
pub(crate) fn record_hash(prev: &[u8; 32], json: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(json);
    h.finalize().into()
}

/// The bytes a checkpoint signs: a domain tag, the covered seq (big-endian) and its hash.
pub(crate) fn checkpoint_message(covers: u64, head: &[u8; 32]) -> Vec<u8> {
    let mut m = Vec::with_capacity(CHECKPOINT_DOMAIN.len() + 8 + 32);
    m.extend_from_slice(CHECKPOINT_DOMAIN);
    m.extend_from_slice(&covers.to_be_bytes());
    m.extend_from_slice(head);
    m
}
