//! External plugins as configuration, at the wire: each plugin under its own limits, its
//! vectors checked before it serves, and a new version swapped in while calls run — a
//! reload fails no call, and a bad new version is refused while the old one keeps serving.
//!
//! The two generations of the relay fixture are one plugin (`relay`) that reads a 418
//! differently: generation one hands it back as an answer, generation two ends the call as
//! the caller's error. A 418 therefore tells which version answered, and the fake provider
//! counts what it received.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use sluice::contract::{RequestClass, ResponsePart};
use sluice::execute::{Call, Outcome, StreamOutcome};
use sluice::guard::AnsweredBy;
use sluice::plugin::{LoadError, RuntimeConfig};
use sluice::reload::watch::WATCH_INTERVAL;
use sluice::reload::{Refusal, ReloadError};
use sluice::{BuildError, Sluice};
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::{HOSTILE_WASM, RELAY_ONE_WASM, RELAY_TWO_WASM, TEST_DEADLINE, test_cache};

/// A vector case generation one passes and generation two fails.
const TEAPOT_VECTORS: &str = r#"{"cases": [{
    "name": "a 418 is handed back as an answer",
    "request": {"method": "GET", "url": "http://127.0.0.1/teapot", "class": "read"},
    "response": {"status": 418},
    "expect": {"verdict": "success"}
}]}"#;

/// A host whose provider `relay` runs the plugin file `dir/relay.wasm` (generation one at
/// first), with `extra` TOML lines in its table, in front of `fake`.
fn relay_host(dir: &Path, fake: &FakeProvider, extra: &str) -> Result<Sluice, BuildError> {
    swap(&dir.join("relay.wasm"), RELAY_ONE_WASM);
    let text = format!(
        r#"
        state_dir = "{dir}/state"
        [providers.relay]
        plugin = "{dir}/relay.wasm"
        base_url = "{url}"
        {extra}
        "#,
        dir = dir.display(),
        url = fake.url(""),
    );
    build(&text)
}

fn build(text: &str) -> Result<Sluice, BuildError> {
    Sluice::builder()
        .config_toml(text)
        .component_cache(test_cache())
        // An unoptimized build on a busy machine can be descheduled mid-call.
        .plugin_runtime(RuntimeConfig {
            call_deadline: TEST_DEADLINE,
            ..RuntimeConfig::default()
        })
        .seed(7)
        .build()
}

/// Replaces the file at `path` with `from`'s bytes in one rename, as a deployment does.
fn swap(path: &Path, from: impl AsRef<Path>) {
    let bytes = std::fs::read(from).unwrap();
    write_atomically(path, &bytes);
}

