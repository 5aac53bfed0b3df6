//! Per-model settings of a provider's generations (`[providers.X.generations."model"]`):
//! the output a generation that names no maximum is counted for, and how long a whole
//! answer may take.
//!
//! ```toml
//! [providers.openai.generations."o3"]
//! default_max_output = 32768   # what a request naming no maximum reserves
//! timeout_ms = 1800000         # a whole (not streamed) answer: instead of generation_timeout_ms
//! [providers.openai.generations."*"]
//! default_max_output = 2048    # every other model
//! ```
//!
//! A model's settings are its own entry's, then its family's (a dated name, `o3-2025-04-16`,
//! falls back to `o3`: [`crate::budget::model_family`]), then `"*"`'s, each setting on its
//! own. The default output reaches the plugin in the request's digest
//! ([`crate::contract::DEFAULT_MAX_OUTPUT`]), which a body cannot set.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::budget::model_family;

/// The entry every model falls back to.
pub const ANY_MODEL: &str = "*";

/// One model's settings; `None`: not set here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Generation {
    /// The output a generation that names no maximum is counted for, in tokens.
    pub default_max_output: Option<u64>,
    /// How long a whole answer may take to begin, instead of the transport's
    /// `generation_timeout_ms`.
    pub timeout: Option<Duration>,
}

impl Generation {
    /// Each setting of `self`, else `fallback`'s.
    fn or(self, fallback: Self) -> Self {
        Self {
            default_max_output: self.default_max_output.or(fallback.default_max_output),
            timeout: self.timeout.or(fallback.timeout),
        }
    }
}

/// A provider's settings, by model name (or `ANY_MODEL`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Generations(pub BTreeMap<String, Generation>);

impl Generations {
    /// The settings of `model` (the request's `model` field, if it names one).
    pub fn of(&self, model: Option<&str>) -> Generation {
        let entry = |name: &str| self.0.get(name).copied().unwrap_or_default();
        let own = model.map(entry).unwrap_or_default();
        let family = model.and_then(model_family).map(entry).unwrap_or_default();
        own.or(family).or(entry(ANY_MODEL))
    }

    /// Whether no model has a setting.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(output: Option<u64>, timeout_s: Option<u64>) -> Generation {
        Generation {
            default_max_output: output,
            timeout: timeout_s.map(Duration::from_secs),
        }
    }

    #[test]
    fn a_model_s_own_entry_then_its_family_then_any_model() {
        let g = Generations(BTreeMap::from([
            ("o3".to_owned(), set(Some(32_768), Some(1800))),
            ("o3-2025-04-16".to_owned(), set(Some(100), None)),
            (ANY_MODEL.to_owned(), set(Some(2048), Some(60))),
        ]));
        assert_eq!(g.of(Some("o3")), set(Some(32_768), Some(1800)));
        assert_eq!(
            g.of(Some("o3-2025-04-16")),
            set(Some(100), Some(1800)),
            "its own output, its family's timeout"
        );
        assert_eq!(g.of(Some("o3-2025-01-31")), set(Some(32_768), Some(1800)));
        assert_eq!(g.of(Some("gpt-4o")), set(Some(2048), Some(60)));
        assert_eq!(g.of(None), set(Some(2048), Some(60)));
        assert_eq!(Generations::default().of(Some("o3")), Generation::default());
    }
}
