//! `sluice audit`: makes the key pair that signs audit checkpoints, and verifies an audit log
//! offline with the public key.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use sluice::audit::{self, Fingerprint, VerifyError, VerifyOptions};

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
    /// Verify an audit log: exit 0 if intact, 1 if it was altered (or signed by a key other
    /// than the expected one), 2 if it cannot be read. Prints the fingerprint of the key that
    /// signed it.
    Verify {
        /// The audit log.
        log: PathBuf,
        /// The public key file (`sluice audit keygen --public`).
        #[arg(long)]
        key: PathBuf,
        /// The witness file: a copy of every checkpoint, kept apart from the log. With it, a
        /// deleted tail is found, and the log must hold exactly the witness's checkpoints from
        /// its start on.
        #[arg(long)]
        witness: Option<PathBuf>,
        /// The fingerprint the key must have (`sha256:` and 64 hex digits, as `verify` and
        /// `keygen` print it): a log rebuilt under another key, with its own public key file,
        /// then fails.
        #[arg(long, value_name = "FINGERPRINT")]
        expect_key: Option<Fingerprint>,
        /// Accept records after the last checkpoint (and a torn last line, and a last
        /// checkpoint not yet in the witness): for a log that is still being written.
        #[arg(long)]
        allow_open_tail: bool,
        /// Accept a log that starts at a checkpoint no signed `pruned` record names (its
        /// head may have been deleted, or it was pruned by an earlier sluice); said loudly.
        #[arg(long)]
        allow_pruned: bool,
    },
}

pub fn run(command: AuditCommand) -> anyhow::Result<ExitCode> {
    match command {
        AuditCommand::Keygen { secret, public } => keygen(&secret, &public),
        AuditCommand::Verify {
            log,
            key,
            witness,
            expect_key,
            allow_open_tail,
            allow_pruned,
        } => {
            let options = VerifyOptions {
                witness: witness.as_deref(),
                allow_open_tail,
                allow_pruned,
                expect_key,
            };
            verify(&log, &key, &options)
        }
    }
}

fn keygen(secret: &Path, public: &Path) -> anyhow::Result<ExitCode> {
    if same_file_name(secret, public) {
        anyhow::bail!(
            "--secret and --public name the same file ({}): give the secret and the public \
             key two different paths",
            secret.display()
        );
    }
    let key = audit::generate(secret, public)?;
    crate::print_once(&format!(
        "wrote the secret key to {} (keep it apart from the log) and the public key to {} \
         (key {})\n",
        secret.display(),
        public.display(),
        key.fingerprint()
    ))
}

/// Whether `a` and `b` name the same file, existing or not: the same path, or the same name
/// in the same directory reached two ways (`e.key`, `./e.key`).
fn same_file_name(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    let dir = |p: &Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        parent.unwrap_or(Path::new(".")).canonicalize().ok()
    };
    a.file_name() == b.file_name()
        && a.file_name().is_some()
        && dir(a).is_some()
        && dir(a) == dir(b)
}

fn verify(log: &Path, key: &Path, options: &VerifyOptions<'_>) -> anyhow::Result<ExitCode> {
    let key = audit::load_verifying(key)?;
    let signer = format!("key: {}\n", Fingerprint::of(&key));
    let report = match audit::verify_with(log, &key, options) {
        Ok(report) => report,
        Err(e @ (VerifyError::Tampered(_) | VerifyError::UnexpectedKey { .. })) => {
            crate::print_once(&format!("tampered: {e}\n{signer}"))?;
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(e.into()),
    };
    let mut out = format!(
        "ok: {}, {}, records {}..={}",
        crate::count(report.records, "record"),
        crate::count(report.checkpoints, "checkpoint"),
        report.first_seq,
        report.last_seq
    );
    // A start nothing proves is said once, below, as what it is.
    if let (Some(first), false) = (report.pruned_before, report.unproven_start) {
        out.push_str(&format!(
            " (records before {first} pruned, as a signed `pruned` record says)"
        ));
    }
    if report.unsigned_tail > 0 {
        out.push_str(&format!(
            "; the last {} not yet under a checkpoint",
            match report.unsigned_tail {
                1 => "record is".to_owned(),
                n => format!("{n} records are"),
            }
        ));
    }
    if let Some(n) = report.witnessed {
        out.push_str(&format!(
            "; {} found in the log",
            crate::count(n, "witness checkpoint")
        ));
    }
    if report.witness_behind {
        out.push_str(&format!(
            "; its last checkpoint (record {}) is not yet in the witness",
            report.last_seq - report.unsigned_tail
        ));
    }
    out.push('\n');
    if let (true, Some(first)) = (report.unproven_start, report.pruned_before) {
        out.push_str(&format!(
            "WARNING: the log starts at record {first}; records before it are missing and \
             nothing in the log says retention pruned them: they may have been deleted \
             (accepted because of --allow-pruned)\n"
        ));
    }
    for epoch in &report.witness_epochs {
        out.push_str(&format!(
            "WARNING: record {epoch} starts a new witness epoch: the witness was found missing, \
             emptied or cut short and was started afresh on an operator's word, so it vouches \
             only for the log after it — a cut of the log's tail before then cannot be seen\n"
        ));
    }
    out.push_str(&signer);
    crate::print_once(&out)?;
    Ok(ExitCode::SUCCESS)
}
