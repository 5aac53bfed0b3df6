//! Spend budgets per tenant: requests, tokens and spend per calendar day and month.
//!
//! Admission's quotas ([`crate::admission`]) are rolling windows that *pace*: a request
//! over the per-minute quota waits its turn. A budget is a different promise, the one a
//! platform that resells model access makes to its customers: this tenant may spend this
//! much this month. So a budget follows the calendar of a configured time zone
//! ([`Calendar`]: a month resets at midnight on the first, where the books are kept), and a
//! spent budget is not a wait in the queue — the call is refused at once, with the tenant,
//! the budget and when it resets ([`BudgetSpent`]).
//!
//! **Prices are data.** Spend is counted in integer micro-units of one currency, from the
//! price table of the configuration ([`Price`], per provider and model), because prices
//! change more often than plugins do. A call's model is the scope its plugin plans it into
//! (`model:gpt-4o`); a model without a price costs nothing (and its tokens still count).
//!
//! **Estimated, then corrected.** A call is charged when it is admitted — one request, the
//! tokens its plugin's plan estimates, and their price — and the charge is corrected to the
//! usage the answer reports when it ends, as billed: its input and output tokens, not the
//! reservation a rate limit counts ([`Reservation::settle`]); a call that sent nothing
//! gives its charge back ([`Reservation::release`]); a call that was sent but whose usage is
//! unknown keeps its estimate. A call counts once, however many attempts it took: a
//! provider bills what it answered, not the 429s before. A call is refused once a budget is
//! spent (its use at or above the limit); the call that crosses the limit is let through,
//! as its use is known only at its end.
//!
//! **Durable.** Use is kept in the journal, per tenant and period ([`PeriodUse`]),
//! committed at each charge and correction: a restarted host keeps what every tenant spent
//! this month. Hosts sharing a journal in PostgreSQL share it: a call's check and charge
//! are one transaction ([`BudgetUse::charge`]), so the group lets one call cross a
//! limit, as one host does.
//!
//! **Watched.** As a tenant's use crosses a threshold of a budget (80% and 100% by
//! default), a `warn` event is logged and [`crate::observe::BUDGET_THRESHOLDS`] counts it;
//! every change sets [`crate::observe::BUDGET_USED_RATIO`], and every refusal counts in
//! [`crate::observe::BUDGET_REFUSALS`].

mod config;
mod store;
mod window;

use std::sync::{Arc, Mutex, PoisonError};

pub use config::{
    Budget, BudgetConfig, BudgetLimits, CacheUse, DEFAULT_THRESHOLDS_PERCENT, Measure, Price,
    Unpriced, model_family,
};
pub use store::{BudgetUse, PeriodUse};
pub use window::{Calendar, Period, UnknownTimeZone, Window};

pub use crate::admission::Usage;
use crate::admission::config::TenantsConfig;
use crate::clock::Clock;
use crate::journal::{Journal, JournalError};
use crate::observe::{BUDGET_REFUSALS, BUDGET_THRESHOLDS, BUDGET_USED_RATIO};

/// What counts against budgets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Amounts {
    /// Calls.
    pub requests: u64,
    /// Tokens of any kind.
    pub tokens: u64,
    /// Spend, in micro-units of the currency.
    pub spend_micros: u64,
}

impl Amounts {
    /// These amounts with `add` added and `remove` taken, never below zero: what the
    /// journal's change of a row leaves ([`BudgetUse::change`]).
    fn changed(&self, add: &Self, remove: &Self) -> Self {
        let one = |was: u64, add: u64, remove: u64| was.saturating_add(add).saturating_sub(remove);
        Self {
            requests: one(self.requests, add.requests, remove.requests),
            tokens: one(self.tokens, add.tokens, remove.tokens),
            spend_micros: one(self.spend_micros, add.spend_micros, remove.spend_micros),
        }
    }
}

/// A call refused because one of its tenant's budgets is spent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tenant `{}` has spent its budget {budget} ({used} of {limit}): it resets at {resets_at}",
    crate::printable::printable(.tenant)
)]
pub struct BudgetSpent {
    /// The tenant.
    pub tenant: String,
    /// The budget that is spent.
    pub budget: Budget,
    /// Its limit.
    pub limit: u64,
    /// What the tenant has used of it.
    pub used: u64,
    /// When its period ends and it is whole again, in milliseconds since the Unix epoch.
    pub resets_at_ms: i64,
    /// The same instant in the budgets' time zone, for people: `2026-04-01 00:00 +02:00`.
    pub resets_at: String,
}

