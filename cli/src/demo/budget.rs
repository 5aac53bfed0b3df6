//! The noisy tenant's spend budget: the demo prices the model's tokens and gives `noisy` a
//! month's budget it reaches within the run. From then on each of its calls is refused at
//! once, nothing sent (its agent then stops: a refused agent that asked again at once would
//! spin on a paused clock), while the other tenants go on.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde::Serialize;
use sluice::budget::{Budget, Budgets, Measure, Window};

use super::workload::NOISY;

/// The noisy tenant's budget for the month, in micro-units of USD: 0.10 USD.
pub const NOISY_SPEND_MICROS_PER_MONTH: u64 = 100_000;

/// The budgets and prices the demo's host runs with (TOML).
pub fn config() -> String {
    format!(
        "[budgets]\ncurrency = \"USD\"\n\
         [tenants.budgets.{NOISY}]\nspend_micros_per_month = {NOISY_SPEND_MICROS_PER_MONTH}\n\
         [providers.openai.prices.\"gpt-4o\"]\n\
         input_micros_per_million = 2500000\noutput_micros_per_million = 10000000\n"
    )
}

/// What the budget refused, as the agents saw it.
#[derive(Debug, Default)]
pub struct Refusals {
    /// Calls refused because the budget was spent.
    pub calls: usize,
    /// When the first was, since the run started.
    pub first: Option<Duration>,
}

/// Shared by the agents of one run.
pub type Shared = Rc<RefCell<Refusals>>;

/// The budget after the run.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetRun {
    /// The tenant.
    pub tenant: String,
    /// The budget (`spend_micros_per_month`).
    pub budget: String,
    /// Its limit, in micro-units.
    pub limit_micros: u64,
    /// What the tenant spent in the month, corrected to the usage the answers reported.
    pub spent_micros: u64,
    /// When its first call was refused, seconds into the run.
    pub reached_at_s: Option<f64>,
    /// Calls refused at once because it was spent.
    pub refused_calls: usize,
}

/// The noisy tenant's budget after the run, read from the host's journal.
pub fn after(budgets: &Budgets, refusals: &Refusals) -> anyhow::Result<BudgetRun> {
    let budget = Budget::new(Measure::SpendMicros, Window::Month);
    let standing = budgets.standing(NOISY)?;
    let month = standing
        .iter()
        .find(|s| s.budget == budget)
        .ok_or_else(|| anyhow::anyhow!("no monthly spend budget"))?;
    Ok(BudgetRun {
        tenant: NOISY.to_owned(),
        budget: budget.key(),
        limit_micros: month.limit.unwrap_or(0),
        spent_micros: month.used,
        reached_at_s: refusals.first.map(|d| d.as_secs_f64()),
        refused_calls: refusals.calls,
    })
}

/// The report's line about it.
pub fn render(b: &BudgetRun) -> String {
    let usd = |m: u64| format!("{}.{:06} USD", m / 1_000_000, m % 1_000_000);
    let reached = b.reached_at_s.map_or_else(
        || "not reached within the run".to_owned(),
        |s| format!("reached at {s:.0} s"),
    );
    format!(
        "budget: tenant {}'s {} of {} {reached} (its use with the estimates of its calls in \
         flight); {} refused at once, nothing sent; spent {} once corrected to the usage \
         reported",
        b.tenant,
        b.budget,
        usd(b.limit_micros),
        crate::count(b.refused_calls as u64, "call"),
        usd(b.spent_micros),
    )
}
