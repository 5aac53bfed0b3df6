//! `[serve.admin]`: the admin API's listener and token, the console's operators and the
//! origin browsers reach it at.

use std::collections::BTreeMap;

use toml::Table;

use super::agents;
use super::{AdminConfig, DEFAULT_ADMIN_LISTEN, DEFAULT_ADMIN_MAX_CONNECTIONS, address};
use crate::config::ConfigFileError;
use crate::config::parse::Keys;

/// The keys of `[serve.admin]`.
const KNOWN: &[&str] = &[
    "listen",
    "token",
    "operators",
    "public_origin",
    "max_connections",
];

pub(super) fn admin_table(
    keys: &Keys<'_>,
    mut table: Table,
) -> Result<AdminConfig, ConfigFileError> {
    keys.no_other_keys(&table, "serve.admin", KNOWN)?;
    let listen = address(keys, &mut table, "listen", "serve.admin.listen")?.unwrap_or_else(|| {
        DEFAULT_ADMIN_LISTEN
            .parse()
            .unwrap_or(([127, 0, 0, 1], 8701).into())
    });
    let token = match table.remove("token") {
        Some(v) => agents::token(keys, "serve.admin.token", v)?,
        None => {
            return Err(keys.invalid(
                "serve.admin.token",
                "the admin API needs a token: `token = { env = \"SLUICE_ADMIN_TOKEN\" }`",
            ));
        }
    };
    let mut operators = BTreeMap::new();
    for (name, value) in keys.table(&mut table, "operators", "serve.admin.operators")? {
        let at = format!("serve.admin.operators.{name}");
        if let Err(e) = crate::journal::text::check_operator(&name) {
            return Err(keys.invalid(&at, e.to_string()));
        }
        operators.insert(name, agents::token(keys, &at, value)?);
    }
    let public_origin = keys
        .string(&mut table, "public_origin", "serve.admin.public_origin")?
        .map(|o| origin(keys, &o))
        .transpose()?;
    let max_connections = keys
        .number(
            &mut table,
            "max_connections",
            "serve.admin.max_connections",
            1,
            100_000,
        )?
        .map_or(DEFAULT_ADMIN_MAX_CONNECTIONS, |n| {
            u32::try_from(n).unwrap_or(u32::MAX)
        });
    Ok(AdminConfig {
        listen,
        token,
        operators,
        public_origin,
        max_connections,
    })
}

/// A web origin: `http://` or `https://`, a host, an optional port, nothing after (a `/`
/// at the end is dropped).
fn origin(keys: &Keys<'_>, given: &str) -> Result<String, ConfigFileError> {
    let bad = || {
        keys.invalid(
            "serve.admin.public_origin",
            "the origin browsers reach the console at: `https://HOST` or `https://HOST:PORT` \
             (no path)",
        )
    };
    let trimmed = given.strip_suffix('/').unwrap_or(given);
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"))
        .ok_or_else(bad)?;
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    if rest.is_empty() || !rest.chars().all(fine) {
        return Err(bad());
    }
    Ok(trimmed.to_ascii_lowercase())
}
