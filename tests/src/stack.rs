//! A whole host for end-to-end tests: admission, transport, a bundled plugin, the retry
//! policy, the journal and the audit log, wired as an embedding platform would.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sluice::audit::AuditKey;
use sluice::config::SluiceConfig;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Executor};
use sluice::plugin::RuntimeConfig;
use sluice::retry::RetryConfig;
use sluice::transport::{Timeouts, Transport};
use sluice::writes::Write;
use sluice::{Sluice, SluiceBuilder};

use crate::{TEST_DEADLINE, test_cache};

/// The credential every test call carries: it must never appear in a journal's case, an
/// escalation or the audit log.
pub const SECRET: &str = "Bearer sk-live-never-log-me";

/// Where a host keeps its state.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The state directory, which holds the files below.
    pub dir: PathBuf,
    /// The journal (SQLite).
    pub journal: PathBuf,
    /// The audit log.
    pub audit: PathBuf,
    /// The audit log's witness file.
    pub witness: PathBuf,
}

impl Paths {
    /// The files under `dir`, as a host built by [`Sluice::builder`] keeps them.
    pub fn under(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
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

/// A builder for a host in front of a provider, reading it with the bundled `plugin` (also
/// the provider's name), admitting by the admission configuration `admission` (TOML),
/// retrying by `retry`, sending with `transport`, on tokio's clock and the test cache, with
/// [`SECRET`] as every call's credential and the test audit key.
///
/// # Panics
/// When the configuration is invalid.
pub fn builder(
    plugin: &str,
    admission: &str,
    retry: RetryConfig,
    transport: Transport,
) -> SluiceBuilder {
    let mut config = SluiceConfig::from_toml(
        &format!("{admission}\n[providers.{plugin}]\nplugin = \"{plugin}\"\n"),
        Path::new("."),
    )
    .expect("a configuration");
    config.retry = retry;
    Sluice::builder()
        .config(config)
        .seed(42)
        .component_cache(test_cache())
        .plugin_runtime(RuntimeConfig {
            call_deadline: TEST_DEADLINE,
            ..RuntimeConfig::default()
        })
        .transport(transport)
        .audit_key(audit_key())
        .credentials(Arc::new(|_: &str, _: &str| {
            vec![("authorization".to_owned(), SECRET.to_owned())]
        }))
}

/// A transport whose attempts wait `attempt_timeout` for an answer (and connect within 2 s).
///
/// # Panics
/// When it does not start.
pub fn transport(attempt_timeout: Duration) -> Transport {
    Transport::new(Timeouts {
        connect: Duration::from_secs(2),
        first_byte: attempt_timeout,
        generation: attempt_timeout,
        idle: attempt_timeout,
    })
    .expect("transport")
}

/// An executor in front of a provider, reading it with the bundled `plugin` (also the
/// provider's name; its credentials get 6 000 requests a minute), on tokio's clock. Its
/// host's state (journal and audit log), which an executor alone never uses, is removed.
///
/// # Panics
/// When a part does not start.
pub fn executor(plugin: &str, retry: RetryConfig, attempt_timeout: Duration) -> Arc<Executor> {
    let config = format!("[providers.{plugin}.limits]\nrequests_per_minute = 6000\n");
    executor_with(plugin, &config, retry, transport(attempt_timeout))
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
) -> Arc<Executor> {
    let dir = tempfile::tempdir().expect("a state directory");
    let sluice = builder(plugin, admission, retry, transport)
        .state_dir(dir.path())
        .build()
        .expect("a host");
    // Only writes use the host's state (journal, audit log): the executor goes on alone,
    // and the directory is removed when `dir` drops, after the host that held it open.
    let executor = sluice.executor().clone();
    drop(sluice);
    executor
}

/// A builder for a host in front of a provider (on tokio's clock, so a test on a paused
/// clock runs the host on virtual time), reading it with the bundled `plugin` (also the
/// provider's name), keeping its state at `paths`.
pub fn host_builder(
    plugin: &str,
    paths: &Paths,
    retry: RetryConfig,
    attempt_timeout: Duration,
) -> SluiceBuilder {
    let config = format!("[providers.{plugin}.limits]\nrequests_per_minute = 6000\n");
    builder(plugin, &config, retry, transport(attempt_timeout)).state_dir(&paths.dir)
}

/// A host in front of a provider, as [`host_builder`] makes it.
///
/// # Panics
/// When a part does not start.
pub fn host(plugin: &str, paths: &Paths, retry: RetryConfig, attempt_timeout: Duration) -> Sluice {
    host_builder(plugin, paths, retry, attempt_timeout)
        .build()
        .expect("a host")
}

/// A write of `body` to `url` of `provider`, as action `action` of `task`, sent with the
/// credential `team-key` ([`SECRET`], from the host's credentials).
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
        call: Call::post(provider, url, body.to_owned())
            .credential("team-key")
            .tenant("acme")
            .class(class)
            .header("content-type", "application/x-www-form-urlencoded"),
    }
}

/// A long stream, begun by `call` through `ex` and read to its end: its bytes, which must be
/// longer than the first and last bytes the host keeps of a stream (64 KiB: its middle was
/// dropped and its ends joined where an event ends), and the usage its end reported.
///
/// # Panics
/// When the stream does not begin, breaks, is shorter, or reports no usage.
pub async fn long_stream(ex: &Executor, call: &Call) -> (Vec<u8>, sluice::admission::Usage) {
    let sluice::execute::StreamOutcome::Streaming(mut stream) = ex.execute_stream(call).await
    else {
        panic!("the stream should begin");
    };
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.expect("the stream is delivered whole"));
    }
    assert!(body.len() > 64 * 1024, "{} bytes", body.len());
    let usage = stream.usage().expect("the stream's end reports usage");
    (body, usage)
}
