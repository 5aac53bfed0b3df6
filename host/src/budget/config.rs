//! What budgets the configuration sets, and what calls cost.
//!
//! ```toml
//! [budgets]
//! time_zone = "Europe/Berlin"         # calendar windows; UTC by default
//! currency = "USD"                    # what a micro-unit is a millionth of (for display)
//! thresholds_percent = [80, 100]      # events and metrics as use crosses these
//!
//! [tiers.free.budgets]                # every tenant of the tier, each on its own
//! requests_per_day = 1000
//! tokens_per_month = 2000000
//! spend_micros_per_month = 5000000    # 5 USD
//!
//! [tenants.budgets.acme]              # one tenant: its keys replace its tier's
//! spend_micros_per_day = 20000000
//!
//! [providers.openai.prices."gpt-4o"]  # micro-units per million tokens
//! input_micros_per_million = 2500000
//! output_micros_per_million = 10000000
//! cached_input_micros_per_million = 1250000
//! ```

use std::collections::BTreeMap;
use std::fmt;

use super::window::{Calendar, Window};
use super::{Amounts, Usage};

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Measure {
    /// Calls.
    Requests,
    /// Tokens of any kind.
    Tokens,
    /// Spend, in micro-units of the currency.
    SpendMicros,
}

impl Measure {
    /// Its name in configuration keys: `requests`, `tokens`, `spend_micros`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::Tokens => "tokens",
            Self::SpendMicros => "spend_micros",
        }
    }

    /// How much of it `amounts` hold.
    pub fn of(self, amounts: &Amounts) -> u64 {
        match self {
            Self::Requests => amounts.requests,
            Self::Tokens => amounts.tokens,
            Self::SpendMicros => amounts.spend_micros,
        }
    }
}

/// One budget: a measure over a calendar window (`spend_micros_per_month`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Budget {
    /// What it counts.
    pub measure: Measure,
    /// Over which window.
    pub window: Window,
}

impl Budget {
    /// Every budget, in the order they are shown.
    pub const ALL: [Self; 6] = [
        Self::new(Measure::Requests, Window::Day),
        Self::new(Measure::Requests, Window::Month),
        Self::new(Measure::Tokens, Window::Day),
        Self::new(Measure::Tokens, Window::Month),
        Self::new(Measure::SpendMicros, Window::Day),
        Self::new(Measure::SpendMicros, Window::Month),
    ];

    /// The budget of `measure` per `window`.
    pub const fn new(measure: Measure, window: Window) -> Self {
        Self { measure, window }
    }

    /// Its configuration key: `requests_per_day`, `spend_micros_per_month`.
    pub fn key(self) -> String {
        format!("{}_per_{}", self.measure.name(), self.window.name())
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// The limits of one tier's or tenant's budgets; `None`: no limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetLimits {
    limits: BTreeMap<Budget, u64>,
}

impl BudgetLimits {
    /// No limit.
    pub fn none() -> Self {
        Self::default()
    }

    /// With `budget` limited to `limit`.
    #[must_use]
    pub fn with(mut self, budget: Budget, limit: u64) -> Self {
        self.limits.insert(budget, limit);
        self
    }

    /// The limit of `budget`, if any.
    pub fn get(&self, budget: Budget) -> Option<u64> {
        self.limits.get(&budget).copied()
    }

    /// Every budget limited, with its limit.
    pub fn iter(&self) -> impl Iterator<Item = (Budget, u64)> + '_ {
        self.limits.iter().map(|(b, l)| (*b, *l))
    }

    /// Whether nothing is limited.
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty()
    }

    /// These limits, with `over`'s replacing them where it sets one.
    #[must_use]
    pub fn overlaid(&self, over: &Self) -> Self {
        let mut limits = self.limits.clone();
        limits.extend(over.limits.iter().map(|(b, l)| (*b, *l)));
        Self { limits }
    }
}

/// A model's prices, in micro-units of the currency per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Price {
    /// Per million input tokens.
    pub input_micros_per_million: u64,
    /// Per million output tokens.
    pub output_micros_per_million: u64,
    /// Per million input tokens read from the provider's cache; `None`: the input price.
    pub cached_input_micros_per_million: Option<u64>,
}

