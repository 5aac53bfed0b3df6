//! Where a demo run keeps its state, and what it leaves behind.
//!
//! The state is the journal (which holds the demo's payment bodies), the audit log, its
//! witness and its public key. It goes in the directory `--state-dir` names, which is kept,
//! or else in a private temporary directory (`sluice-demo-*`, `0700`), which is removed when
//! the run ends or is stopped by SIGINT, SIGTERM or SIGHUP. Files are `0600` whatever the
//! umask. A `--state-dir` that already exists must be the user's and writable by no one else,
//! the way ssh treats its keys: in a directory another user can write, they could replace
//! `audit.pub` or the witness, and what verifies the log would be theirs.
//!
//! The audit signing key is made in memory and handed to the writer as a value; it never
//! touches the disk unless `--keep-audit-key` asks for it. So a run that is killed outright
//! (SIGKILL, a power cut), when nothing can clean up, leaves at most the temporary directory
//! with the journal, the log, the witness and the public key — never a key that could
//! re-sign the log.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use sluice::audit::{AuditKey, AuditLog, AuditSettings, Fingerprint, VerifyingKey};
use sluice::clock::{Clock, TokioClock};
use sluice::private_fs;

/// The directory a run keeps its state in.
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    /// The temporary directory, when no `--state-dir` was given.
    temp: Option<tempfile::TempDir>,
}

impl StateDir {
    /// `requested` (a new or empty directory, created `0700` if missing), or a new private
    /// temporary directory.
    ///
    /// # Errors
    /// When the directory cannot be made or read, is not the user's or can be written by
    /// others, or `requested` is not empty.
    pub fn new(requested: Option<&Path>) -> anyhow::Result<Self> {
        let Some(dir) = requested else {
            let mut builder = tempfile::Builder::new();
            builder.prefix("sluice-demo-");
            #[cfg(unix)]
            builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(
                private_fs::DIR_MODE,
            ));
            let temp = builder
                .tempdir()
                .context("make a temporary state directory")?;
            return Ok(Self {
                path: temp.path().to_owned(),
                temp: Some(temp),
            });
        };
        private_fs::create_dir_all(dir)
            .with_context(|| format!("create the state directory {}", dir.display()))?;
        private_fs::check_private_dir(dir).context("the state directory")?;
        // A journal from an earlier run would answer this run's actions as done: never mix
        // runs, never overwrite one.
        let used = std::fs::read_dir(dir)
            .with_context(|| format!("read the state directory {}", dir.display()))?
            .next()
            .is_some();
        if used {
            anyhow::bail!(
                "the state directory {} is not empty (an earlier run's journal and audit \
                 log?): give a new or empty directory",
                dir.display()
            );
        }
        Ok(Self {
            path: dir.to_owned(),
            temp: None,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it is kept after the run.
    pub fn is_kept(&self) -> bool {
        self.temp.is_none()
    }

    /// Ends the run's use of it: a temporary directory is removed.
    ///
    /// # Errors
    /// When a temporary directory cannot be removed (it is named).
    pub fn finish(self) -> anyhow::Result<()> {
        if let Some(temp) = self.temp {
            let path = temp.path().to_owned();
            temp.close()
                .with_context(|| format!("remove the temporary state {}", path.display()))?;
        }
        Ok(())
    }
}

/// The run's audit log, signed by a key that lives in memory.
#[derive(Debug)]
pub struct Ledger {
    /// The writer, shared by the host's parts.
    pub audit: Arc<AuditLog>,
    /// The public key, to verify the log at the end.
    pub public: VerifyingKey,
    /// Its fingerprint.
    pub fingerprint: Fingerprint,
    /// The log file.
    pub log: PathBuf,
    /// The witness file.
    pub witness: PathBuf,
}

impl Ledger {
    /// Opens `audit.log` (and `audit.witness`) in `dir`, signed by a key made now and held in
    /// memory; writes its public half to `audit.pub`, and its secret half to `keep_key` only
    /// when that is given.
    ///
    /// # Errors
    /// When a file cannot be written or the log cannot be opened.
    pub fn open(dir: &Path, keep_key: Option<&Path>) -> anyhow::Result<Self> {
        let key = AuditKey::generate()?;
        key.write_public(&dir.join("audit.pub"))?;
        if let Some(path) = keep_key {
            key.write_secret(path)?;
        }
        let (public, fingerprint) = (key.verifying_key(), key.fingerprint());
        let (log, witness) = (dir.join("audit.log"), dir.join("audit.witness"));
        let settings = AuditSettings {
            witness: Some(witness.clone()),
            ..AuditSettings::default()
        };
        let audit = AuditLog::open(&log, key, settings, TokioClock.wall_ms())
            .with_context(|| format!("open the audit log in {}", dir.display()))?;
        Ok(Self {
            audit: Arc::new(audit),
            public,
            fingerprint,
            log,
            witness,
        })
    }

    /// Closes the log with a checkpoint, so that what a stopped run kept verifies as a closed
    /// log.
    ///
    /// # Errors
    /// When the checkpoint cannot be written.
    pub fn close(self) -> anyhow::Result<()> {
        let now = TokioClock.wall_ms();
        match Arc::try_unwrap(self.audit) {
            Ok(log) => log.close(now)?,
            Err(shared) => shared.checkpoint(now)?,
        };
        Ok(())
    }
}
