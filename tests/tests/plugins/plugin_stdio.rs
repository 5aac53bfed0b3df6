//! A plugin's stdout and stderr, at the wire: a plugin that prints while it plans or reads
//! a call — on purpose, in a panic message, or as the message of an allocation that failed —
//! does not take the host down, whichever tokio runtime drives the call; what it printed is
//! logged, escaped and capped, after the call.
//!
//! Regression: writing to a stdio stream went through wasmtime-wasi's synchronous
//! `blocking-write-and-flush`, which blocks on the tokio runtime of the calling thread; on a
//! thread that already drives that runtime (every call through the executor) it panicked
//! with "Cannot start a runtime from within a runtime".

use std::sync::{Arc, Mutex};

use sluice::Sluice;
use sluice::execute::{Call, Outcome};
use sluice::plugin::RuntimeConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_tests::{HOSTILE_WASM, TEST_DEADLINE, test_cache};
use tracing_subscriber::filter::LevelFilter;

/// A host whose provider `hostile` is read by the hostile fixture, in front of `fake`.
fn host(fake: &FakeProvider, dir: &std::path::Path) -> Sluice {
    let text = format!(
        r#"
        state_dir = "{dir}/state"
        [providers.hostile]
        plugin = "{hostile}"
        base_url = "{url}"
        "#,
        dir = dir.display(),
        hostile = HOSTILE_WASM,
        url = fake.url(""),
    );
    Sluice::builder()
        .config_toml(&text)
        .component_cache(test_cache())
        .plugin_runtime(RuntimeConfig {
            // Small enough that `/oom` runs out quickly.
            max_memory_bytes: 4 << 20,
            call_deadline: TEST_DEADLINE,
            ..RuntimeConfig::default()
        })
        .seed(7)
        .build()
        .expect("a host")
}

async fn fake() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("a fake provider")
}

/// Calls `path` through the host on the runtime the test runs on, and checks what came of
/// it: it succeeded, the provider received it once, and the plugin failed `failures` times
/// (a failed plugin call is answered by the built-in policy).
async fn call_completes(path: &str, failures: u64) {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let sluice = host(&fake, dir.path());
    let outcome = sluice.execute(&Call::get("hostile", path)).await;
    assert!(
        matches!(outcome, Outcome::Succeeded { attempts: 1, .. }),
        "{path}: {outcome:?}"
    );
    assert_eq!(fake.attempts().len(), 1, "{path}: sent once");
    let health = sluice.executor().policy("hostile").unwrap().health();
    assert_eq!(health.total_failures, failures, "{path}: {health:?}");
    // The host is unharmed: the same plugin answers the next call itself.
    let outcome = sluice.execute(&Call::get("hostile", "/ok")).await;
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    let health = sluice.executor().policy("hostile").unwrap().health();
    assert_eq!(health.total_failures, failures, "after {path}: {health:?}");
    sluice.close().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugin_that_prints_while_planning_and_reading_is_served_on_a_current_thread_runtime() {
    call_completes("/print", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_prints_while_planning_and_reading_is_served_on_a_multi_thread_runtime() {
    call_completes("/print", 0).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugin_that_panics_is_contained_on_a_current_thread_runtime() {
    call_completes("/panic", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_panics_is_contained_on_a_multi_thread_runtime() {
    call_completes("/panic", 1).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugin_that_waits_on_a_clock_is_contained_on_a_current_thread_runtime() {
    call_completes("/sleep", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_waits_on_a_clock_is_contained_on_a_multi_thread_runtime() {
    call_completes("/sleep", 1).await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugin_out_of_memory_is_contained_on_a_current_thread_runtime() {
    call_completes("/oom", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_out_of_memory_is_contained_on_a_multi_thread_runtime() {
    call_completes("/oom", 1).await;
}

/// Collects what a tracing subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The lines logged for the hostile plugin.
    fn plugin_lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .filter(|l| l.contains("plugin=\"hostile\"") || l.contains("plugin=hostile"))
            .map(str::to_owned)
            .collect()
    }
}

/// Runs a call of `path` with the host's log captured (on this thread: the runtime is a
/// current-thread one), and returns the lines logged for the plugin.
async fn logged_for(path: &str) -> Vec<String> {
    let captured = Captured::default();
    let sink = captured.clone();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(move || sink.clone())
        .with_ansi(false);
    let _log = sluice_tests::log_capture::capture(LevelFilter::INFO, layer);
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let sluice = host(&fake, dir.path());
    let outcome = sluice.execute(&Call::get("hostile", path)).await;
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    sluice.close().unwrap();
    captured.plugin_lines()
}

#[tokio::test(flavor = "current_thread")]
async fn what_a_plugin_prints_is_logged_with_its_name_escaped_after_each_call() {
    let lines = logged_for("/print").await;
    for (call, stream, line) in [
        ("plan-request", "stdout", "to stdout from plan-request"),
        ("plan-request", "stderr", "to stderr from plan-request"),
        ("read-response", "stdout", "to stdout from read-response"),
        ("read-response", "stderr", "to stderr from read-response"),
    ] {
        let found = lines
            .iter()
            .find(|l| l.contains(line))
            .unwrap_or_else(|| panic!("no `{line}` in {lines:#?}"));
        assert!(found.contains(" WARN "), "{found}");
        assert!(
            found.contains(&format!("function=\"{call}\""))
                && found.contains(&format!("stream=\"{stream}\"")),
            "{found}"
        );
    }
    let stderr = lines
        .iter()
        .find(|l| l.contains("to stderr from read-response"))
        .unwrap();
    assert!(
        stderr.contains(r"to stderr from read-response\n\u{1b}[31m") && !stderr.contains('\u{1b}'),
        "escaped, on one line: {stderr}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugins_panic_message_is_logged() {
    let lines = logged_for("/panic").await;
    assert!(
        lines.iter().any(|l| l.contains("stream=\"stderr\"")
            && l.contains("the hostile fixture panics on purpose")),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn what_a_plugin_prints_is_capped_per_call() {
    let lines = logged_for("/shout").await;
    let shouted: Vec<&String> = lines.iter().filter(|l| l.contains("zzzz")).collect();
    assert_eq!(
        shouted.len(),
        1,
        "one message for the call: {}",
        shouted.len()
    );
    assert!(
        shouted[0].len() < 8 << 10,
        "capped: {} bytes logged of 1 MiB",
        shouted[0].len()
    );
    assert!(shouted[0].contains("bytes not logged"), "{}", shouted[0]);
}
