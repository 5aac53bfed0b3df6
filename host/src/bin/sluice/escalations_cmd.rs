//! `sluice escalations`: the operator's side of escalations — list the open cases, show one
//! (sanitized; the body only on an explicit, recorded request), and resolve one with a
//! decision. Decisions are written to the journal; the host carries them out and copies them
//! into the audit log (`Writes::apply_decisions`, and at every start).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use sluice::clock::{Clock, SystemClock};
use sluice::journal::Journal;
use sluice::journal::escalations::{Choice, Decision};

/// Escalation commands.
#[derive(Debug, Subcommand)]
pub enum EscalationsCommand {
    /// List escalations: the open ones, or all with `--all`.
    List {
        /// The host's journal (SQLite).
        #[arg(long)]
        journal: PathBuf,
        /// Include resolved escalations.
        #[arg(long)]
        all: bool,
    },
    /// Show one escalation's case: goal, action, endpoint, attempts, limits, spent budget,
    /// key, operation id, the status query, and the options.
    Show {
        /// The escalation's id.
        id: i64,
        /// The host's journal (SQLite).
        #[arg(long)]
        journal: PathBuf,
        /// Also print the action's raw body. The request is recorded (and audited) first.
        #[arg(long, requires = "by")]
        body: bool,
        /// Who asks (required with `--body`).
        #[arg(long)]
        by: Option<String>,
    },
    /// Resolve an escalation with one of its options.
    Resolve {
        /// The escalation's id.
        id: i64,
        /// The host's journal (SQLite).
        #[arg(long)]
        journal: PathBuf,
        /// The option: query-existing, retry-same-key, cancel, send-as-new (uncertain
        /// writes); continue-access, cancel (spent time budgets).
        #[arg(long)]
        option: String,
        /// Who decides.
        #[arg(long)]
        by: String,
        /// For query-existing: an operation id found at the provider.
        #[arg(long)]
        operation_id: Option<String>,
        /// Why, in your words.
        #[arg(long, default_value = "")]
        note: String,
    },
}

pub fn run(command: EscalationsCommand) -> anyhow::Result<ExitCode> {
    match command {
        EscalationsCommand::List { journal, all } => list(&open(&journal)?, all),
        EscalationsCommand::Show {
            id,
            journal,
            body,
            by,
        } => show(&open(&journal)?, id, body.then_some(by).flatten()),
        EscalationsCommand::Resolve {
            id,
            journal,
            option,
            by,
            operation_id,
            note,
        } => {
            let Some(choice) = Choice::parse(&option) else {
                eprintln!(
                    "error: `{option}` is not an option: use query-existing, retry-same-key, \
                     cancel, send-as-new or continue-access"
                );
                return Ok(ExitCode::from(2));
            };
            let decision = Decision {
                choice,
                decided_by: by,
                operation_id,
                note,
            };
            resolve(&open(&journal)?, id, &decision)
        }
    }
}

/// Opens an existing journal; a missing file is a mistake, not a new journal.
fn open(path: &Path) -> anyhow::Result<Journal> {
    if !path.is_file() {
        anyhow::bail!(
            "no journal at {}: pass the --journal file the host writes",
            path.display()
        );
    }
    Ok(Journal::open(path)?)
}

fn list(journal: &Journal, all: bool) -> anyhow::Result<ExitCode> {
    let mut out = String::new();
    let escalations = journal.escalations(!all)?;
    if escalations.is_empty() {
        out.push_str(if all {
            "no escalations\n"
        } else {
            "no open escalations\n"
        });
    }
    for e in escalations {
        let case: serde_json::Value = serde_json::from_str(&e.case_json).unwrap_or_default();
        let state = if e.resolved_ms.is_some() {
            "resolved"
        } else {
            "open"
        };
        out.push_str(&format!(
            "{:>5}  {:<8}  {:<15}  {}/{}  {}\n",
            e.id,
            state,
            e.kind.name(),
            e.task,
            case["action"].as_str().unwrap_or("-"),
            case["reason"].as_str().unwrap_or("")
        ));
    }
    crate::print_once(&out)
}

fn show(journal: &Journal, id: i64, body_for: Option<String>) -> anyhow::Result<ExitCode> {
    let e = journal.escalation(id)?;
    let mut out = format!(
        "escalation {id} ({}), {}\n{}\n",
        e.kind.name(),
        if e.resolved_ms.is_some() {
            "resolved"
        } else {
            "open"
        },
        e.case_json
    );
    for a in journal
        .approvals(&e.task)?
        .into_iter()
        .filter(|a| a.escalation_id == id)
    {
        out.push_str(&format!(
            "decision: {}{}\n",
            a.summary(),
            a.note_after(": ")
        ));
    }
    if let Some(by) = body_for {
        let body = journal.disclose_body(id, &by, SystemClock.wall_ms())?;
        eprintln!("the body was shown to {by}; this is recorded and goes into the audit log");
        out.push_str("body:\n");
        out.push_str(&String::from_utf8_lossy(&body));
        out.push('\n');
    }
    crate::print_once(&out)
}

fn resolve(journal: &Journal, id: i64, decision: &Decision) -> anyhow::Result<ExitCode> {
    let approval = journal.resolve(id, decision, SystemClock.wall_ms())?;
    let next = match decision.choice {
        Choice::Cancel | Choice::ChangePlan => "applied: nothing more is sent for it",
        _ => "recorded: the host carries it out (at once if it runs, else at its next start)",
    };
    let warning = if decision.choice.may_duplicate() {
        "\nwarning: send-as-new may create a second side effect"
    } else {
        ""
    };
    crate::print_once(&format!(
        "escalation {id}: {} {next}{warning}\n",
        approval.summary()
    ))
}
