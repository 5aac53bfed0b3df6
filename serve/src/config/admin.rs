//! `[serve.admin]`: the admin API's listener and token, the console's operators and the
//! origin browsers reach it at.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::agents::TokenTable;
use super::{AdminConfig, DEFAULT_ADMIN_LISTEN, DEFAULT_ADMIN_MAX_CONNECTIONS, address};
use sluice::config::ConfigFileError;
use sluice::config::read::{NonEmpty, Ranged, Reader, under};

/// `[serve.admin]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct AdminTable {
    listen: Option<NonEmpty>,
    token: Option<TokenTable>,
    operators: BTreeMap<String, TokenTable>,
    public_origin: Option<NonEmpty>,
    max_connections: Option<Ranged<1, 100_000>>,
}

impl AdminTable {
    /// The admin API's configuration.
    pub(super) fn config(self, reader: &Reader<'_>) -> Result<AdminConfig, ConfigFileError> {
        let listen = match self.listen {
            Some(addr) => address(reader, "serve.admin.listen", addr)?,
            None => DEFAULT_ADMIN_LISTEN
                .parse()
                .unwrap_or(([127, 0, 0, 1], 8701).into()),
        };
        let token = self
            .token
            .ok_or_else(|| {
                reader.invalid(
                    "serve.admin.token",
                    "the admin API needs a token: `token = { env = \"SLUICE_ADMIN_TOKEN\" }`",
                )
            })?
            .source(reader, "serve.admin.token")?;
        let mut operators = BTreeMap::new();
        for (name, token) in self.operators {
            let at = under("serve.admin.operators", &name);
            if let Err(e) = sluice::journal::text::check_operator(&name) {
                return Err(reader.invalid(&at, e.to_string()));
            }
            operators.insert(name, token.source(reader, &at)?);
        }
        Ok(AdminConfig {
            listen,
            token,
            operators,
            public_origin: self
                .public_origin
                .map(|o| origin(reader, &o.0))
                .transpose()?,
            max_connections: self
                .max_connections
                .map_or(DEFAULT_ADMIN_MAX_CONNECTIONS, Ranged::u32),
        })
    }
}

/// A web origin: `http://` or `https://`, a host, an optional port, nothing after (a `/`
/// at the end is dropped).
fn origin(reader: &Reader<'_>, given: &str) -> Result<String, ConfigFileError> {
    let bad = || {
        reader.invalid(
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
