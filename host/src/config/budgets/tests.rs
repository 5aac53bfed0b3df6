//! The budget and price keys: read where they are, refused by name when wrong.

use std::path::Path;

use crate::budget::{Budget, Measure, Window};
use crate::config::{ConfigFileError, SluiceConfig};

const BUDGETS: &str = r#"
[budgets]
time_zone = "Europe/Berlin"
currency = "EUR"
thresholds_percent = [100, 50]

[tiers.free]
weight = 1
[tiers.free.budgets]
requests_per_day = 1000
spend_micros_per_month = 5000000

[tenants]
default_tier = "free"
[tenants.budgets.acme]
spend_micros_per_month = 50000000

[providers.openai.limits]
requests_per_minute = 500
[providers.openai.prices."gpt-4o"]
input_micros_per_million = 2500000
output_micros_per_million = 10000000
cached_input_micros_per_million = 1250000
"#;

fn parse(text: &str) -> Result<SluiceConfig, ConfigFileError> {
    SluiceConfig::from_toml(text, Path::new("."))
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn budgets_tiers_tenants_and_prices_are_read_beside_admission() {
    let c = parse(BUDGETS).unwrap();
    let b = &c.budgets;
    assert_eq!(b.calendar.name(), "Europe/Berlin");
    assert_eq!(b.currency, "EUR");
    assert_eq!(b.thresholds_percent, [50, 100]);
    let spend = Budget::new(Measure::SpendMicros, Window::Month);
    let requests = Budget::new(Measure::Requests, Window::Day);
    assert_eq!(b.tiers["free"].get(requests), Some(1_000));
    let acme = b.limits_of("acme", "free");
    assert_eq!(acme.get(spend), Some(50_000_000));
    assert_eq!(acme.get(requests), Some(1_000));
    let price = b.price("openai", "gpt-4o").unwrap();
    assert_eq!(price.output_micros_per_million, 10_000_000);
    assert_eq!(price.cached_input_micros_per_million, Some(1_250_000));
    // Admission still reads its own keys of the same tables.
    assert_eq!(c.admission.tenants.default_tier, "free");
    assert!(c.admission.providers.contains_key("openai"));
}

#[test]
fn a_file_without_budgets_counts_nothing_in_utc() {
    let c = parse("").unwrap();
    assert!(!c.budgets.is_active());
    assert_eq!(c.budgets.calendar.name(), "UTC");
    assert_eq!(c.budgets.thresholds_percent, [80, 100]);
}

#[test]
fn every_wrong_budget_key_is_named() {
    let cases = [
        (
            "[budgets]\ntime_zone = \"Moon/Base\"",
            "`budgets.time_zone`: `Moon/Base` is not a time zone",
        ),
        (
            "[budgets]\nthresholds_percent = [80, 120]",
            "`budgets.thresholds_percent[1]`: from 1 to 100, not 120",
        ),
        (
            "[budgets]\nzone = \"UTC\"",
            "`budgets.zone`: unknown field `zone`",
        ),
        (
            "[tiers.free.budgets]\ntokens_per_week = 5",
            "`tiers.free.budgets.tokens_per_week`: unknown field `tokens_per_week`, expected one \
             of `requests_per_day`",
        ),
        (
            "[tiers.free.budgets]\ntokens_per_day = 0",
            "`tiers.free.budgets.tokens_per_day`: from 1 to",
        ),
        (
            "[tenants.budgets.acme]\nspend_micros_per_day = \"5 USD\"",
            "`tenants.budgets.acme.spend_micros_per_day`: invalid type: string \"5 USD\", expected a whole number from 1 to",
        ),
        (
            "[providers.openai.prices.\"gpt-4.1\"]\ninput_micros_per_million = 2000000",
            "`providers.openai.prices.\"gpt-4.1\".output_micros_per_million`: missing",
        ),
        (
            "[providers.openai.prices.gpt-4o]\ninput_micros_per_million = -1\n\
             output_micros_per_million = 1",
            "`providers.openai.prices.gpt-4o.input_micros_per_million`: from 0 to",
        ),
    ];
    for (text, expected) in cases {
        let e = error(text);
        assert!(
            e.contains(expected),
            "{text}\n  gave: {e}\n  expected: {expected}"
        );
    }
}

#[test]
fn every_budget_s_key_sets_that_budget_and_no_other() {
    for (n, budget) in Budget::ALL.into_iter().enumerate() {
        let limit = 1_000 + u64::try_from(n).unwrap();
        let text = format!("[tiers.free.budgets]\n{} = {limit}\n", budget.key());
        let c = parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        for other in Budget::ALL {
            let expected = (other == budget).then_some(limit);
            assert_eq!(c.budgets.tiers["free"].get(other), expected, "{text}");
        }
    }
}
