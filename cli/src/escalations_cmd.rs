//! `sluice escalations`: the operator's side of escalations — list the open cases, show one
//! (sanitized; the body only on an explicit, recorded request), and resolve one with a
//! decision. Decisions are written to the journal; the host carries them out and copies them
//! into the audit log (`Writes::apply_decisions`, and at every start).
//!
//! These commands never create a journal: they open the host's (`Journal::open_given`: its file, or the group's database),
//! and refuse a missing, empty, foreign or damaged file without writing to it. Everything
//! printed from the journal is escaped (`sluice::printable`), because an old or edited
//! journal may hold names and notes that would print as forged lines.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use sluice::clock::{Clock, SystemClock};
use sluice::journal::Journal;
use sluice::journal::escalations::{Choice, Decision, Escalation};
use sluice::journal::text::check_operator;
use sluice::printable::{printable, printable_json};

/// Escalation commands.
#[derive(Debug, Subcommand)]
pub enum EscalationsCommand {
    /// List escalations: the open ones, or all with `--all`.
    List {
        /// The host's journal: its file, or the group's database (`postgres://…`).
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
        /// The host's journal: its file, or the group's database (`postgres://…`).
        #[arg(long)]
        journal: PathBuf,
        /// Also print the action's body (control characters escaped). The request is recorded
        /// (and audited) first.
        #[arg(long, requires = "by")]
        body: bool,
        /// Who asks (with `--body` only, and required with it): one line of visible
        /// characters, at most 256 bytes.
        #[arg(long, requires = "body")]
        by: Option<String>,
    },
    /// Resolve an escalation with one of its options.
    Resolve {
        /// The escalation's id.
        id: i64,
        /// The host's journal: its file, or the group's database (`postgres://…`).
        #[arg(long)]
        journal: PathBuf,
        /// The option: query-existing, retry-same-key, cancel, send-as-new (uncertain
        /// writes); continue-access, cancel (spent time budgets); wait, raise-quota,
        /// change-plan, cancel (spent quotas); wait, raise-budget, cancel (spent budgets).
        #[arg(long)]
        option: String,
        /// Who decides: one line of visible characters, at most 256 bytes.
        #[arg(long)]
        by: String,
        /// For query-existing only: an operation id found at the provider.
        #[arg(long)]
        operation_id: Option<String>,
        /// Why, in your words (one line).
        #[arg(long, default_value = "")]
        note: String,
    },
}

pub fn run(command: EscalationsCommand) -> anyhow::Result<ExitCode> {
    match command {
        EscalationsCommand::List { journal, all } => list(&Journal::open_given(&journal)?, all),
        EscalationsCommand::Show {
            id,
            journal,
            body,
            by,
        } => {
            // The name is checked as `resolve` checks its own, before the journal is opened;
            // clap has already refused `--by` without `--body` and `--body` without `--by`.
            if let Some(by) = &by {
                check_operator(by)?;
            }
            show(
                &Journal::open_given(&journal)?,
                id,
                body.then_some(by).flatten(),
            )
        }
        EscalationsCommand::Resolve {
            id,
            journal,
            option,
            by,
            operation_id,
            note,
        } => {
            let Some(choice) = Choice::parse(&option) else {
                let names: Vec<&str> = Choice::ALL.iter().map(|c| c.name()).collect();
                eprintln!(
                    "error: `{}` is not an option: use one of {}",
                    printable(&option),
                    names.join(", ")
                );
                return Ok(ExitCode::from(2));
            };
            let decision = Decision {
                choice,
                decided_by: by,
                operation_id,
                note,
            };
            resolve(&Journal::open_given(&journal)?, id, &decision)
        }
    }
}

/// The case's JSON on one line, escaped; a case that is not JSON (an edited journal) is shown
/// escaped as text, and said to be so.
fn case_text(e: &Escalation) -> String {
    match serde_json::from_str::<serde_json::Value>(&e.case_json) {
        Ok(case) => printable_json(&case.to_string()).into_owned(),
        Err(_) => format!("(not JSON) {}", printable(&e.case_json)),
    }
}

fn list(journal: &Journal, all: bool) -> anyhow::Result<ExitCode> {
    let mut out = String::new();
    let escalations = journal.escalations().list(!all)?;
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
            printable(&e.task),
            printable(case["action"].as_str().unwrap_or("-")),
            printable(case["reason"].as_str().unwrap_or(""))
        ));
    }
    crate::print_once(&out)
}

fn show(journal: &Journal, id: i64, body_for: Option<String>) -> anyhow::Result<ExitCode> {
    let e = journal.escalations().get(id)?;
    let mut out = format!(
        "escalation {id} ({}), {}\n{}\n",
        e.kind.name(),
        if e.resolved_ms.is_some() {
            "resolved"
        } else {
            "open"
        },
        case_text(&e)
    );
    for a in journal
        .escalations()
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
        let body = journal
            .escalations()
            .disclose_body(id, &by, SystemClock.wall_ms())?;
        eprintln!(
            "the body was shown to {}; this is recorded and goes into the audit log",
            printable(&by)
        );
        // Escaped like the rest: line breaks and control characters print as `\n`, `\u{1b}`.
        out.push_str("body:\n");
        out.push_str(&printable(&String::from_utf8_lossy(&body)));
        out.push('\n');
    }
    crate::print_once(&out)
}

fn resolve(journal: &Journal, id: i64, decision: &Decision) -> anyhow::Result<ExitCode> {
    let approval = journal
        .escalations()
        .resolve(id, decision, SystemClock.wall_ms())?;
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
