//! `sluice audit`: makes the key pair that signs audit checkpoints, and verifies an audit log
//! offline with the public key.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use sluice::audit::{self, VerifyError};

/// Audit log commands.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Make a key pair for signing audit checkpoints. Keep the secret key apart from the log.
    Keygen {
        /// Where to write the secret key (created with mode 0600; never overwritten).
        #[arg(long)]
        secret: PathBuf,
        /// Where to write the public key, which is all `verify` needs.
        #[arg(long)]
        public: PathBuf,
    },
    /// Verify an audit log: exit 0 if intact, 1 if it was altered, 2 if it cannot be read.
    Verify {
        /// The audit log.
        log: PathBuf,
        /// The public key file (`sluice audit keygen --public`).
        #[arg(long)]
        key: PathBuf,
        /// The witness file: a copy of every checkpoint, kept apart from the log. With it, a
        /// deleted tail is found.
        #[arg(long)]
        witness: Option<PathBuf>,
        /// Accept records after the last checkpoint (and a torn last line): for a log that is
        /// still being written.
        #[arg(long)]
        allow_open_tail: bool,
    },
}

pub fn run(command: AuditCommand) -> anyhow::Result<ExitCode> {
    match command {
        AuditCommand::Keygen { secret, public } => keygen(&secret, &public),
        AuditCommand::Verify {
            log,
            key,
            witness,
            allow_open_tail,
        } => verify(&log, &key, witness.as_deref(), allow_open_tail),
    }
}

fn keygen(secret: &Path, public: &Path) -> anyhow::Result<ExitCode> {
    let key = audit::generate(secret, public)?;
    crate::print_once(&format!(
        "wrote the secret key to {} (keep it apart from the log) and the public key to {} \
         (key id {})\n",
        secret.display(),
        public.display(),
        key.key_id()
    ))
}

fn verify(
    log: &Path,
    key: &Path,
    witness: Option<&Path>,
    allow_open_tail: bool,
) -> anyhow::Result<ExitCode> {
    let key = audit::load_verifying(key)?;
    let report = match audit::verify(log, &key, witness, allow_open_tail) {
        Ok(report) => report,
        Err(VerifyError::Tampered(finding)) => {
            crate::print_once(&format!("tampered: {finding}\n"))?;
            return Ok(ExitCode::from(1));
        }
        Err(e @ VerifyError::Unreadable { .. }) => return Err(e.into()),
    };
    let mut out = format!(
        "ok: {} records, {} checkpoints, records {}..={}",
        report.records, report.checkpoints, report.first_seq, report.last_seq
    );
    if let Some(first) = report.pruned_before {
        out.push_str(&format!(" (records before {first} pruned)"));
    }
    if report.unsigned_tail > 0 {
        out.push_str(&format!(
            "; the last {} are not yet under a checkpoint",
            report.unsigned_tail
        ));
    }
    if let Some(n) = report.witnessed {
        out.push_str(&format!("; {n} witness checkpoints found in the log"));
    }
    out.push('\n');
    crate::print_once(&out)?;
    Ok(ExitCode::SUCCESS)
}
