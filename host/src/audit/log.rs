//! The writer: appends records durably, chains them, and signs a checkpoint every so often.

use std::fs::File;
use std::io::Write as _;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::keys::AuditKey;
use super::record::{Checkpoint, Record, checkpoint_message, encode, line_for, parse_line, to_hex};
use super::reopen::{open_witness, read_tail};
use super::{AuditError, Event, EventKind};
use crate::private_fs;

/// How a log is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// A signed checkpoint follows every this many records (64 by default). Fewer means a
    /// shorter unsigned tail after a crash, at one signature and one witness line each.
    pub checkpoint_every: NonZeroU32,
    /// How long records are kept; `None` keeps everything. Applied when the log is opened.
    pub retention: Option<Duration>,
    /// Where a copy of every checkpoint line goes: a file kept apart from the log (next to the
    /// secret key, say), so that deleting the log's tail can be seen. `None` writes none.
    pub witness: Option<PathBuf>,
    /// Start the witness afresh when it lacks more of the log's checkpoints than a crash
    /// leaves (missing, emptied, cut short), instead of refusing to open
    /// ([`AuditError::WitnessLost`]): a [`EventKind::WitnessEpoch`] record says so in the
    /// log. An operator's word for one start, never a standing setting.
    pub new_witness_epoch: bool,
}

impl Default for AuditSettings {
    fn default() -> Self {
        const EVERY: NonZeroU32 = NonZeroU32::new(64).unwrap();
        Self {
            checkpoint_every: EVERY,
            retention: None,
            witness: None,
            new_witness_epoch: false,
        }
    }
}

/// An append-only, hash-chained, checkpoint-signed audit log. One writer per file.
///
/// `Send + Sync`: callers share it (in an `Arc`) and [`AuditLog::append`] from any thread;
/// appends are serialized inside.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    key: AuditKey,
    settings: AuditSettings,
    state: Mutex<State>,
}

/// Where the chain is.
#[derive(Debug)]
struct State {
    file: File,
    /// The bytes of whole records in the file.
    len: u64,
    /// The seq of the last record, 0 for an empty log.
    seq: u64,
    /// The hash of the last record, 32 zero bytes for an empty log.
    head: [u8; 32],
    /// Records written since the last checkpoint.
    since_checkpoint: u32,
    witness: Option<File>,
    /// The journal's mark the last record naming one names.
    journal: Option<super::JournalMark>,
}

