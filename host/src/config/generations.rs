//! `[providers.X.generations."model"]`: a provider's per-model settings of generations
//! (see [`crate::execute::Generations`]).

use std::collections::BTreeMap;
use std::time::Duration;

use toml::{Table, Value};

use super::ConfigFileError;
use super::parse::{Keys, MAX_TIMEOUT_MS};
use crate::execute::{Generation, Generations};

/// The largest default maximum output, in tokens.
pub const MAX_DEFAULT_OUTPUT: u64 = 10_000_000;

/// Takes the provider `name`'s `generations` table out of its `table`.
pub(super) fn parse(
    keys: &Keys<'_>,
    name: &str,
    table: &mut Table,
) -> Result<Generations, ConfigFileError> {
    let at = format!("providers.{name}.generations");
    let mut models = BTreeMap::new();
    for (model, value) in keys.table(table, "generations", &at)? {
        let here = format!("{at}.\"{model}\"");
        let Value::Table(mut entry) = value else {
            return Err(keys.invalid(&here, "a table of `default_max_output` and `timeout_ms`"));
        };
        let mut number =
            |key: &str, max: u64| keys.number(&mut entry, key, &format!("{here}.{key}"), 1, max);
        let generation = Generation {
            default_max_output: number("default_max_output", MAX_DEFAULT_OUTPUT)?,
            timeout: number("timeout_ms", MAX_TIMEOUT_MS)?.map(Duration::from_millis),
        };
        keys.no_other_keys(&entry, &here, &["default_max_output", "timeout_ms"])?;
        models.insert(model, generation);
    }
    Ok(Generations(models))
}
