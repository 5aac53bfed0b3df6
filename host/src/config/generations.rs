//! `[providers.X.generations."model"]`: a provider's per-model settings of generations
//! (see [`crate::execute::Generations`]).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::read::Ranged;
use super::tables::MAX_TIMEOUT_MS;
use crate::execute::{Generation, Generations};

/// The largest default maximum output, in tokens.
pub const MAX_DEFAULT_OUTPUT: u64 = 10_000_000;

/// One model's entry as written.
#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    default,
    expecting = "a table of `default_max_output` and `timeout_ms`"
)]
pub(super) struct GenerationTable {
    default_max_output: Option<Ranged<1, MAX_DEFAULT_OUTPUT>>,
    timeout_ms: Option<Ranged<1, MAX_TIMEOUT_MS>>,
}

/// The provider's settings from its entries by model.
pub(super) fn config(models: BTreeMap<String, GenerationTable>) -> Generations {
    Generations(
        models
            .into_iter()
            .map(|(model, entry)| {
                let generation = Generation {
                    default_max_output: entry.default_max_output.map(Ranged::get),
                    timeout: entry.timeout_ms.map(Ranged::ms),
                };
                (model, generation)
            })
            .collect(),
    )
}