/// A call refused before it was sent because its cost cannot be priced while its tenant
/// has a spend budget: budgets fail closed.
///
/// - It names no model sluice can find (`model` is `None`) and is estimated to use tokens:
///   refused whatever `budgets.unpriced` says, since no price could apply.
/// - Its model has no price, and the configuration says to refuse such calls
///   (`budgets.unpriced = "refuse"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpricedModel {
    /// The tenant.
    pub tenant: String,
    /// The provider.
    pub provider: String,
    /// The model without a price; `None` when the call names no model.
    pub model: Option<String>,
}

impl std::fmt::Display for UnpricedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (tenant, provider) = (
            crate::printable::printable(&self.tenant),
            crate::printable::printable(&self.provider),
        );
        match &self.model {
            Some(model) => {
                let model = crate::printable::printable(model);
                write!(
                    f,
                    "`{model}` has no price at provider `{provider}`, and tenant `{tenant}` has \
                     a spend budget: add [providers.{provider}.prices.\"{model}\"] (or its \
                     family's) to the configuration"
                )
            }
            None => write!(
                f,
                "no model was found in the request, so its cost at provider `{provider}` \
                 cannot be estimated, and tenant `{tenant}` has a spend budget: name the \
                 model in the body's `model` field (or the provider's own place for it)"
            ),
        }
    }
}

impl std::error::Error for UnpricedModel {}

