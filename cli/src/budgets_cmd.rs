//! `sluice budgets`: what each tenant has spent in the current day and month, against its
//! budgets, and what is left.
//!
//! Use is read from the host's journal (opened, never created: `Journal::open_given`, a file or a group's database).
//! With the configuration file, every tenant's budgets are shown in its time zone's current
//! periods, with what is left and when each resets; without it, every period the journal
//! holds is listed as recorded. Tenants' names come from the journal and the file, so each
//! is printed through `sluice::printable`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use sluice::budget::{BudgetConfig, Budgets, Measure, Standing};
use sluice::clock::SystemClock;
use sluice::config::SluiceConfig;
use sluice::journal::Journal;
use sluice::printable::printable;

/// `sluice budgets`.
#[derive(Debug, Args)]
pub struct BudgetsArgs {
    /// The host's journal: its file, or the group's database (`postgres://…`).
    #[arg(long)]
    journal: PathBuf,
    /// The host's configuration file: show each tenant's budgets and what is left.
    #[arg(long)]
    config: Option<PathBuf>,
}

/// Appends a line to the report.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

pub fn run(args: BudgetsArgs) -> anyhow::Result<ExitCode> {
    let journal = Arc::new(Journal::open_given(&args.journal)?);
    let Some(file) = args.config else {
        return crate::print_once(&recorded(&journal)?);
    };
    let config = match SluiceConfig::from_file(&file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let tenants: BTreeSet<String> = journal
        .budget_use()
        .all()?
        .into_iter()
        .map(|u| u.tenant)
        .chain(config.budgets.tenants.keys().cloned())
        .chain(config.admission.tenants.assign.keys().cloned())
        .collect();
    let budgets = Budgets::new(
        config.budgets.clone(),
        config.admission.tenants.clone(),
        journal,
        Arc::new(SystemClock),
    );
    let mut out = String::new();
    outln!(
        out,
        "budgets in {} ({}), amounts of money in {}",
        printable(config.budgets.calendar.name()),
        crate::count(tenants.len() as u64, "tenant"),
        config.budgets.currency
    );
    for tenant in &tenants {
        outln!(out, "tenant {}", printable(tenant));
        for s in budgets.standing(tenant)? {
            if s.limit.is_some() || s.used > 0 {
                outln!(out, "  {}", line(&s, &config.budgets));
            }
        }
    }
    crate::print_once(&out)
}

/// One budget of a tenant: `spend_micros_per_month 2026-03: 0.015000 of 0.010000 USD used,
/// spent; resets 2026-04-01 00:00 +02:00`.
fn line(s: &Standing, config: &BudgetConfig) -> String {
    let amount = |n: u64| amount(s.budget.measure, n, config);
    let resets = config.calendar.local_time(s.period.resets_ms);
    let head = format!("{} {}", s.budget, s.period.label);
    match (s.limit, s.left()) {
        (Some(limit), Some(0)) => format!(
            "{head}: {} of {} used, spent: calls refused until {resets}",
            amount(s.used),
            amount(limit)
        ),
        (Some(limit), Some(left)) => format!(
            "{head}: {} of {} used ({}%), {} left; resets {resets}",
            amount(s.used),
            amount(limit),
            u128::from(s.used) * 100 / u128::from(limit.max(1)),
            amount(left)
        ),
        _ => format!("{head}: {} used, no budget", amount(s.used)),
    }
}

/// `n` of `measure`: money in the currency's units with six decimals.
fn amount(measure: Measure, n: u64, config: &BudgetConfig) -> String {
    match measure {
        Measure::SpendMicros => {
            format!("{}.{:06} {}", n / 1_000_000, n % 1_000_000, config.currency)
        }
        Measure::Requests | Measure::Tokens => n.to_string(),
    }
}

/// Every period the journal holds, as recorded.
fn recorded(journal: &Journal) -> anyhow::Result<String> {
    let uses = journal.budget_use().all()?;
    let mut out = String::new();
    outln!(
        out,
        "{} recorded (give --config to see budgets and what is left)",
        crate::count(uses.len() as u64, "period")
    );
    for u in uses {
        outln!(
            out,
            "tenant {} {} {}: {} requests, {} tokens, {} micro-units spent",
            printable(&u.tenant),
            u.window,
            printable(&u.period),
            u.amounts.requests,
            u.amounts.tokens,
            u.amounts.spend_micros
        );
    }
    Ok(out)
}
