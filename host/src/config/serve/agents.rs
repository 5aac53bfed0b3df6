//! `[serve.agents.NAME]`: an agent's token, tenant, the classes it may ask for and the
//! account headers it may set; and where a token is read from.

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::{AgentConfig, TokenSource};
use crate::admission::{Class, ClassSet};
use crate::config::ConfigFileError;
use crate::config::parse::Keys;

/// The keys of `[serve.agents.NAME]`.
const KNOWN: &[&str] = &[
    "token",
    "tenant",
    "tier",
    "name_tenant",
    "credentials",
    "priorities",
    "pass_headers",
];

pub(super) fn agent(
    keys: &Keys<'_>,
    at: &str,
    mut table: Table,
) -> Result<AgentConfig, ConfigFileError> {
    keys.no_other_keys(&table, at, KNOWN)?;
    let token = match table.remove("token") {
        Some(v) => token(keys, &format!("{at}.token"), v)?,
        None => return Err(keys.invalid(&format!("{at}.token"), "every agent needs a token")),
    };
    let Some(tenant) = keys.string(&mut table, "tenant", &format!("{at}.tenant"))? else {
        return Err(keys.invalid(
            &format!("{at}.tenant"),
            "every agent needs the tenant its calls are billed to",
        ));
    };
    let tier = keys.string(&mut table, "tier", &format!("{at}.tier"))?;
    let name_tenant = match table.remove("name_tenant") {
        None => false,
        Some(Value::Boolean(b)) => b,
        Some(_) => return Err(keys.invalid(&format!("{at}.name_tenant"), "true or false")),
    };
    let mut credentials = BTreeMap::new();
    for (provider, label) in keys.table(&mut table, "credentials", &format!("{at}.credentials"))? {
        match label {
            Value::String(s) if !s.is_empty() => {
                credentials.insert(provider, s);
            }
            _ => {
                return Err(keys.invalid(
                    &format!("{at}.credentials.{provider}"),
                    "the label of one of the provider's credentials",
                ));
            }
        }
    }
    let priorities = match table.remove("priorities") {
        None => ClassSet::ALL,
        Some(v) => priorities(keys, &format!("{at}.priorities"), v)?,
    };
    let pass_headers = match table.remove("pass_headers") {
        None => Vec::new(),
        Some(v) => pass_headers(keys, &format!("{at}.pass_headers"), v)?,
    };
    Ok(AgentConfig {
        token,
        tenant,
        tier,
        name_tenant,
        credentials,
        priorities,
        pass_headers,
    })
}

/// A list of account headers an agent may set.
fn pass_headers(keys: &Keys<'_>, at: &str, value: Value) -> Result<Vec<String>, ConfigFileError> {
    let how = format!(
        "a list of the account headers an agent may set: {} (credentials are never passed on)",
        crate::headers::ACCOUNT_HEADERS.join(", ")
    );
    let Value::Array(items) = value else {
        return Err(keys.invalid(at, &how));
    };
    items
        .iter()
        .map(|v| match v.as_str() {
            Some(h) if crate::headers::is_account(h) => Ok(h.to_ascii_lowercase()),
            _ => Err(keys.invalid(at, &how)),
        })
        .collect()
}

/// A non-empty list of queue classes.
fn priorities(keys: &Keys<'_>, at: &str, value: Value) -> Result<ClassSet, ConfigFileError> {
    const HOW: &str = "a non-empty list of \"interactive\", \"standard\", \"background\"";
    let Value::Array(items) = value else {
        return Err(keys.invalid(at, HOW));
    };
    let mut classes = Vec::new();
    for item in items {
        let class = match item.as_str() {
            Some("interactive") => Class::Interactive,
            Some("standard") => Class::Standard,
            Some("background") => Class::Background,
            _ => return Err(keys.invalid(at, HOW)),
        };
        classes.push(class);
    }
    if classes.is_empty() {
        return Err(keys.invalid(at, HOW));
    }
    Ok(ClassSet::of(&classes))
}

pub(super) fn token(
    keys: &Keys<'_>,
    at: &str,
    value: Value,
) -> Result<TokenSource, ConfigFileError> {
    const HOW: &str =
        "one of `{ env = \"VAR\" }`, `{ file = \"path\" }` or `{ sha256 = \"<64 hex digits>\" }`";
    let Value::Table(mut t) = value else {
        return Err(keys.invalid(at, HOW));
    };
    let env = keys.string(&mut t, "env", &format!("{at}.env"))?;
    let file = keys.path(&mut t, "file", &format!("{at}.file"))?;
    let sha = keys.string(&mut t, "sha256", &format!("{at}.sha256"))?;
    keys.no_other_keys(&t, at, &["env", "file", "sha256"])?;
    match (env, file, sha) {
        (Some(v), None, None) => Ok(TokenSource::Env(v)),
        (None, Some(p), None) => Ok(TokenSource::File(p)),
        (None, None, Some(hex)) => digest(&hex)
            .map(TokenSource::Sha256)
            .ok_or_else(|| keys.invalid(&format!("{at}.sha256"), "64 hex digits")),
        _ => Err(keys.invalid(at, HOW)),
    }
}

/// 64 hex digits as 32 bytes.
fn digest(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}
