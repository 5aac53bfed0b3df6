//! The `[store]` table: where admission keeps the state several hosts share.
//!
//! ```toml
//! [store]
//! url = "redis://127.0.0.1:6379"   # the Redis server every host of the group uses
//! hosts = 4                        # hosts sharing the quotas: each paces at 1/4 of every
//!                                  # limit while Redis cannot be reached
//! host_id = "api-1"                # optional; default: the host name and the state dir
//! lease_ttl_ms = 10000             # a dead host's concurrency slots come back after this
//! timeout_ms = 250                 # a store command slower than this falls back to local
//! key_prefix = "sluice"            # keys are <prefix>:q:..., :h:..., :c:..., :a:...
//! ```
//!
//! Without `[store]`, admission state is in memory, per host: the embedded default.
//! `hosts` is required with `url`: the fallback must know how many hosts split a limit, or
//! it would either over-admit (each assuming it is alone) or guess.

use std::num::NonZeroU32;
use std::time::Duration;

use toml::{Table, Value};

use super::ConfigFileError;
use super::parse::Keys;
use crate::admission::shared::SharedConfig;

const KNOWN: &[&str] = &[
    "url",
    "hosts",
    "host_id",
    "lease_ttl_ms",
    "timeout_ms",
    "key_prefix",
];

/// Takes `store` out of the file's root table.
pub(super) fn parse(
    keys: &Keys<'_>,
    root: &mut Table,
) -> Result<Option<SharedConfig>, ConfigFileError> {
    let mut table = match root.remove("store") {
        None => return Ok(None),
        Some(Value::String(s)) if s == "memory" => return Ok(None),
        Some(Value::String(s)) => {
            return Err(keys.invalid(
                "store",
                format!(
                    "a [store] table, not the string {s:?}: write [store] url = {s:?} and hosts = N (how many hosts share the quotas; each paces at 1/N of a limit while the store is unreachable)"
                ),
            ));
        }
        Some(Value::Table(t)) => t,
        Some(other) => {
            return Err(keys.invalid(
                "store",
                format!("a [store] table, not {}", other.type_str()),
            ));
        }
    };
    keys.no_other_keys(&table, "store", KNOWN)?;
    let url = keys
        .string(&mut table, "url", "store.url")?
        .ok_or_else(|| keys.invalid("store.url", "missing: the Redis URL, redis://HOST:PORT"))?;
    let hosts = keys
        .number(&mut table, "hosts", "store.hosts", 1, 10_000)?
        .ok_or_else(|| {
            keys.invalid(
                "store.hosts",
                "missing: how many hosts share the quotas (each paces at 1/hosts of a limit while the store is unreachable)",
            )
        })?;
    let mut config = SharedConfig::new(
        url,
        NonZeroU32::new(u32::try_from(hosts).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN),
    );
    config.host_id = keys.string(&mut table, "host_id", "store.host_id")?;
    if let Some(ms) = keys.number(
        &mut table,
        "lease_ttl_ms",
        "store.lease_ttl_ms",
        300,
        3_600_000,
    )? {
        config.lease_ttl = Duration::from_millis(ms);
    }
    if let Some(ms) = keys.number(&mut table, "timeout_ms", "store.timeout_ms", 1, 60_000)? {
        config.timeout = Duration::from_millis(ms);
    }
    if let Some(p) = keys.string(&mut table, "key_prefix", "store.key_prefix")? {
        config.key_prefix = p;
    }
    config
        .validate()
        .map_err(|e| keys.invalid("store", e.to_string()))?;
    Ok(Some(config))
}
