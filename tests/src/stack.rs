//! A whole host for end-to-end tests: admission, transport, a bundled plugin, the retry
//! policy, the journal and the audit log, wired as an embedding platform would.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sluice::admission::{Admission, Config};
use sluice::audit::{AuditKey, AuditLog, AuditSettings};
use sluice::clock::TokioClock;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Executor};
use sluice::guard::{GuardedPolicy, QuarantinePolicy};
use sluice::journal::Journal;
use sluice::retry::RetryConfig;
use sluice::transport::{Timeouts, Transport};
use sluice::writes::{Write, Writes};

use crate::runtime;

/// The credential every test call carries: it must never appear in a journal's case, an
/// escalation or the audit log.
pub const SECRET: &str = "Bearer sk-live-never-log-me";

/// Where a host keeps its state.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The journal (SQLite).
    pub journal: PathBuf,
    /// The audit log.
    pub audit: PathBuf,
    /// The audit log's witness file.
    pub witness: PathBuf,
}

impl Paths {
    /// The files under `dir`.
    pub fn under(dir: &Path) -> Self {
        Self {
            journal: dir.join("journal.sqlite"),
            audit: dir.join("audit.log"),
            witness: dir.join("audit.witness"),
        }
    }
}

/// The audit key of the tests (fixed, so a restarted host signs with the same key).
pub fn audit_key() -> AuditKey {
    AuditKey::from_bytes(&[7; 32])
}

/// An executor in front of a provider, reading it with the bundled `plugin` (also the
/// provider's name; its credentials get 6 000 requests a minute), on tokio's clock.
///
/// # Panics
/// When a part does not start.
pub fn executor(plugin: &str, retry: RetryConfig, attempt_timeout: Duration) -> Executor {
    let config = format!("[providers.{plugin}.limits]\nrequests_per_minute = 6000\n");
    let transport = Transport::new(Timeouts {
        connect: Duration::from_secs(2),
        first_byte: attempt_timeout,
        idle: attempt_timeout,
    })
    .expect("transport");
    executor_with(plugin, &config, retry, transport)
}

/// An executor in front of a provider, reading it with the bundled `plugin` (also the
/// provider's name), admitting by the admission configuration `admission` (TOML), sending
/// with `transport`, on tokio's clock.
///
/// # Panics
/// When a part does not start or the configuration is invalid.
pub fn executor_with(
    plugin: &str,
    admission: &str,
    retry: RetryConfig,
    transport: Transport,
) -> Executor {
    let rt = runtime();
    let guarded = GuardedPolicy::new(
        Arc::new(rt.load_bundled(plugin).expect("a bundled plugin")),
        QuarantinePolicy::default(),
        Arc::new(TokioClock),
    );
    let admission = Admission::new(
        Config::from_toml(admission).expect("an admission configuration"),
        Arc::new(TokioClock),
    )
    .expect("admission");
    Executor::new(
        admission,
        HashMap::from([(plugin.to_owned(), Arc::new(guarded))]),
        transport,
        retry,
        Arc::new(TokioClock),
        42,
    )
}

/// A host in front of a provider (on tokio's clock, so a test on a paused clock runs the
/// host on virtual time), reading it with the bundled `plugin` (also the provider's name),
/// keeping its state at `paths`.
///
/// # Panics
/// When a part does not start.
pub fn host(plugin: &str, paths: &Paths, retry: RetryConfig, attempt_timeout: Duration) -> Writes {
    let executor = executor(plugin, retry, attempt_timeout);
    let journal = Journal::open_or_create(&paths.journal).expect("journal");
    let settings = AuditSettings {
        witness: Some(paths.witness.clone()),
        ..AuditSettings::default()
    };
    let audit = AuditLog::open(
        &paths.audit,
        audit_key(),
        settings,
        sluice::clock::Clock::wall_ms(&TokioClock),
    )
    .expect("audit log");
    Writes::new(
        Arc::new(executor),
        Arc::new(journal),
        Arc::new(audit),
        Arc::new(|_: &str, _: &str| vec![("authorization".to_owned(), SECRET.to_owned())]),
        Arc::new(TokioClock),
    )
}

/// A write of `body` to `url` of `provider`, as action `action` of `task`, carrying
/// [`SECRET`] as its credential.
pub fn write(
    provider: &str,
    task: &str,
    action: &str,
    url: &str,
    class: RequestClass,
    body: &str,
) -> Write {
    Write {
        task: task.into(),
        action: action.into(),
        goal: format!("{task}: pay the supplier's invoice"),
        call: Call {
            provider: provider.into(),
            credential: "team-key".into(),
            scopes: Vec::new(),
            tenant: Some("acme".into()),
            task: None,
            priority: None,
            class,
            method: "POST".into(),
            url: url.into(),
            headers: vec![(
                "content-type".into(),
                "application/x-www-form-urlencoded".into(),
            )],
            secrets: vec![("authorization".into(), SECRET.into())],
            body: body.as_bytes().to_vec(),
            deadline: None,
            coalesce: false,
        },
    }
}
