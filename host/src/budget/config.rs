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
    /// Per million input tokens written to the provider's cache (Anthropic bills them above
    /// the input price); `None`: the input price.
    pub cache_write_micros_per_million: Option<u64>,
}

/// What a call's answer says of the provider's prompt cache, as providers bill it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUse {
    /// Input tokens (counted among the input tokens) read from the cache: OpenAI's cached
    /// prompt tokens.
    pub read_of_input: u64,
    /// Tokens read from the cache and not counted among the input tokens: Anthropic's cache
    /// reads.
    pub read_besides_input: u64,
    /// Input tokens (counted among the input tokens) written to the cache: Anthropic's
    /// cache writes.
    pub written_of_input: u64,
}

impl Price {
    /// What `usage` costs, in micro-units, rounded up: of its input tokens, those read from
    /// the cache at the cached price, those written to it at the cache-write price, the rest
    /// at the input price; the tokens read from the cache besides its input at the cached
    /// price; its output tokens at the output price; and tokens not split into input and
    /// output (an estimate's total) at the output price, the higher one, so an estimate is
    /// never too low.
    pub fn cost_micros(&self, usage: &Usage, cache: CacheUse) -> u64 {
        let read = cache.read_of_input.min(usage.input_tokens);
        let written = cache.written_of_input.min(usage.input_tokens - read);
        let plain = usage.input_tokens - read - written;
        let cached_price = self
            .cached_input_micros_per_million
            .unwrap_or(self.input_micros_per_million);
        let write_price = self
            .cache_write_micros_per_million
            .unwrap_or(self.input_micros_per_million);
        let per_million = u128::from(plain) * u128::from(self.input_micros_per_million)
            + u128::from(read.saturating_add(cache.read_besides_input)) * u128::from(cached_price)
            + u128::from(written) * u128::from(write_price)
            + u128::from(usage.output_tokens.saturating_add(usage.other_tokens))
                * u128::from(self.output_micros_per_million);
        u64::try_from(per_million.div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }
}

/// What the host does with a call whose model has no price while its tenant has a spend
/// budget (`budgets.unpriced`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unpriced {
    /// The call is refused, naming the price to add.
    Refuse,
    /// It costs nothing, and a warning names the model (once per provider and model).
    #[default]
    Warn,
    /// It costs nothing, silently.
    Free,
}

