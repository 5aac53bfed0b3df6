//! The `[store]` table: where admission keeps the state several hosts share.
//!
//! ```toml
//! [store]
//! url = "redis://127.0.0.1:6379"   # the Redis server every host of the group uses
//!                                  # (rediss://HOST:PORT over TLS)
//! ca_file = "redis-ca.pem"         # rediss://: the CA its certificate is signed by
//!                                  # (default: the operating system's roots)
//! client_cert_file = "host.pem"    # rediss://: this host's certificate and key, for a
//! client_key_file = "host.key"     # server that asks for one (tls-auth-clients)
//! hosts = 4                        # hosts sharing the quotas: each paces at 1/4 of every
//!                                  # limit while Redis cannot be reached
//! host_id = "api-1"                # optional; default: the host name and the state dir
//! lease_ttl_ms = 10000             # a dead host's concurrency slots come back after this
//! timeout_ms = 250                 # a store command slower than this falls back to local
//! slice_ms = 250                   # each host takes quota from the store in slices it may
//!                                  # use for this long (0: one store call per call)
//! key_prefix = "sluice"            # keys are <prefix>:q:..., :h:..., :c:..., :a:...
//! accept_claim_loss = false        # claim writes in a Redis that can lose a claim
//! ```
//!
//! Without `[store]`, admission state is in memory, per host: the embedded default.
//! `hosts` is required with `url`: the fallback must know how many hosts split a limit, or
//! it would either over-admit (each assuming it is alone) or guess.

use std::num::NonZeroU32;

use serde::Deserialize;
use toml::Value;

use super::ConfigFileError;
use super::read::{NonEmpty, Ranged, Reader};
use crate::admission::shared::SharedConfig;

/// `[store]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct StoreTable {
    url: Option<NonEmpty>,
    ca_file: Option<NonEmpty>,
    client_cert_file: Option<NonEmpty>,
    client_key_file: Option<NonEmpty>,
    hosts: Option<Ranged<1, 10_000>>,
    host_id: Option<NonEmpty>,
    lease_ttl_ms: Option<Ranged<300, 3_600_000>>,
    timeout_ms: Option<Ranged<1, 60_000>>,
    slice_ms: Option<Ranged<0, 10_000>>,
    key_prefix: Option<NonEmpty>,
    accept_claim_loss: Option<bool>,
}

/// The store `store` names: a table, the string `"memory"` or nothing.
pub(super) fn config(
    reader: &Reader<'_>,
    store: Option<Value>,
) -> Result<Option<SharedConfig>, ConfigFileError> {
    let table = match store {
        None => return Ok(None),
        Some(Value::String(s)) if s == "memory" => return Ok(None),
        Some(Value::String(s)) => {
            return Err(reader.invalid(
                "store",
                format!(
                    "a [store] table, not the string {s:?}: write [store] url = {s:?} and hosts = N (how many hosts share the quotas; each paces at 1/N of a limit while the store is unreachable)"
                ),
            ));
        }
        Some(table @ Value::Table(_)) => table,
        Some(other) => {
            return Err(reader.invalid(
                "store",
                format!("a [store] table, not {}", other.type_str()),
            ));
        }
    };
    let table: StoreTable = reader.read("store", table)?;
    let url = table.url.ok_or_else(|| {
        reader.invalid(
            "store.url",
            "missing: the Redis URL, redis://HOST:PORT (rediss://HOST:PORT over TLS)",
        )
    })?;
    let hosts = table.hosts.ok_or_else(|| {
        reader.invalid(
            "store.hosts",
            "missing: how many hosts share the quotas (each paces at 1/hosts of a limit while the store is unreachable)",
        )
    })?;
    let mut config = SharedConfig::new(
        url.into_string(),
        NonZeroU32::new(hosts.u32()).unwrap_or(NonZeroU32::MIN),
    );
    config.ca_file = table.ca_file.map(|p| reader.path(p));
    config.client_cert_file = table.client_cert_file.map(|p| reader.path(p));
    config.client_key_file = table.client_key_file.map(|p| reader.path(p));
    config.host_id = table.host_id.map(NonEmpty::into_string);
    if let Some(ms) = table.lease_ttl_ms {
        config.lease_ttl = ms.ms();
    }
    if let Some(ms) = table.timeout_ms {
        config.timeout = ms.ms();
    }
    if let Some(ms) = table.slice_ms {
        config.slice = ms.ms();
    }
    if let Some(p) = table.key_prefix {
        config.key_prefix = p.into_string();
    }
    config.accept_claim_loss = table.accept_claim_loss.unwrap_or(false);
    config
        .validate()
        .map_err(|e| reader.invalid(&format!("store.{}", e.key()), e.to_string()))?;
    Ok(Some(config))
}