fn write_atomically(path: &Path, bytes: &[u8]) {
    let tmp: PathBuf = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn fake() -> FakeProvider {
    FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap()
}

fn read(path: &str) -> Call {
    Call::get("relay", path).tenant("acme")
}

/// Asks for `/teapot`, which the fake answers 418 once: `Some(418)` when the answer was
/// handed back (generation one), `None` when the call ended (generation two).
async fn teapot(sluice: &Sluice, fake: &FakeProvider) -> Option<u16> {
    fake.script(
        "/teapot",
        [Fault::Status {
            status: 418,
            code: "teapot",
        }],
    );
    match sluice.execute(&read("/teapot")).await {
        Outcome::Succeeded { response, .. } => Some(response.status),
        Outcome::Ended(t) => {
            assert_eq!(t.last_status, Some(418), "{t:?}");
            None
        }
    }
}

/// `sluice_plugin_reloads_total{provider="relay"}` as recorded: (refused, reloaded).
fn reloads(snapshotter: &Snapshotter) -> (u64, u64) {
    let mut counted = (0, 0);
    for (key, .., value) in snapshotter.snapshot().into_vec() {
        let k = key.key();
        let label = |name: &str| {
            k.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
        };
        if k.name() != sluice::observe::PLUGIN_RELOADS
            || label("provider").as_deref() != Some("relay")
        {
            continue;
        }
        let DebugValue::Counter(n) = value else {
            panic!("a counter, not {value:?}");
        };
        match label("result").as_deref() {
            Some("refused") => counted.0 += n,
            Some("reloaded") => counted.1 += n,
            other => panic!("a result of refused or reloaded, not {other:?}"),
        }
    }
    counted
}

fn version(sluice: &Sluice) -> String {
    let policy = sluice.executor().policy("relay").unwrap();
    policy.plugin().description().version.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_reloads_under_200_calls_from_8_tasks_fail_no_call_and_each_version_answers_as_built() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let sluice = Arc::new(relay_host(dir.path(), &fake, "").unwrap());
    assert_eq!(teapot(&sluice, &fake).await, Some(418), "generation one");

    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for task in 0..8 {
        let (sluice, done) = (sluice.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let mut failed = Vec::new();
            for i in 0..25 {
                let outcome = sluice
                    .execute(&read(&format!("/v1/models/{task}-{i}")))
                    .await;
                if !matches!(outcome, Outcome::Succeeded { attempts: 1, .. }) {
                    failed.push(outcome);
                }
                done.fetch_add(1, Ordering::SeqCst);
            }
            failed
        }));
    }
    // Ten reloads, alternating the generations, each after more calls have finished: they
    // interleave with the traffic, whatever the machine's speed.
    let path = dir.path().join("relay.wasm");
    let plugins = sluice.plugins().clone();
    let watched = done.clone();
    let reloads = tokio::task::spawn_blocking(move || {
        let mut versions = Vec::new();
        let mut during = Vec::new();
        for k in 1..=10 {
            let before = watched.load(Ordering::SeqCst);
            while watched.load(Ordering::SeqCst) < (before + 5).min(200) {
                std::thread::sleep(Duration::from_millis(1));
            }
            swap(
                &path,
                if k % 2 == 1 {
                    RELAY_TWO_WASM
                } else {
                    RELAY_ONE_WASM
                },
            );
            let r = plugins.reload("relay").expect("a good version is taken");
            versions.push(r.version);
            during.push(watched.load(Ordering::SeqCst));
        }
        (versions, during)
    });
    let mut failed = Vec::new();
    for t in tasks {
        failed.extend(t.await.unwrap());
    }
    let (versions, during) = reloads.await.unwrap();

    assert!(failed.is_empty(), "calls failed across reloads: {failed:?}");
    assert_eq!(done.load(Ordering::SeqCst), 200);
    let sent = fake
        .attempts()
        .iter()
        .filter(|a| a.path.starts_with("/v1/models/"))
        .count();
    assert_eq!(sent, 200, "one attempt per call, none lost, none repeated");
    assert_eq!(
        versions,
        ["2.0.0", "1.0.0"].repeat(5),
        "every reload took the version swapped in"
    );
    assert!(
        during.iter().any(|&n| n < 200),
        "the reloads ran while calls did: {during:?}"
    );

    // Generation one serves after the tenth reload; one more, and generation two does.
    assert_eq!(version(&sluice), "1.0.0");
    assert_eq!(teapot(&sluice, &fake).await, Some(418));
    swap(&dir.path().join("relay.wasm"), RELAY_TWO_WASM);
    sluice.reload_plugin("relay").unwrap();
    assert_eq!(teapot(&sluice, &fake).await, None, "generation two ends it");
    assert_eq!(fake.attempts_on("/teapot"), 3, "one attempt per probe");
}

