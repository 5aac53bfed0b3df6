//! The host's small tables as written: `[audit]`, `[journal]`, `[transport]` and
//! `[plugins]`, each number in its range as it is read.

use serde::Deserialize;

use super::read::{NonEmpty, Ranged, Reader};
use super::{AuditConfig, ConfigFileError, DatabaseUrl, JournalConfig};
use crate::transport::{ExtraRoot, Timeouts, TransportConfig};

/// The longest timeout or deadline the file can name, in milliseconds: an hour.
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// The longest audit retention, in days: ten years.
pub const MAX_RETENTION_DAYS: u64 = 3_650;

/// A timeout the file names, in milliseconds.
type TimeoutMs = Ranged<1, MAX_TIMEOUT_MS>;

/// `[audit]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct AuditTable {
    checkpoint_every: Option<Ranged<1, 1_000_000>>,
    retention_days: Option<Ranged<1, MAX_RETENTION_DAYS>>,
    key_file: Option<NonEmpty>,
    witness: Option<NonEmpty>,
}

impl AuditTable {
    pub(super) fn config(self, reader: &Reader<'_>) -> AuditConfig {
        let defaults = AuditConfig::default();
        AuditConfig {
            checkpoint_every: self
                .checkpoint_every
                .and_then(|n| std::num::NonZeroU32::new(n.u32()))
                .unwrap_or(defaults.checkpoint_every),
            retention: self.retention_days.map(Ranged::days),
            key_file: self.key_file.map(|p| reader.path(p)),
            witness: self.witness.map(|p| reader.path(p)),
        }
    }
}

/// `[journal]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct JournalTable {
    keep_answers_days: Option<Ranged<0, MAX_RETENTION_DAYS>>,
    url: Option<NonEmpty>,
    lease_ttl_ms: Option<Ranged<300, 600_000>>,
    key_secret_file: Option<NonEmpty>,
}

impl JournalTable {
    pub(super) fn config(self, reader: &Reader<'_>) -> Result<JournalConfig, ConfigFileError> {
        let mut config = JournalConfig::default();
        if let Some(days) = self.keep_answers_days {
            config.keep_answers = days.days();
        }
        if let Some(url) = self.url {
            config.url = Some(database_url(reader, url.into_string())?);
        }
        config.key_secret_file = self.key_secret_file.map(|p| reader.path(p));
        if let Some(ms) = self.lease_ttl_ms {
            if config.url.is_none() {
                return Err(reader.invalid(
                    "journal.lease_ttl_ms",
                    "a lease is held in a group's journal only: set `url` too, or leave it out",
                ));
            }
            config.lease_ttl = ms.ms();
        }
        Ok(config)
    }
}

/// `[journal] url`: a PostgreSQL URL this build can connect to.
fn database_url(reader: &Reader<'_>, url: String) -> Result<DatabaseUrl, ConfigFileError> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(reader.invalid(
            "journal.url",
            "a PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE (leave it out to \
             keep the journal in the state directory's own file)",
        ));
    }
    if !cfg!(feature = "postgres") {
        return Err(reader.invalid(
            "journal.url",
            "this sluice was built without PostgreSQL (the `postgres` feature): build it \
             with the feature, or leave the key out",
        ));
    }
    #[cfg(feature = "postgres")]
    {
        let invalid = |e: String| reader.invalid("journal.url", e);
        let (_, params) = crate::journal::postgres::tls::split(&url).map_err(invalid)?;
        // The service's working directory is no place to find them from.
        if let Some((name, path)) = params.files().find(|(_, p)| p.is_relative()) {
            return Err(invalid(format!(
                "{name}={}: give its absolute path (the URL's paths are not taken from the \
                 configuration's directory)",
                path.display()
            )));
        }
        crate::journal::postgres::check_url(&url).map_err(invalid)?;
    }
    Ok(DatabaseUrl(url))
}

/// `[transport]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct TransportTable {
    connect_timeout_ms: Option<TimeoutMs>,
    first_byte_timeout_ms: Option<TimeoutMs>,
    generation_timeout_ms: Option<TimeoutMs>,
    idle_timeout_ms: Option<TimeoutMs>,
    extra_roots: Vec<NonEmpty>,
}

impl TransportTable {
    pub(super) fn config(self, reader: &Reader<'_>) -> TransportConfig {
        let defaults = Timeouts::default();
        let ms = |given: Option<TimeoutMs>, default| given.map_or(default, Ranged::ms);
        TransportConfig {
            timeouts: Timeouts {
                connect: ms(self.connect_timeout_ms, defaults.connect),
                first_byte: ms(self.first_byte_timeout_ms, defaults.first_byte),
                generation: ms(self.generation_timeout_ms, defaults.generation),
                idle: ms(self.idle_timeout_ms, defaults.idle),
            },
            extra_roots: self
                .extra_roots
                .into_iter()
                .map(|p| ExtraRoot::PemFile(reader.path(p)))
                .collect(),
            ..TransportConfig::default()
        }
    }
}

/// `[plugins]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default, expecting = "a table")]
pub(super) struct PluginsTable {
    call_deadline_ms: Option<Ranged<1, 60_000>>,
}

impl PluginsTable {
    pub(super) fn call_deadline(&self) -> Option<std::time::Duration> {
        self.call_deadline_ms.map(Ranged::ms)
    }
}
