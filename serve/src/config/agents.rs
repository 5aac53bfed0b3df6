//! `[serve.agents.NAME]`: an agent's token, tenant, the classes it may ask for and the
//! account headers it may set; and where a token is read from.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{AgentConfig, TokenSource};
use sluice::admission::{Class, ClassSet};
use sluice::config::ConfigFileError;
use sluice::config::read::{NonEmpty, Reader, under};

/// `[serve.agents.NAME]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct AgentTable {
    token: Option<TokenTable>,
    tenant: Option<NonEmpty>,
    tier: Option<NonEmpty>,
    name_tenant: bool,
    class_hints: bool,
    credentials: BTreeMap<String, NonEmpty>,
    priorities: Option<Vec<Class>>,
    pass_headers: Vec<String>,
}

/// Where a token is read from, as written.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "one of `{ env = \"VAR\" }`, `{ file = \"path\" }` or `{ sha256 = \"<64 hex digits>\" }`"
)]
pub(super) struct TokenTable {
    env: Option<NonEmpty>,
    file: Option<NonEmpty>,
    sha256: Option<NonEmpty>,
}

impl AgentTable {
    /// The agent at the key `at`.
    pub(super) fn config(
        self,
        reader: &Reader<'_>,
        at: &str,
    ) -> Result<AgentConfig, ConfigFileError> {
        let token = self
            .token
            .ok_or_else(|| reader.invalid(&under(at, "token"), "every agent needs a token"))?
            .source(reader, &under(at, "token"))?;
        let tenant = self.tenant.ok_or_else(|| {
            reader.invalid(
                &under(at, "tenant"),
                "every agent needs the tenant its calls are billed to",
            )
        })?;
        let priorities = match self.priorities {
            None => ClassSet::ALL,
            Some(classes) if classes.is_empty() => {
                return Err(reader.invalid(
                    &under(at, "priorities"),
                    "a non-empty list of \"interactive\", \"standard\", \"background\"",
                ));
            }
            Some(classes) => ClassSet::of(&classes),
        };
        let mut pass_headers = Vec::with_capacity(self.pass_headers.len());
        for (i, header) in self.pass_headers.iter().enumerate() {
            if !sluice::headers::is_account(header) {
                return Err(reader.invalid(
                    &format!("{}[{i}]", under(at, "pass_headers")),
                    format!(
                        "an account header an agent may set: {} (credentials are never passed on)",
                        sluice::headers::ACCOUNT_HEADERS.join(", ")
                    ),
                ));
            }
            pass_headers.push(header.to_ascii_lowercase());
        }
        Ok(AgentConfig {
            token,
            tenant: tenant.into_string(),
            tier: self.tier.map(NonEmpty::into_string),
            name_tenant: self.name_tenant,
            class_hints: self.class_hints,
            credentials: self
                .credentials
                .into_iter()
                .map(|(provider, label)| (provider, label.into_string()))
                .collect(),
            priorities,
            pass_headers,
        })
    }
}

impl TokenTable {
    /// The token's source, at the key `at`: exactly one of the three.
    pub(super) fn source(
        self,
        reader: &Reader<'_>,
        at: &str,
    ) -> Result<TokenSource, ConfigFileError> {
        match (self.env, self.file, self.sha256) {
            (Some(v), None, None) => Ok(TokenSource::Env(v.into_string())),
            (None, Some(p), None) => Ok(TokenSource::File(reader.path(p))),
            (None, None, Some(hex)) => sluice::hex::from_hex::<32>(&hex.0)
                .map(TokenSource::Sha256)
                .ok_or_else(|| reader.invalid(&under(at, "sha256"), "64 hex digits")),
            _ => Err(reader.invalid(
                at,
                "one of `{ env = \"VAR\" }`, `{ file = \"path\" }` or `{ sha256 = \"<64 hex digits>\" }`",
            )),
        }
    }
}