/// The family of a dated model name: `gpt-4o-2024-08-06` → `gpt-4o`,
/// `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`, `claude-3-5-sonnet-latest` →
/// `claude-3-5-sonnet`; `None` when the name carries no date (or `-latest`).
pub fn model_family(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(family) = model.strip_suffix("-latest") {
        return Some(family);
    }
    let parts: Vec<&str> = model.rsplitn(4, '-').collect();
    // -YYYY-MM-DD
    if parts.len() == 4
        && parts[2].len() == 4
        && parts[1].len() == 2
        && parts[0].len() == 2
        && [parts[0], parts[1], parts[2]].iter().all(|p| digits(p))
    {
        return Some(parts[3]);
    }
    // -YYYYMMDD, or @YYYYMMDD (Vertex)
    let (family, date) = model.rsplit_once(['-', '@'])?;
    (date.len() == 8 && digits(date)).then_some(family)
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
    /// What a call whose model has no price does to a spend budget.
    pub unpriced: Unpriced,
    /// Whether each host of a group sharing a `[store]` but no journal counts budgets of its
    /// own, knowingly (`budgets.per_host`): a group of N hosts then lets a tenant use up to
    /// N times each budget. Without it such a configuration is refused.
    pub per_host: bool,
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
            unpriced: Unpriced::default(),
            per_host: false,
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

    /// Whether any tier or tenant has a budget (prices alone count nothing against one).
    pub fn has_budgets(&self) -> bool {
        self.tiers.values().any(|l| !l.is_empty()) || self.tenants.values().any(|l| !l.is_empty())
    }

    /// The budgets of `tenant`, in `tier`: its tier's, with its own replacing them.
    pub fn limits_of(&self, tenant: &str, tier: &str) -> BudgetLimits {
        let base = self.tiers.get(tier).cloned().unwrap_or_default();
        match self.tenants.get(tenant) {
            Some(own) => base.overlaid(own),
            None => base,
        }
    }

    /// The price of `model` at `provider`, if the table has one: the model's own, else its
    /// family's for a dated model (`model_family`).
    pub fn price(&self, provider: &str, model: &str) -> Option<Price> {
        let prices = self.prices.get(provider)?;
        prices
            .get(model)
            .or_else(|| prices.get(model_family(model)?))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPT_4O: Price = Price {
        input_micros_per_million: 2_500_000,
        output_micros_per_million: 10_000_000,
        cached_input_micros_per_million: Some(1_250_000),
        cache_write_micros_per_million: None,
    };

    /// Claude Sonnet's prices: cache reads at a tenth of the input price, writes at 1.25×.
    const SONNET: Price = Price {
        input_micros_per_million: 3_000_000,
        output_micros_per_million: 15_000_000,
        cached_input_micros_per_million: Some(300_000),
        cache_write_micros_per_million: Some(3_750_000),
    };

    const NO_CACHE: CacheUse = CacheUse {
        read_of_input: 0,
        read_besides_input: 0,
        written_of_input: 0,
    };

    #[test]
    fn a_call_costs_its_tokens_at_the_models_prices() {
        // 1 000 input tokens at 2.50 per million, 500 output at 10.00: 0.0025 + 0.005.
        assert_eq!(
            GPT_4O.cost_micros(&Usage::tokens(1_000, 500), NO_CACHE),
            7_500
        );
        // 400 of the input read from the cache (OpenAI's cached prompt tokens), at half price.
        let cached = CacheUse {
            read_of_input: 400,
            ..NO_CACHE
        };
        assert_eq!(
            GPT_4O.cost_micros(&Usage::tokens(1_000, 500), cached),
            7_000
        );
        // A fraction of a micro-unit is rounded up.
        assert_eq!(GPT_4O.cost_micros(&Usage::tokens(1, 0), NO_CACHE), 3);
    }

    #[test]
    fn anthropic_cache_reads_and_writes_are_billed_as_anthropic_bills_them() {
        // 1 000 input tokens of which 600 written to the cache, 5 000 more read from it (not
        // among the input), 100 output: 400 × 3 + 600 × 3.75 + 5 000 × 0.30 + 100 × 15.
        let cache = CacheUse {
            read_of_input: 0,
            read_besides_input: 5_000,
            written_of_input: 600,
        };
        assert_eq!(
            SONNET.cost_micros(&Usage::tokens(1_000, 100), cache),
            1_200 + 2_250 + 1_500 + 1_500
        );
    }

    #[test]
    fn a_dated_model_is_priced_as_its_family() {
        assert_eq!(model_family("gpt-4o-2024-08-06"), Some("gpt-4o"));
        assert_eq!(
            model_family("claude-sonnet-4-5-20250929"),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            model_family("claude-3-5-sonnet-latest"),
            Some("claude-3-5-sonnet")
        );
        assert_eq!(
            model_family("claude-3-5-sonnet@20240620"),
            Some("claude-3-5-sonnet")
        );
        assert_eq!(model_family("gpt-4o"), None);
        assert_eq!(
            model_family("gpt-4o-mini"),
            None,
            "a family of its own, not a date"
        );
        let mut config = BudgetConfig::default();
        config
            .prices
            .insert("openai".into(), [("gpt-4o".into(), GPT_4O)].into());
        assert_eq!(config.price("openai", "gpt-4o-2024-08-06"), Some(GPT_4O));
        assert_eq!(config.price("openai", "gpt-4o-mini"), None);
    }

    #[test]
    fn an_estimates_unsplit_tokens_cost_the_output_price() {
        let unsplit = Usage {
            other_tokens: 1_000,
            ..Usage::ONE_REQUEST
        };
        assert_eq!(GPT_4O.cost_micros(&unsplit, NO_CACHE), 10_000);
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