impl AuditLog {
    /// Opens the log at `path`, creating it (and the witness) `0600` if needed, and continues
    /// its chain. A torn last line (a crash mid-write) is cut away with a warning, in the log
    /// and in the witness. The log's last checkpoint, when the witness lacks only that one
    /// (a crash between the two writes), is copied to it; a witness that lacks more is
    /// refused, or with [`AuditSettings::new_witness_epoch`] started afresh with a
    /// [`EventKind::WitnessEpoch`] record and a checkpoint signing it. With
    /// [`AuditSettings::retention`], records older than `now_ms - retention` are then
    /// pruned ([`AuditLog::prune`]).
    ///
    /// `key` is held in memory only: nothing here writes it anywhere.
    ///
    /// # Errors
    /// [`AuditError::Io`] naming the file; [`AuditError::Malformed`] naming the line when the
    /// last whole record is not a well-formed record, or a line is longer than
    /// [`MAX_LINE`](super::MAX_LINE); [`AuditError::WitnessAhead`] when the witness holds a
    /// checkpoint past the log's end (its tail was deleted); [`AuditError::WitnessLost`]
    /// when it lacks more than the log's last checkpoint.
    pub fn open(
        path: &Path,
        key: AuditKey,
        settings: AuditSettings,
        now_ms: i64,
    ) -> Result<Self, AuditError> {
        let io = |source| AuditError::Io {
            path: path.into(),
            source,
        };
        let mut file = private_fs::options()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        let tail = read_tail(&mut file, path)?;
        if tail.torn > 0 {
            tracing::warn!(
                file = %path.display(),
                line = tail.lines + 1,
                bytes = tail.torn,
                "the audit log ends in a torn line (a crash mid-write); cutting it away"
            );
            file.set_len(tail.len).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        let (witness, epoch) = match &settings.witness {
            Some(w) => {
                let (file, lacked) = open_witness(w, path, &tail, settings.new_witness_epoch)?;
                (Some(file), lacked)
            }
            None => (None, None),
        };
        let log = Self {
            path: path.into(),
            key,
            state: Mutex::new(State {
                file,
                len: tail.len,
                seq: tail.seq,
                head: tail.head,
                since_checkpoint: tail.since_checkpoint,
                witness,
                journal: tail.journal,
            }),
            settings,
        };
        if let Some(lacked) = epoch {
            log.start_witness_epoch(lacked, now_ms)?;
        }
        if let Some(keep) = log.settings.retention {
            let keep = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
            log.prune(now_ms.saturating_sub(keep), now_ms)?;
        }
        Ok(log)
    }

    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The public half of the key that signs the log's checkpoints: what verifies it.
    pub fn verifying_key(&self) -> ed25519_dalek::VerifyingKey {
        self.key.verifying_key()
    }

    /// The witness file every checkpoint is copied to, if the log has one.
    pub fn witness(&self) -> Option<&Path> {
        self.settings.witness.as_deref()
    }

    /// The seq of the last record written, 0 for an empty log.
    pub fn last_seq(&self) -> u64 {
        self.state().seq
    }

    /// The journal's mark the last record that names one names: how far the journal had
    /// gone, as its host last logged it.
    pub fn last_journal_mark(&self) -> Option<super::JournalMark> {
        self.state().journal.clone()
    }

    /// Appends `event` and returns its seq once the line is on disk. Every
    /// [`AuditSettings::checkpoint_every`] records, a signed checkpoint follows it.
    ///
    /// # Errors
    /// [`AuditError::CheckpointEvent`] for a checkpoint or pruned event; [`AuditError::Io`] when the
    /// line could not be written and synced (nothing of it is left in the log) or the
    /// checkpoint after it could not (the event itself is then on disk).
    pub fn append(&self, event: &Event) -> Result<u64, AuditError> {
        if matches!(
            event.kind,
            EventKind::Checkpoint | EventKind::Pruned | EventKind::WitnessEpoch
        ) {
            return Err(AuditError::CheckpointEvent);
        }
        let mut s = self.state();
        let record = Record::new(s.seq + 1, to_hex(&s.head), event, None);
        self.write(&mut s, &record)?;
        if let Some(mark) = &event.journal {
            s.journal = Some(mark.clone());
        }
        let seq = s.seq;
        s.since_checkpoint += 1;
        if s.since_checkpoint >= self.settings.checkpoint_every.get() {
            self.write_checkpoint(&mut s, event.time_ms)?;
        }
        Ok(seq)
    }

    /// Records that the witness starts afresh, lacking `lacked` of the log's checkpoints, and
    /// signs it at once: the new witness's first line is that checkpoint.
    fn start_witness_epoch(&self, lacked: usize, time_ms: i64) -> Result<(), AuditError> {
        let mut s = self.state();
        let detail = format!(
            "the witness was started afresh: it lacked {lacked} of the log's checkpoints \
             (up to record {})",
            s.seq
        );
        let event = Event::new(EventKind::WitnessEpoch, time_ms).detail(&detail);
        let record = Record::new(s.seq + 1, to_hex(&s.head), &event, None);
        self.write(&mut s, &record)?;
        s.since_checkpoint += 1;
        self.write_checkpoint(&mut s, time_ms)?;
        tracing::warn!(
            witness = ?self.settings.witness,
            lacked,
            "started a new audit witness epoch on the operator's word: the log's checkpoints \
             before it are not witnessed (recorded in the log; `sluice audit verify` reports it)"
        );
        Ok(())
    }

    /// Appends a signed checkpoint covering the last record now, and returns its seq.
    ///
    /// # Errors
    /// [`AuditError::Io`] naming the log or the witness file.
    pub fn checkpoint(&self, time_ms: i64) -> Result<u64, AuditError> {
        self.write_checkpoint(&mut self.state(), time_ms)
    }

    /// Closes the log with a final checkpoint (unless its last record is one already), so that
    /// it verifies without `--allow-open-tail`. Returns the last seq.
    ///
    /// # Errors
    /// [`AuditError::Io`] naming the log or the witness file.
    pub fn close(self, time_ms: i64) -> Result<u64, AuditError> {
        self.sign_tail(time_ms)
    }

    /// Signs the records after the last checkpoint with a new one (nothing when the last
    /// record is a checkpoint already), and returns the last seq: what [`AuditLog::close`]
    /// does, for a log that stays open.
    ///
    /// # Errors
    /// [`AuditError::Io`] naming the log or the witness file.
    pub fn sign_tail(&self, time_ms: i64) -> Result<u64, AuditError> {
        let mut s = self.state();
        if s.since_checkpoint > 0 || s.seq == 0 {
            self.write_checkpoint(&mut s, time_ms)?;
        }
        Ok(s.seq)
    }

    /// Drops old records, keeping the log verifiable; returns how many were dropped.
    ///
    /// Precisely: let R be the first record whose `time_ms` is at or after `before_ms` (or
    /// the end of the log). The kept log starts at the last checkpoint record at or before R
    /// — its anchor — and keeps everything from there on. So no record at or after
    /// `before_ms` is ever dropped, every dropped record is older than `before_ms`, and up to
    /// [`AuditSettings::checkpoint_every`] older records may be kept before R. Without such a
    /// checkpoint (other than the log's first record) nothing is dropped. A record that does
    /// not parse stops the scan: nothing at or after it is dropped.
    ///
    /// After the kept records come a `pruned` record naming the anchor (at `now_ms`) and a
    /// checkpoint that signs it: that is what tells the verifier the log starts there because
    /// its writer pruned it, and not because someone deleted its head. The file is rewritten
    /// whole — a temporary file (`0600`), synced, renamed over the log — so a crash leaves
    /// either the old log or the pruned one with its signed statement, with appends held
    /// meanwhile. The witness gets the new checkpoint and is never pruned.
    ///
    /// # Errors
    /// [`AuditError::Io`] naming the file.
    pub fn prune(&self, before_ms: i64, now_ms: i64) -> Result<u64, AuditError> {
        let mut s = self.state();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| AuditError::Io { path, source }
        };
        let data = std::fs::read(&self.path).map_err(io(&self.path))?;
        let whole = usize::try_from(s.len).map_or(data.len(), |len| len.min(data.len()));
        let data = &data[..whole];
        let mut anchor = None;
        let mut offset = 0;
        for (index, line) in data.split_inclusive(|&b| b == b'\n').enumerate() {
            let Ok(parsed) = parse_line(line.strip_suffix(b"\n").unwrap_or(line)) else {
                tracing::warn!(
                    file = %self.path.display(),
                    line = index + 1,
                    "an audit record does not parse; pruning stops before it"
                );
                break;
            };
            if parsed.record.checkpoint.is_some() && index > 0 {
                anchor = Some((index, offset, parsed.record.seq));
            }
            if parsed.record.time_ms >= before_ms {
                break;
            }
            offset += line.len();
        }
        let Some((dropped, start, anchor_seq)) = anchor else {
            return Ok(0);
        };
        // The statement names the journal's last mark, so that the log still names it when
        // every record that did is pruned.
        let pruned = Record {
            journal: s.journal.clone(),
            ..Record::pruned(s.seq + 1, to_hex(&s.head), now_ms, anchor_seq)
        };
        let (pruned_line, pruned_hash) = line_for(&s.head, &encode(&pruned));
        let checkpoint = self.checkpoint_record(s.seq + 1, &pruned_hash, now_ms);
        let (checkpoint_line, head) = line_for(&pruned_hash, &encode(&checkpoint));
        let mut tmp_name = self.path.as_os_str().to_owned();
        tmp_name.push(".prune");
        let tmp = PathBuf::from(tmp_name);
        let mut out = private_fs::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io(&tmp))?;
        out.write_all(&data[start..]).map_err(io(&tmp))?;
        out.write_all(&pruned_line).map_err(io(&tmp))?;
        out.write_all(&checkpoint_line).map_err(io(&tmp))?;
        out.sync_all().map_err(io(&tmp))?;
        drop(out);
        std::fs::rename(&tmp, &self.path).map_err(io(&self.path))?;
        sync_dir(&self.path).map_err(io(&self.path))?;
        s.file = private_fs::options()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(io(&self.path))?;
        s.len = (data.len() - start + pruned_line.len() + checkpoint_line.len()) as u64;
        s.seq = checkpoint.seq;
        s.head = head;
        s.since_checkpoint = 0;
        self.copy_to_witness(&mut s, &checkpoint_line)?;
        tracing::info!(
            file = %self.path.display(),
            dropped,
            anchor = anchor_seq,
            "pruned the audit log to a checkpoint anchor"
        );
        Ok(dropped as u64)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `record` after the head and syncs it; returns the line written. On failure
    /// nothing of the line is left in the log (best effort) and the head does not move.
    fn write(&self, s: &mut State, record: &Record) -> Result<Vec<u8>, AuditError> {
        let (line, hash) = line_for(&s.head, &encode(record));
        let written = s.file.write_all(&line).and_then(|()| s.file.sync_data());
        if let Err(source) = written {
            let _ = s.file.set_len(s.len);
            return Err(AuditError::Io {
                path: self.path.clone(),
                source,
            });
        }
        s.len += line.len() as u64;
        s.seq = record.seq;
        s.head = hash;
        Ok(line)
    }