/// Why a call could not be charged.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    /// A budget is spent: the call is refused.
    #[error(transparent)]
    Spent(#[from] BudgetSpent),
    /// The call's model has no price, and unpriced calls are refused.
    #[error(transparent)]
    Unpriced(#[from] UnpricedModel),
    /// The journal could not record the charge: the call is not sent uncounted.
    #[error("the budget's use could not be recorded: {0}")]
    Ledger(#[from] JournalError),
}

/// What a call is charged for: its tenant, its provider and model (for the price), and the
/// usage its plan estimates.
#[derive(Debug, Clone, Copy)]
pub struct Charge<'a> {
    /// The tenant billed.
    pub tenant: &'a str,
    /// The provider, as configured.
    pub provider: &'a str,
    /// The model, when the call names one (its `model:` scope).
    pub model: Option<&'a str>,
    /// The usage estimated before sending.
    pub estimate: Usage,
}

/// Every tenant's budgets, checked before a call queues and counted in the journal.
#[derive(Debug)]
pub struct Budgets {
    config: BudgetConfig,
    tenants: TenantsConfig,
    journal: Arc<Journal>,
    clock: Arc<dyn Clock>,
    /// The (provider, model) pairs already warned of as unpriced.
    warned: Mutex<std::collections::BTreeSet<(String, String)>>,
}

impl Budgets {
    /// Budgets by `config`, each tenant in its tier by `tenants`, counted in `journal`, on
    /// `clock`'s wall time.
    pub fn new(
        config: BudgetConfig,
        tenants: TenantsConfig,
        journal: Arc<Journal>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            config,
            tenants,
            journal,
            clock,
            warned: Mutex::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BudgetConfig {
        &self.config
    }

    /// Whether a charge waits on the network: the journal is a group's, in PostgreSQL (a
    /// round trip of milliseconds), not a file of this host's (a fraction of one).
    pub fn waits_on_network(&self) -> bool {
        self.journal.is_shared()
    }

    /// The budgets of `tenant`: its tier's, with its own replacing them.
    pub fn limits_of(&self, tenant: &str) -> BudgetLimits {
        let tier = self
            .tenants
            .assign
            .get(tenant)
            .unwrap_or(&self.tenants.default_tier);
        self.config.limits_of(tenant, tier)
    }

    /// The day and the month it is now.
    fn periods_now(&self) -> [Period; 2] {
        let now = self.clock.wall_ms();
        Window::ALL.map(|w| self.config.calendar.period(w, now))
    }

    /// What `tenant` has used in each of `periods`.
    fn used(&self, tenant: &str, periods: &[Period; 2]) -> Result<[Amounts; 2], JournalError> {
        Ok([
            self.journal.budget_use().get(tenant, &periods[0])?,
            self.journal.budget_use().get(tenant, &periods[1])?,
        ])
    }

    /// What `usage` (with what it says of the provider's cache) counts for a call of
    /// `provider`'s `model`.
    fn amounts(
        &self,
        provider: &str,
        model: Option<&str>,
        usage: &Usage,
        cache: CacheUse,
    ) -> Amounts {
        let price = model.and_then(|m| self.config.price(provider, m));
        Amounts {
            requests: usage.requests,
            tokens: usage.get(crate::admission::Dimension::Tokens),
            spend_micros: price.map_or(0, |p| p.cost_micros(usage, cache)),
        }
    }

    /// A call of a model without a price, from a tenant with a spend budget: refused, warned
    /// of (once per provider and model) or let through free, as `budgets.unpriced` says. A
    /// call that uses tokens and names no model is refused: no price could apply to it.
    fn unpriced(&self, charge: &Charge<'_>, limits: &BudgetLimits) -> Result<(), BudgetError> {
        let spends = limits
            .iter()
            .any(|(budget, _)| budget.measure == Measure::SpendMicros);
        if !spends {
            return Ok(());
        }
        let Some(model) = charge.model else {
            if charge.estimate.get(crate::admission::Dimension::Tokens) == 0 {
                // A list, a file's download, a GitHub or Stripe call: nothing priced by
                // tokens, nothing to estimate.
                return Ok(());
            }
            return Err(UnpricedModel {
                tenant: charge.tenant.to_owned(),
                provider: charge.provider.to_owned(),
                model: None,
            }
            .into());
        };
        if self.config.price(charge.provider, model).is_some() {
            return Ok(());
        }
        match self.config.unpriced {
            Unpriced::Free => Ok(()),
            Unpriced::Refuse => Err(UnpricedModel {
                tenant: charge.tenant.to_owned(),
                provider: charge.provider.to_owned(),
                model: Some(model.to_owned()),
            }
            .into()),
            Unpriced::Warn => {
                let first = self
                    .warned
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert((charge.provider.to_owned(), model.to_owned()));
                if first {
                    tracing::warn!(
                        provider = charge.provider,
                        model,
                        "a model without a price costs nothing against spend budgets: add \
                         [providers.{}.prices.\"{}\"], or set budgets.unpriced",
                        charge.provider,
                        model
                    );
                }
                Ok(())
            }
        }
    }

    /// Checks `charge`'s tenant's budgets and charges the estimate: `Ok(None)` when nothing
    /// is budgeted or priced.
    ///
    /// # Errors
    /// [`BudgetError::Spent`] when a budget of the tenant is spent now (nothing charged);
    /// [`BudgetError::Ledger`] when the journal failed.
    pub fn admit(
        self: &Arc<Self>,
        charge: &Charge<'_>,
    ) -> Result<Option<Reservation>, BudgetError> {
        if !self.config.is_active() {
            return Ok(None);
        }
        let limits = self.limits_of(charge.tenant);
        self.unpriced(charge, &limits)?;
        let charged = self.amounts(
            charge.provider,
            charge.model,
            &charge.estimate,
            CacheUse::default(),
        );
        let periods = self.periods_now();
        // The check and the charge are one transaction of the journal: calls of one host,
        // and hosts sharing it, let one call cross a budget between them.
        let spent = |before: &[Amounts; 2]| {
            for (budget, limit) in limits.iter() {
                let i = window_index(budget.window);
                let used = budget.measure.of(&before[i]);
                if used >= limit {
                    return Err(BudgetSpent {
                        tenant: charge.tenant.to_owned(),
                        budget,
                        limit,
                        used,
                        resets_at_ms: periods[i].resets_ms,
                        resets_at: self.config.calendar.local_time(periods[i].resets_ms),
                    });
                }
            }
            Ok(())
        };
        let before =
            match self
                .journal
                .budget_use()
                .charge(charge.tenant, &periods, &charged, spent)?
            {
                Ok(before) => before,
                Err(spent) => {
                    metrics::counter!(
                        BUDGET_REFUSALS,
                        "tenant" => charge.tenant.to_owned(),
                        "budget" => spent.budget.key()
                    )
                    .increment(1);
                    return Err(spent.into());
                }
            };
        self.report(
            charge.tenant,
            &limits,
            &periods,
            &before,
            &charged,
            &Amounts::default(),
        );
        Ok(Some(Reservation {
            budgets: self.clone(),
            tenant: charge.tenant.to_owned(),
            provider: charge.provider.to_owned(),
            model: charge.model.map(str::to_owned),
            periods,
            charged,
        }))
    }

    /// Reports the thresholds of `limits` that `tenant`'s use crossed by one change (`add`
    /// added and `remove` taken where it was `before`, as the journal's transaction saw it),
    /// and sets the gauges. The use after is the change's own, not read again: a call
    /// another made meanwhile is its own to report, so each crossing is reported once.
    fn report(
        &self,
        tenant: &str,
        limits: &BudgetLimits,
        periods: &[Period; 2],
        before: &[Amounts; 2],
        add: &Amounts,
        remove: &Amounts,
    ) {
        if limits.is_empty() {
            return;
        }
        let after = before.map(|b| b.changed(add, remove));
        for (budget, limit) in limits.iter() {
            let i = window_index(budget.window);
            let (was, is) = (budget.measure.of(&before[i]), budget.measure.of(&after[i]));
            #[allow(clippy::cast_precision_loss, reason = "a ratio for a gauge")]
            let ratio = is as f64 / limit.max(1) as f64;
            metrics::gauge!(BUDGET_USED_RATIO, "tenant" => tenant.to_owned(), "budget" => budget.key())
                .set(ratio);
            for &threshold in &self.config.thresholds_percent {
                let mark = u128::from(limit) * u128::from(threshold);
                if u128::from(was) * 100 < mark && u128::from(is) * 100 >= mark {
                    tracing::warn!(
                        tenant,
                        budget = %budget,
                        threshold_percent = threshold,
                        used = is,
                        limit,
                        period = %periods[i].label,
                        resets_at_ms = periods[i].resets_ms,
                        "budget threshold crossed"
                    );
                    metrics::counter!(
                        BUDGET_THRESHOLDS,
                        "tenant" => tenant.to_owned(),
                        "budget" => budget.key(),
                        "threshold" => threshold.to_string()
                    )
                    .increment(1);
                }
            }
        }
    }

    /// What `tenant` has used in the current day and month, with its limits: what
    /// `sluice budgets` shows.
    ///
    /// # Errors
    /// A journal failure.
    pub fn standing(&self, tenant: &str) -> Result<Vec<Standing>, JournalError> {
        let periods = self.periods_now();
        let used = self.used(tenant, &periods)?;
        let limits = self.limits_of(tenant);
        Ok(Budget::ALL
            .into_iter()
            .map(|budget| {
                let i = window_index(budget.window);
                Standing {
                    budget,
                    period: periods[i].clone(),
                    used: budget.measure.of(&used[i]),
                    limit: limits.get(budget),
                }
            })
            .collect())
    }
}

/// One budget of a tenant now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The budget.
    pub budget: Budget,
    /// The current period of its window.
    pub period: Period,
    /// What the tenant has used of it in the period.
    pub used: u64,
    /// Its limit, if it has one.
    pub limit: Option<u64>,
}

impl Standing {
    /// What is left: `None` without a limit.
    pub fn left(&self) -> Option<u64> {
        self.limit.map(|l| l.saturating_sub(self.used))
    }
}

fn window_index(window: Window) -> usize {
    match window {
        Window::Day => 0,
        Window::Month => 1,
    }
}

/// A call's charge against its tenant's budgets, made when it was admitted, in the periods
/// it was admitted in. Settle it with the usage the answer reported, or release it when
/// nothing was sent; dropped, the estimate stands.
#[derive(Debug)]
pub struct Reservation {
    budgets: Arc<Budgets>,
    tenant: String,
    provider: String,
    model: Option<String>,
    periods: [Period; 2],
    charged: Amounts,
}

impl Reservation {
    /// What was charged so far.
    pub fn charged(&self) -> Amounts {
        self.charged
    }

    /// Corrects the charge to `actual` (with what the answer said of the provider's cache);
    /// `None`: the answer reported nothing, and the estimate stands.
    pub fn settle(self, actual: Option<Usage>, cache: CacheUse) {
        let Some(actual) = actual else { return };
        let b = &self.budgets;
        let now = b.amounts(&self.provider, self.model.as_deref(), &actual, cache);
        self.change(&now);
    }

    /// Whether correcting it waits on the network ([`Budgets::waits_on_network`]).
    pub fn waits_on_network(&self) -> bool {
        self.budgets.waits_on_network()
    }

    /// Gives the whole charge back: nothing was sent.
    pub fn release(self) {
        self.change(&Amounts::default());
    }

    /// Moves the charge from what it was to `now`.
    fn change(&self, now: &Amounts) {
        let was = &self.charged;
        let add = Amounts {
            requests: now.requests.saturating_sub(was.requests),
            tokens: now.tokens.saturating_sub(was.tokens),
            spend_micros: now.spend_micros.saturating_sub(was.spend_micros),
        };
        let remove = Amounts {
            requests: was.requests.saturating_sub(now.requests),
            tokens: was.tokens.saturating_sub(now.tokens),
            spend_micros: was.spend_micros.saturating_sub(now.spend_micros),
        };
        if add == Amounts::default() && remove == Amounts::default() {
            return;
        }
        let b = &self.budgets;
        let limits = b.limits_of(&self.tenant);
        match b
            .journal
            .budget_use()
            .change(&self.tenant, &self.periods, &add, &remove)
        {
            Ok(before) => b.report(&self.tenant, &limits, &self.periods, &before, &add, &remove),
            Err(e) => {
                tracing::error!(tenant = %self.tenant, "a budget correction was not recorded: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests;
