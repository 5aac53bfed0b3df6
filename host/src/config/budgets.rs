//! The keys of budgets and prices, taken out of the file before admission reads the rest:
//! the `[budgets]` table, each tier's `budgets`, the tenants' `budgets`, and each
//! provider's `prices` (see [`crate::budget`]).

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::ConfigFileError;
use super::parse::Keys;
use crate::budget::{Budget, BudgetConfig, BudgetLimits, Calendar, Price, Unpriced};

/// The largest budget limit: a thousand billion (requests, tokens, or micro-units: a
/// billion in the currency).
pub const MAX_BUDGET: u64 = 1_000_000_000_000_000;
/// The largest price per million tokens, in micro-units: a million in the currency.
pub const MAX_PRICE_MICROS: u64 = 1_000_000_000_000;

const BUDGET_KEYS: [&str; 4] = ["time_zone", "currency", "thresholds_percent", "unpriced"];
const PRICE_KEYS: [&str; 4] = [
    "input_micros_per_million",
    "output_micros_per_million",
    "cached_input_micros_per_million",
    "cache_write_micros_per_million",
];

/// Takes every budget and price key out of `root`.
pub(super) fn parse(keys: &Keys<'_>, root: &mut Table) -> Result<BudgetConfig, ConfigFileError> {
    let mut config = BudgetConfig::default();
    let mut table = keys.table(root, "budgets", "budgets")?;
    if let Some(zone) = keys.string(&mut table, "time_zone", "budgets.time_zone")? {
        config.calendar =
            Calendar::named(&zone).map_err(|e| keys.invalid("budgets.time_zone", e.to_string()))?;
    }
    if let Some(currency) = keys.string(&mut table, "currency", "budgets.currency")? {
        if currency.len() > 16 || !currency.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(keys.invalid("budgets.currency", "a currency code such as USD or EUR"));
        }
        config.currency = currency;
    }
    if let Some(value) = table.remove("thresholds_percent") {
        config.thresholds_percent = thresholds(keys, value)?;
    }
    if let Some(unpriced) = keys.string(&mut table, "unpriced", "budgets.unpriced")? {
        config.unpriced = match unpriced.as_str() {
            "refuse" => Unpriced::Refuse,
            "warn" => Unpriced::Warn,
            "free" => Unpriced::Free,
            _ => {
                return Err(keys.invalid(
                    "budgets.unpriced",
                    "one of refuse, warn (the default) or free",
                ));
            }
        };
    }
    keys.no_other_keys(&table, "budgets", &BUDGET_KEYS)?;

    if let Some(Value::Table(tiers)) = root.get_mut("tiers") {
        for (tier, value) in tiers.iter_mut() {
            let Value::Table(t) = value else { continue }; // admission names it
            let key = format!("tiers.{tier}.budgets");
            let limits = keys.table(t, "budgets", &key)?;
            config
                .tiers
                .insert(tier.clone(), limits_of(keys, limits, &key)?);
        }
    }
    if let Some(Value::Table(tenants)) = root.get_mut("tenants") {
        for (tenant, value) in keys.table(tenants, "budgets", "tenants.budgets")? {
            let key = format!("tenants.budgets.{tenant}");
            let Value::Table(t) = value else {
                return Err(keys.invalid(&key, "a table of budgets"));
            };
            config.tenants.insert(tenant, limits_of(keys, t, &key)?);
        }
    }
    if let Some(Value::Table(providers)) = root.get_mut("providers") {
        for (provider, value) in providers.iter_mut() {
            let Value::Table(p) = value else { continue };
            let at = format!("providers.{provider}.prices");
            let mut models = BTreeMap::new();
            for (model, value) in keys.table(p, "prices", &at)? {
                let key = format!("{at}.{}", crate::admission::config::toml_key(&model));
                let Value::Table(t) = value else {
                    return Err(keys.invalid(&key, "a table of prices"));
                };
                models.insert(model, price(keys, t, &key)?);
            }
            if !models.is_empty() {
                config.prices.insert(provider.clone(), models);
            }
        }
    }
    Ok(config)
}

/// A list of percentages from 1 to 100, ascending.
fn thresholds(keys: &Keys<'_>, value: Value) -> Result<Vec<u32>, ConfigFileError> {
    let key = "budgets.thresholds_percent";
    let Value::Array(items) = value else {
        return Err(keys.invalid(key, "a list of percentages, such as [80, 100]"));
    };
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Value::Integer(n) if (1..=100).contains(&n) => {
                out.push(u32::try_from(n).unwrap_or(100));
            }
            _ => return Err(keys.invalid(&format!("{key}[{i}]"), "a percentage from 1 to 100")),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn limits_of(keys: &Keys<'_>, mut t: Table, at: &str) -> Result<BudgetLimits, ConfigFileError> {
    let mut limits = BudgetLimits::none();
    for budget in Budget::ALL {
        let k = budget.key();
        if let Some(n) = keys.number(&mut t, &k, &format!("{at}.{k}"), 1, MAX_BUDGET)? {
            limits = limits.with(budget, n);
        }
    }
    let known: Vec<String> = Budget::ALL.iter().map(|b| b.key()).collect();
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    keys.no_other_keys(&t, at, &known)?;
    Ok(limits)
}

fn price(keys: &Keys<'_>, mut t: Table, at: &str) -> Result<Price, ConfigFileError> {
    let mut get = |k: &str| keys.number(&mut t, k, &format!("{at}.{k}"), 0, MAX_PRICE_MICROS);
    let input = get(PRICE_KEYS[0])?;
    let output = get(PRICE_KEYS[1])?;
    let cached = get(PRICE_KEYS[2])?;
    let write = get(PRICE_KEYS[3])?;
    keys.no_other_keys(&t, at, &PRICE_KEYS)?;
    let need = |k: &str| keys.invalid(&format!("{at}.{k}"), "missing: a model's price names it");
    Ok(Price {
        input_micros_per_million: input.ok_or_else(|| need(PRICE_KEYS[0]))?,
        output_micros_per_million: output.ok_or_else(|| need(PRICE_KEYS[1]))?,
        cached_input_micros_per_million: cached,
        cache_write_micros_per_million: write,
    })
}

#[cfg(test)]
mod tests;
