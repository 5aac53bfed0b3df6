//! The keys of budgets and prices, taken out of the file before admission reads the rest:
//! the `[budgets]` table, each tier's `budgets`, the tenants' `budgets`, and each
//! provider's `prices` (see [`crate::budget`]).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigFileError;
use super::read::{NonEmpty, Ranged, Reader, under};
use crate::budget::{
    Budget, BudgetConfig, BudgetLimits, Calendar, Measure, Price, Unpriced, Window,
};

/// The largest budget limit: a thousand billion (requests, tokens, or micro-units: a
/// billion in the currency).
pub const MAX_BUDGET: u64 = 1_000_000_000_000_000;
/// The largest price per million tokens, in micro-units: a million in the currency.
pub const MAX_PRICE_MICROS: u64 = 1_000_000_000_000;

/// A budget's limit as written.
type Limit = Option<Ranged<1, MAX_BUDGET>>;
/// A price as written.
type Micros = Option<Ranged<0, MAX_PRICE_MICROS>>;

/// `[budgets]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct BudgetsTable {
    time_zone: Option<NonEmpty>,
    currency: Option<NonEmpty>,
    thresholds_percent: Option<Vec<Ranged<1, 100>>>,
    unpriced: Option<Unpriced>,
    per_host: Option<bool>,
}

/// A tier's `budgets`, or a tenant's under `[tenants.budgets]`: one key per [`Budget`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table of budgets")]
pub(super) struct LimitsTable {
    requests_per_day: Limit,
    requests_per_month: Limit,
    tokens_per_day: Limit,
    tokens_per_month: Limit,
    spend_micros_per_day: Limit,
    spend_micros_per_month: Limit,
}

/// `[tiers.NAME]`'s key that is the host's.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct TierBudgets {
    budgets: LimitsTable,
}

/// `[tenants]`'s key that is the host's.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct TenantBudgets {
    budgets: BTreeMap<String, LimitsTable>,
}

/// `[providers.X.prices.MODEL]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of prices")]
pub(super) struct PriceTable {
    input_micros_per_million: Micros,
    output_micros_per_million: Micros,
    cached_input_micros_per_million: Micros,
    cache_write_micros_per_million: Micros,
}

impl BudgetsTable {
    /// Budgets and prices: this table's keys, the tiers' and tenants' budgets, and the prices
    /// by provider, then model.
    pub(super) fn config(
        self,
        reader: &Reader<'_>,
        tiers: BTreeMap<String, TierBudgets>,
        tenants: TenantBudgets,
        prices: BTreeMap<String, BTreeMap<String, PriceTable>>,
    ) -> Result<BudgetConfig, ConfigFileError> {
        let mut config = BudgetConfig::default();
        if let Some(zone) = self.time_zone {
            config.calendar = Calendar::named(&zone.0)
                .map_err(|e| reader.invalid("budgets.time_zone", e.to_string()))?;
        }
        if let Some(currency) = self.currency {
            let currency = currency.into_string();
            if currency.len() > 16 || !currency.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(
                    reader.invalid("budgets.currency", "a currency code such as USD or EUR")
                );
            }
            config.currency = currency;
        }
        if let Some(thresholds) = self.thresholds_percent {
            let mut percents: Vec<u32> = thresholds.into_iter().map(Ranged::u32).collect();
            percents.sort_unstable();
            percents.dedup();
            config.thresholds_percent = percents;
        }
        if let Some(unpriced) = self.unpriced {
            config.unpriced = unpriced;
        }
        config.per_host = self.per_host.unwrap_or(false);
        config.tiers = tiers
            .into_iter()
            .map(|(tier, t)| (tier, t.budgets.limits()))
            .collect();
        config.tenants = tenants
            .budgets
            .into_iter()
            .map(|(tenant, t)| (tenant, t.limits()))
            .collect();
        for (provider, models) in prices {
            let at = under(&under("providers", &provider), "prices");
            let mut priced = BTreeMap::new();
            for (model, table) in models {
                let price = table.price(reader, &under(&at, &model))?;
                priced.insert(model, price);
            }
            if !priced.is_empty() {
                config.prices.insert(provider, priced);
            }
        }
        Ok(config)
    }
}

impl LimitsTable {
    fn limits(&self) -> BudgetLimits {
        use {Measure::*, Window::*};
        [
            (Budget::new(Requests, Day), self.requests_per_day),
            (Budget::new(Requests, Month), self.requests_per_month),
            (Budget::new(Tokens, Day), self.tokens_per_day),
            (Budget::new(Tokens, Month), self.tokens_per_month),
            (Budget::new(SpendMicros, Day), self.spend_micros_per_day),
            (Budget::new(SpendMicros, Month), self.spend_micros_per_month),
        ]
        .into_iter()
        .fold(
            BudgetLimits::none(),
            |limits, (budget, limit)| match limit {
                Some(n) => limits.with(budget, n.get()),
                None => limits,
            },
        )
    }
}

impl PriceTable {
    /// The price, at `at`: the input and output prices are required.
    fn price(self, reader: &Reader<'_>, at: &str) -> Result<Price, ConfigFileError> {
        let need = |k: &str| reader.invalid(&under(at, k), "missing: a model's price names it");
        Ok(Price {
            input_micros_per_million: self
                .input_micros_per_million
                .ok_or_else(|| need("input_micros_per_million"))?
                .get(),
            output_micros_per_million: self
                .output_micros_per_million
                .ok_or_else(|| need("output_micros_per_million"))?
                .get(),
            cached_input_micros_per_million: self.cached_input_micros_per_million.map(Ranged::get),
            cache_write_micros_per_million: self.cache_write_micros_per_million.map(Ranged::get),
        })
    }
}

#[cfg(test)]
mod tests;