impl Price {
    /// What `usage` costs, in micro-units, rounded up: `cached_input` of its input tokens at
    /// the cached price and the rest at the input price, its output tokens at the output
    /// price, and tokens not split into input and output (an estimate's total) at the
    /// output price, the higher one, so an estimate is never too low.
    pub fn cost_micros(&self, usage: &Usage, cached_input: u64) -> u64 {
        let cached = cached_input.min(usage.input_tokens);
        let cached_price = self
            .cached_input_micros_per_million
            .unwrap_or(self.input_micros_per_million);
        let per_million = u128::from(usage.input_tokens - cached)
            * u128::from(self.input_micros_per_million)
            + u128::from(cached) * u128::from(cached_price)
            + u128::from(usage.output_tokens.saturating_add(usage.other_tokens))
                * u128::from(self.output_micros_per_million);
        u64::try_from(per_million.div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }
}

/// The budgets of a whole host: the `[budgets]` table, each tier's and tenant's `budgets`,
/// and each provider's `prices`.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetConfig {
    /// The time zone of the calendar windows.
    pub calendar: Calendar,
    /// What a micro-unit is a millionth of (`USD`), for display only.
    pub currency: String,
    /// The shares of a budget, in percent, whose crossing is reported, in ascending order.
    pub thresholds_percent: Vec<u32>,
    /// Each tier's budgets, by tier name: every tenant of the tier has its own.
    pub tiers: BTreeMap<String, BudgetLimits>,
    /// Named tenants' budgets: each key replaces its tier's.
    pub tenants: BTreeMap<String, BudgetLimits>,
    /// Prices by provider, then model.
    pub prices: BTreeMap<String, BTreeMap<String, Price>>,
}

/// The thresholds reported when the configuration names none: 80% and 100%.
pub const DEFAULT_THRESHOLDS_PERCENT: [u32; 2] = [80, 100];

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            calendar: Calendar::utc(),
            currency: "USD".into(),
            thresholds_percent: DEFAULT_THRESHOLDS_PERCENT.to_vec(),
            tiers: BTreeMap::new(),
            tenants: BTreeMap::new(),
            prices: BTreeMap::new(),
        }
    }
}

impl BudgetConfig {
    /// Whether anything is budgeted or priced: if not, nothing is counted.
    pub fn is_active(&self) -> bool {
        self.tiers.values().any(|l| !l.is_empty())
            || self.tenants.values().any(|l| !l.is_empty())
            || self.prices.values().any(|m| !m.is_empty())
    }

    /// The budgets of `tenant`, in `tier`: its tier's, with its own replacing them.
    pub fn limits_of(&self, tenant: &str, tier: &str) -> BudgetLimits {
        let base = self.tiers.get(tier).cloned().unwrap_or_default();
        match self.tenants.get(tenant) {
            Some(own) => base.overlaid(own),
            None => base,
        }
    }

    /// The price of `model` at `provider`, if the table has one.
    pub fn price(&self, provider: &str, model: &str) -> Option<Price> {
        self.prices.get(provider)?.get(model).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPT_4O: Price = Price {
        input_micros_per_million: 2_500_000,
        output_micros_per_million: 10_000_000,
        cached_input_micros_per_million: Some(1_250_000),
    };

    #[test]
    fn a_call_costs_its_tokens_at_the_models_prices() {
        // 1 000 input tokens at 2.50 per million, 500 output at 10.00: 0.0025 + 0.005.
        assert_eq!(GPT_4O.cost_micros(&Usage::tokens(1_000, 500), 0), 7_500);
        // 400 of the input read from the cache, at half price.
        assert_eq!(GPT_4O.cost_micros(&Usage::tokens(1_000, 500), 400), 7_000);
        // A fraction of a micro-unit is rounded up.
        assert_eq!(GPT_4O.cost_micros(&Usage::tokens(1, 0), 0), 3);
    }

    #[test]
    fn an_estimates_unsplit_tokens_cost_the_output_price() {
        let unsplit = Usage {
            other_tokens: 1_000,
            ..Usage::ONE_REQUEST
        };
        assert_eq!(GPT_4O.cost_micros(&unsplit, 0), 10_000);
    }

    #[test]
    fn a_tenants_own_budgets_replace_its_tiers_key_by_key() {
        let day = Budget::new(Measure::Requests, Window::Day);
        let month = Budget::new(Measure::SpendMicros, Window::Month);
        let mut config = BudgetConfig::default();
        config.tiers.insert(
            "free".into(),
            BudgetLimits::none().with(day, 100).with(month, 5_000_000),
        );
        config
            .tenants
            .insert("acme".into(), BudgetLimits::none().with(day, 1_000));
        let acme = config.limits_of("acme", "free");
        assert_eq!(acme.get(day), Some(1_000));
        assert_eq!(acme.get(month), Some(5_000_000));
        assert_eq!(config.limits_of("bob", "free").get(day), Some(100));
        assert!(config.limits_of("bob", "paid").is_empty());
        assert_eq!(month.key(), "spend_micros_per_month");
    }
}