    /// Signs the head, appends the checkpoint to the log and then to the witness.
    fn write_checkpoint(&self, s: &mut State, time_ms: i64) -> Result<u64, AuditError> {
        let record = self.checkpoint_record(s.seq, &s.head, time_ms);
        // The log first: a witness line the log lacks would read as a deleted tail.
        let line = self.write(s, &record)?;
        s.since_checkpoint = 0;
        self.copy_to_witness(s, &line)?;
        Ok(s.seq)
    }

    /// The checkpoint record that signs record `covers`, whose hash is `head`.
    fn checkpoint_record(&self, covers: u64, head: &[u8; 32], time_ms: i64) -> Record {
        let signature = self.key.sign(&checkpoint_message(covers, head));
        let head = to_hex(head);
        Record::new(
            covers + 1,
            head.clone(),
            &Event::new(EventKind::Checkpoint, time_ms),
            Some(Checkpoint {
                covers,
                head,
                key_id: self.key.key_id(),
                sig: to_hex(&signature.to_bytes()),
            }),
        )
    }

    /// Appends a checkpoint line (already in the log) to the witness, synced; on failure
    /// nothing of it is left in the witness (best effort).
    fn copy_to_witness(&self, s: &mut State, line: &[u8]) -> Result<(), AuditError> {
        let (Some(witness), Some(path)) = (&mut s.witness, &self.settings.witness) else {
            return Ok(());
        };
        let before = witness.metadata().map(|m| m.len());
        let written = witness.write_all(line).and_then(|()| witness.sync_data());
        if let Err(source) = written {
            if let Ok(before) = before {
                let _ = witness.set_len(before);
            }
            return Err(AuditError::Io {
                path: path.clone(),
                source,
            });
        }
        Ok(())
    }
}

/// Makes a rename in `file`'s directory durable.
fn sync_dir(file: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(())
    }
}