#[tokio::test(flavor = "current_thread")]
async fn a_version_that_is_not_a_component_names_another_plugin_or_fails_its_vectors_is_refused_and_the_old_one_serves()
 {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("relay-vectors.json");
    std::fs::write(&vectors, TEAPOT_VECTORS).unwrap();
    let sluice = relay_host(
        dir.path(),
        &fake,
        &format!("vectors = \"{}\"", vectors.display()),
    )
    .expect("generation one passes its vectors at start");
    let path = dir.path().join("relay.wasm");
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let reload =
        |sluice: &Sluice| metrics::with_local_recorder(&recorder, || sluice.reload_plugin("relay"));

    // Not a component at all.
    write_atomically(&path, b"\0asm, or so it says");
    let e = reload(&sluice).unwrap_err();
    assert!(
        matches!(
            &e,
            ReloadError::Refused {
                reason: Refusal::Load(LoadError::Invalid { .. }),
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("the old one keeps serving"), "{e}");
    assert_eq!(
        teapot(&sluice, &fake).await,
        Some(418),
        "still generation one"
    );

    // A good component, but another plugin: the hostile fixture.
    swap(&path, HOSTILE_WASM);
    let e = reload(&sluice).unwrap_err();
    let ReloadError::Refused {
        reason: Refusal::OtherPlugin { expected, found },
        ..
    } = &e
    else {
        panic!("refused as another plugin: {e}");
    };
    assert_eq!((expected.as_str(), found.as_str()), ("relay", "hostile"));
    assert_eq!(
        teapot(&sluice, &fake).await,
        Some(418),
        "still generation one"
    );

    // The right plugin, whose vectors fail: generation two reads the 418 otherwise.
    swap(&path, RELAY_TWO_WASM);
    let e = reload(&sluice).unwrap_err();
    let ReloadError::Refused {
        reason: Refusal::Vectors { case, failed, .. },
        ..
    } = &e
    else {
        panic!("refused by its vectors: {e}");
    };
    assert_eq!(
        (case.as_str(), *failed),
        ("a 418 is handed back as an answer", 1)
    );
    assert_eq!(
        teapot(&sluice, &fake).await,
        Some(418),
        "still generation one"
    );
    assert_eq!(version(&sluice), "1.0.0");

    // Each probe reached the provider once, and generation one read each.
    assert_eq!(fake.attempts_on("/teapot"), 3);
    // And a good one is still taken: generation one again, its vectors passing.
    swap(&path, RELAY_ONE_WASM);
    let r = reload(&sluice).unwrap();
    assert_eq!(
        (r.vectors_passed, r.previous_version.as_str()),
        (1, "1.0.0")
    );
    assert_eq!(
        reloads(&snapshotter),
        (3, 1),
        "each reload counted by its result"
    );
    assert!(matches!(
        sluice.reload_plugin("nobody"),
        Err(ReloadError::UnknownProvider { .. })
    ));
}

/// Waits (up to 20 s) until `relay` serves `want`.
async fn until_version(sluice: &Sluice, want: &str) {
    for _ in 0..400 {
        if version(sluice) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{want} never served; {} does", version(sluice));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_plugin_file_is_reloaded_when_it_changes_and_a_bad_change_leaves_the_old_one() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let sluice = relay_host(dir.path(), &fake, "reload = \"watch\"").unwrap();
    let path = dir.path().join("relay.wasm");
    assert_eq!(version(&sluice), "1.0.0");

    swap(&path, RELAY_TWO_WASM);
    until_version(&sluice, "2.0.0").await;
    assert_eq!(teapot(&sluice, &fake).await, None, "generation two answers");

    // A change that is no plugin: refused, and generation two keeps serving.
    write_atomically(&path, b"not a component");
    tokio::time::sleep(WATCH_INTERVAL * 3).await;
    assert_eq!(version(&sluice), "2.0.0");
    assert_eq!(teapot(&sluice, &fake).await, None, "still generation two");

    swap(&path, RELAY_ONE_WASM);
    until_version(&sluice, "1.0.0").await;
    assert_eq!(
        teapot(&sluice, &fake).await,
        Some(418),
        "generation one again"
    );
}

/// The watcher took its first look at the file when its task first ran: a change made
/// before then (here, always: on one thread the task runs at the test's first await) was
/// taken for the loaded version and never reloaded.
#[tokio::test(flavor = "current_thread")]
async fn a_change_made_before_the_watcher_first_runs_is_reloaded() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let sluice = relay_host(dir.path(), &fake, "reload = \"watch\"").unwrap();
    swap(&dir.path().join("relay.wasm"), RELAY_TWO_WASM);
    until_version(&sluice, "2.0.0").await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugin_whose_vectors_fail_is_refused_at_start_with_the_failing_case_named() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("relay-vectors.json");
    std::fs::write(&vectors, TEAPOT_VECTORS).unwrap();
    let path = dir.path().join("relay.wasm");
    let text = format!(
        r#"
        state_dir = "{dir}/state"
        [providers.relay]
        plugin = "{path}"
        vectors = "{vectors}"
        base_url = "{url}"
        "#,
        dir = dir.path().display(),
        path = path.display(),
        vectors = vectors.display(),
        url = fake.url(""),
    );
    swap(&path, RELAY_TWO_WASM);
    let e = build(&text).unwrap_err();
    let message = e.to_string();
    assert!(
        message.starts_with("provider `relay`: 1 of 1 cases of its vectors")
            && message.contains("`a 418 is handed back as an answer`"),
        "{message}"
    );
    assert!(fake.attempts().is_empty(), "nothing was sent");
    swap(&path, RELAY_ONE_WASM);
    build(&text).expect("generation one passes");
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugin_over_its_own_memory_limit_is_quarantined_while_the_same_plugin_with_the_defaults_serves()
 {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
        state_dir = "{dir}/state"
        [providers.tight]
        plugin = "{hostile}"
        base_url = "{url}"
        [providers.tight.plugin_limits]
        max_memory_mib = 3
        [providers.roomy]
        plugin = "{hostile}"
        base_url = "{url}"
        "#,
        dir = dir.path().display(),
        hostile = HOSTILE_WASM,
        url = fake.url(""),
    );
    let sluice = build(&text).unwrap();
    let tight = sluice.executor().policy("tight").unwrap();
    let oom = sluice_tests::request("GET", &fake.url("/oom"), RequestClass::Read);
    // On the test's runtime, as the executor calls it: the fixture's out-of-memory path
    // writes to stderr.
    let answers = (0..3)
        .map(|_| {
            let ok = sluice_tests::response(200, &[]);
            tight.read_response(&oom, &ok, ResponsePart::Complete).by
        })
        .collect::<Vec<_>>();
    assert!(
        answers
            .iter()
            .all(|by| matches!(by, AnsweredBy::Fallback(_))),
        "the built-in policy answers for it: {answers:?}"
    );
    let tight = sluice.executor().policy("tight").unwrap().health();
    assert_eq!((tight.total_failures, tight.quarantines), (3, 1));
    let failure = tight.last_failure.unwrap();
    assert!(
        failure.contains("exceeded its memory limit of 3 MiB"),
        "its own limit, not the default 16 MiB: {failure}"
    );

    // The same plugin for another provider, with the defaults: untouched, and answering.
    let roomy = sluice.executor().policy("roomy").unwrap();
    let answer = roomy.read_response(
        &sluice_tests::request("GET", &fake.url("/ok"), RequestClass::Read),
        &sluice_tests::response(200, &[]),
        ResponsePart::Complete,
    );
    assert!(matches!(answer.by, AnsweredBy::Plugin), "{:?}", answer.by);
    let outcome = sluice.execute(&Call::get("roomy", "/ok")).await;
    assert!(matches!(outcome, Outcome::Succeeded { .. }), "{outcome:?}");
    assert_eq!(roomy.health().total_failures, 0);

    // A reload is the way out of quarantine: the version it loads starts with a clean
    // guard (the same file here; a fixed one in practice).
    sluice.reload_plugin("tight").unwrap();
    let tight = sluice.executor().policy("tight").unwrap();
    assert!(tight.health().quarantined_until.is_none());
    let answer = tight.read_response(
        &sluice_tests::request("GET", &fake.url("/ok"), RequestClass::Read),
        &sluice_tests::response(200, &[]),
        ResponsePart::Complete,
    );
    assert!(matches!(answer.by, AnsweredBy::Plugin), "{:?}", answer.by);
}

#[tokio::test(flavor = "current_thread")]
async fn a_plugin_that_cannot_start_within_its_own_memory_limit_is_refused_at_start() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
        state_dir = "{dir}/state"
        [providers.tight]
        plugin = "{hostile}"
        base_url = "{url}"
        [providers.tight.plugin_limits]
        max_memory_mib = 1
        "#,
        dir = dir.path().display(),
        hostile = HOSTILE_WASM,
        url = fake.url(""),
    );
    let message = build(&text).unwrap_err().to_string();
    assert!(
        message.starts_with("provider `tight`:") && message.contains("`describe`"),
        "{message}"
    );
}

/// Issue 27: a plugin that read an answer other than a 2xx as the success of a streamed call
/// reached an `unreachable!` in the host. The call ends with the answer as it came, and the
/// host goes on.
#[tokio::test(flavor = "current_thread")]
async fn a_plugin_that_reads_a_non_2xx_as_a_streamed_success_ends_the_call_not_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake().await;
    let sluice = relay_host(dir.path(), &fake, "").unwrap();
    for _ in 0..2 {
        fake.script(
            "/teapot",
            [Fault::Status {
                status: 418,
                code: "teapot",
            }],
        );
        match sluice.execute_stream(&read("/teapot")).await {
            StreamOutcome::Ended(t) => assert_eq!(t.last_status, Some(418), "{t:?}"),
            StreamOutcome::Streaming(_) => panic!("a 418 is not a stream"),
        }
    }
    assert_eq!(fake.attempts_on("/teapot"), 2, "each sent once");
    assert!(matches!(
        sluice.execute(&read("/ok")).await,
        Outcome::Succeeded { .. }
    ));
}
