//! Hostile plugins are contained: every kind of misbehaviour ends in a typed error, the
//! host stays up, later calls still work, and a plugin that keeps failing is quarantined
//! while the built-in policy answers (failing closed for writes).

use std::sync::Arc;
use std::time::Duration;

use sluice::clock::ManualClock;
use sluice::contract::{
    Classification, ProviderPolicy, Request, RequestClass, ResponsePart, Verdict, WireOutcome,
};
use sluice::guard::{AnsweredBy, GuardedPolicy, QuarantinePolicy};
use sluice::plugin::{Failure, LoadError, PluginLimits, RuntimeConfig};
use sluice_tests::{
    HOSTILE_WASM, TEST_DEADLINE, hostile, request, response, runtime, runtime_with,
};
use tracing_subscriber::filter::LevelFilter;

/// What the plugin reads from a 200 to `path`: its verdict, or how the call failed.
fn classify_path(plugin: &sluice::plugin::Plugin, path: &str) -> Result<Verdict, Failure> {
    let req = request(
        "GET",
        &format!("https://hostile.test{path}"),
        RequestClass::Read,
    );
    plugin
        .read_response(&req, &response(200, &[]), ResponsePart::Complete)
        .map(|r| r.classification.verdict)
        .map_err(|e| e.failure)
}

/// The guarded reading of a complete `outcome`: its classification and who gave it.
fn classify(
    g: &GuardedPolicy,
    req: &Request,
    outcome: &WireOutcome,
) -> (Classification, AnsweredBy) {
    let a = g.read_response(req, outcome, ResponsePart::Complete);
    (a.value.classification, a.by)
}

/// Each misbehaviour, then a normal call on the same plugin: the host is unharmed.
#[test]
fn every_misbehaviour_is_a_typed_error_and_the_next_call_works() {
    let rt = runtime_with(RuntimeConfig {
        call_deadline: TEST_DEADLINE,
        ..RuntimeConfig::default()
    });
    let p = hostile(&rt);
    type Expected = fn(&Failure) -> bool;
    let cases: &[(&str, Expected)] = &[
        ("/panic", |f| matches!(f, Failure::Trap(_))),
        ("/trap", |f| matches!(f, Failure::Trap(_))),
        ("/loop", |f| matches!(f, Failure::Timeout(_))),
        ("/recurse", |f| matches!(f, Failure::StackOverflow)),
        ("/oom", |f| matches!(f, Failure::OutOfMemory(_))),
        (
            "/sleep",
            |f| matches!(f, Failure::Trap(m) if m.contains("a plugin call cannot wait")),
        ),
        (
            "/oversized",
            |f| matches!(f, Failure::InvalidOutput(m) if m.contains("error-code")),
        ),
        (
            "/delay",
            |f| matches!(f, Failure::InvalidOutput(m) if m.contains("retry-after-ms")),
        ),
        (
            "/decline",
            |f| matches!(f, Failure::Declined(m) if m.contains("not my provider")),
        ),
    ];
    for (path, expected) in cases {
        let got = classify_path(&p, path);
        assert!(matches!(&got, Err(f) if expected(f)), "{path}: got {got:?}");
        assert_eq!(
            classify_path(&p, "/ok"),
            Ok(Verdict::Success),
            "after {path}"
        );
    }
}

#[test]
fn the_error_names_the_plugin_and_the_function() {
    let rt = runtime();
    let p = hostile(&rt);
    let req = request("GET", "https://hostile.test/loop", RequestClass::Read);
    let e = p
        .read_response(&req, &response(200, &[]), ResponsePart::Complete)
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("250 ms"), "{text}");
    assert!(
        text.contains("hostile") && text.contains("read-response") && text.contains("deadline"),
        "{text}"
    );
}

#[test]
fn a_loop_is_stopped_at_the_configured_deadline() {
    let rt = runtime_with(RuntimeConfig {
        call_deadline: Duration::from_millis(20),
        ..RuntimeConfig::default()
    });
    let p = hostile(&rt);
    assert_eq!(
        classify_path(&p, "/loop"),
        Err(Failure::Timeout(Duration::from_millis(20)))
    );
}

/// The engine ticks every half of the shortest deadline it serves: a plugin with its own
/// deadline far shorter than the runtime's makes it tick often enough to keep that one.
#[test]
fn a_plugins_own_short_deadline_is_kept_beside_the_runtimes_long_one() {
    let rt = runtime_with(RuntimeConfig {
        call_deadline: Duration::from_secs(2),
        ..RuntimeConfig::default()
    });
    let own = PluginLimits {
        call_deadline: Some(Duration::from_millis(5)),
        ..PluginLimits::default()
    };
    let p = rt
        .load_file_with(std::path::Path::new(HOSTILE_WASM), &own)
        .expect("load the hostile fixture");
    #[allow(clippy::disallowed_methods, reason = "measures how long the loop ran")]
    let began = std::time::Instant::now();
    assert_eq!(
        classify_path(&p, "/loop"),
        Err(Failure::Timeout(Duration::from_millis(5)))
    );
    // At the runtime's tick (1 s) the loop would run past 2 s; at the plugin's, ~15 ms.
    let ran = began.elapsed();
    assert!(
        ran < Duration::from_millis(500),
        "the loop ran {ran:?}: the tick stayed the runtime's"
    );
}

/// The epoch ticker rests once no call has run for a second; a call that loops after that
/// wakes it on its way in, and is stopped at its deadline as any other.
#[test]
fn a_loop_after_the_ticker_rested_is_still_stopped_at_its_deadline() {
    let rt = runtime_with(RuntimeConfig {
        call_deadline: Duration::from_millis(20),
        ..RuntimeConfig::default()
    });
    let p = Arc::new(hostile(&rt));
    assert_eq!(classify_path(&p, "/ok"), Ok(Verdict::Success));
    std::thread::sleep(Duration::from_millis(1_500));

    // On a thread of its own: a loop nobody stops fails the test instead of hanging it.
    let (done, answer) = std::sync::mpsc::channel();
    let looping = p.clone();
    std::thread::spawn(move || done.send(classify_path(&looping, "/loop")));
    let got = answer
        .recv_timeout(Duration::from_secs(10))
        .expect("the loop was never stopped: the resting ticker was not woken");
    assert_eq!(got, Err(Failure::Timeout(Duration::from_millis(20))));
}

/// Issue 12, item 8: a deadline of `u64::MAX - 1` ms wrapped the epoch deadline around, so
/// every call was interrupted at once (or the host panicked on the overflow).
#[test]
fn a_deadline_too_long_to_count_does_not_wrap_around() {
    let rt = runtime_with(RuntimeConfig {
        call_deadline: Duration::from_millis(u64::MAX - 1),
        ..RuntimeConfig::default()
    });
    let p = hostile(&rt);
    assert_eq!(classify_path(&p, "/ok"), Ok(Verdict::Success));
}

#[test]
fn memory_is_capped_at_the_configured_limit() {
    let rt = runtime_with(RuntimeConfig {
        max_memory_bytes: 4 << 20,
        call_deadline: TEST_DEADLINE,
        ..RuntimeConfig::default()
    });
    let p = hostile(&rt);
    assert_eq!(
        classify_path(&p, "/oom"),
        Err(Failure::OutOfMemory(4 << 20))
    );
    assert_eq!(classify_path(&p, "/ok"), Ok(Verdict::Success));
}

#[test]
fn oversized_lists_and_out_of_range_values_are_refused() {
    let rt = runtime_with(RuntimeConfig {
        call_deadline: TEST_DEADLINE,
        ..RuntimeConfig::default()
    });
    let p = hostile(&rt);
    let at = |path: &str| {
        request(
            "GET",
            &format!("https://hostile.test{path}"),
            RequestClass::Read,
        )
    };
    let read = |path: &str| {
        p.read_response(&at(path), &response(200, &[]), ResponsePart::Complete)
            .unwrap_err()
    };
    let invalid = |e: &sluice::plugin::PluginError, what: &str| matches!(&e.failure, Failure::InvalidOutput(m) if m.contains(what));
    let e = read("/flood");
    assert!(invalid(&e, "10000 entries"), "{e}");
    let e = read("/usage");
    assert!(invalid(&e, "usage is 18446744073709551615"), "{e}");
    let e = p.plan_request(&at("/scopes")).unwrap_err();
    assert!(invalid(&e, "scopes has 1000 entries"), "{e}");
    let e = p.plan_request(&at("/tenant")).unwrap_err();
    assert!(invalid(&e, "tenant is 4096 bytes"), "{e}");
    // The same plugin plans an ordinary request well.
    let plan = p.plan_request(&at("/ok")).unwrap();
    assert!(plan.scopes.is_empty() && plan.tenant.is_none());
}

#[test]
fn a_plugin_gets_no_capabilities() {
    let rt = runtime();
    let p = hostile(&rt);
    let req = request("GET", "https://hostile.test/escape", RequestClass::Read);
    let c = p
        .read_response(&req, &response(200, &[]), ResponsePart::Complete)
        .expect("the escape probe answers")
        .classification;
    assert_eq!(
        c.error_code.as_deref(),
        Some("env=0 args=0 clock=0 fs=denied net=denied"),
        "the sandbox let something through"
    );
}

#[test]
fn fresh_instances_per_call_contain_failures_too() {
    let rt = runtime_with(RuntimeConfig {
        reuse_instances: false,
        call_deadline: TEST_DEADLINE,
        ..RuntimeConfig::default()
    });
    let p = hostile(&rt);
    assert!(matches!(classify_path(&p, "/panic"), Err(Failure::Trap(_))));
    assert_eq!(classify_path(&p, "/ok"), Ok(Verdict::Success));
}

fn guarded(clock: &Arc<ManualClock>) -> GuardedPolicy {
    let rt = runtime();
    GuardedPolicy::new(hostile(&rt), QuarantinePolicy::default(), clock.clone())
}

#[test]
fn a_plugin_that_keeps_failing_is_quarantined_and_the_fallback_answers() {
    let clock = Arc::new(ManualClock::starting_at(0));
    let g = guarded(&clock);
    let trap = request("GET", "https://hostile.test/trap", RequestClass::Read);
    let limited = response(429, &[("Retry-After", "7")]);
    for i in 1..=3 {
        let (c, by) = classify(&g, &trap, &limited);
        assert!(matches!(by, AnsweredBy::Fallback(_)), "failure {i}: {by:?}");
        // The fallback still reads the response the generic way.
        assert_eq!(c.verdict, Verdict::RateLimited);
        assert_eq!(c.retry_after_ms, Some(7000));
    }
    assert_eq!(g.health().quarantines, 1);
    // Quarantined: even a call the plugin would answer well goes to the fallback.
    let ok = request("GET", "https://hostile.test/ok", RequestClass::Read);
    assert!(matches!(
        classify(&g, &ok, &response(200, &[])).1,
        AnsweredBy::Quarantined(_)
    ));
    // Every call of the plugin is quarantined, planning too.
    assert!(matches!(g.plan_request(&ok).by, AnsweredBy::Quarantined(_)));
    // After the quarantine, one probe; it succeeds and the plugin is back.
    clock.advance(QuarantinePolicy::default().duration + Duration::from_millis(1));
    assert!(matches!(
        classify(&g, &ok, &response(200, &[])).1,
        AnsweredBy::Plugin
    ));
    assert_eq!(g.health().consecutive_failures, 0);
    assert!(matches!(
        classify(&g, &ok, &response(200, &[])).1,
        AnsweredBy::Plugin
    ));
}

#[test]
fn a_quarantine_and_its_end_are_counted_and_every_plugin_call_is_timed() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let clock = Arc::new(ManualClock::starting_at(0));
    let g = guarded(&clock);
    let name = g.plugin().name().to_owned();
    let trap = request("GET", "https://hostile.test/trap", RequestClass::Read);
    let ok = request("GET", "https://hostile.test/ok", RequestClass::Read);
    // What was recorded since the last look (a snapshot drains counters and histograms).
    let since = || {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter(|(k, ..)| k.key().labels().any(|l| l.value() == name))
            .map(|(k, _, _, v)| (k.key().name().to_owned(), v))
            .collect::<std::collections::HashMap<String, DebugValue>>()
    };
    let (quarantined, lifted) = metrics::with_local_recorder(&recorder, || {
        for _ in 0..3 {
            classify(&g, &trap, &response(429, &[]));
        }
        let quarantined = since();
        // A quarantined call never reaches the plugin: it is not timed.
        classify(&g, &ok, &response(200, &[]));
        clock.advance(QuarantinePolicy::default().duration + Duration::from_millis(1));
        classify(&g, &ok, &response(200, &[]));
        (quarantined, since())
    });
    let gauge = |m: &std::collections::HashMap<String, DebugValue>| match &m
        [sluice::observe::PLUGIN_QUARANTINED]
    {
        DebugValue::Gauge(v) => v.0,
        other => panic!("{other:?}"),
    };
    let timed = |m: &std::collections::HashMap<String, DebugValue>| match &m
        [sluice::observe::PLUGIN_CALL]
    {
        DebugValue::Histogram(calls) => calls.len(),
        other => panic!("{other:?}"),
    };
    assert_eq!(gauge(&quarantined), 1.0, "{quarantined:?}");
    assert!(
        matches!(
            quarantined[sluice::observe::PLUGIN_FAILURES],
            DebugValue::Counter(3)
        ),
        "{quarantined:?}"
    );
    assert_eq!(
        timed(&quarantined),
        6,
        "three traps, each asked again without its body (and trapping again)"
    );
    assert_eq!(gauge(&lifted), 0.0, "the probe lifted it: {lifted:?}");
    assert_eq!(timed(&lifted), 1, "the probe alone: {lifted:?}");
}

#[test]
fn a_failed_probe_renews_the_quarantine_at_once() {
    let clock = Arc::new(ManualClock::starting_at(0));
    let g = guarded(&clock);
    let trap = request("GET", "https://hostile.test/trap", RequestClass::Read);
    for _ in 0..3 {
        classify(&g, &trap, &response(200, &[]));
    }
    clock.advance(Duration::from_secs(61));
    assert!(matches!(
        classify(&g, &trap, &response(200, &[])).1,
        AnsweredBy::Fallback(_)
    ));
    assert_eq!(g.health().quarantines, 2);
    assert!(matches!(
        classify(&g, &trap, &response(200, &[])).1,
        AnsweredBy::Quarantined(_)
    ));
}

#[test]
fn declining_is_not_a_fault() {
    let clock = Arc::new(ManualClock::starting_at(0));
    let g = guarded(&clock);
    let decline = request("GET", "https://hostile.test/decline", RequestClass::Read);
    for _ in 0..10 {
        assert!(matches!(
            classify(&g, &decline, &response(200, &[])).1,
            AnsweredBy::Fallback(_)
        ));
    }
    let h = g.health();
    assert_eq!((h.total_failures, h.quarantines), (0, 0));
}

#[test]
fn an_invalid_plan_is_replaced_by_the_built_in_one() {
    let clock = Arc::new(ManualClock::starting_at(0));
    let g = guarded(&clock);
    let req = request("GET", "https://hostile.test/scopes", RequestClass::Read);
    let a = g.plan_request(&req);
    assert!(
        matches!(&a.by, AnsweredBy::Fallback(e) if matches!(e.failure, Failure::InvalidOutput(_))),
        "{:?}",
        a.by
    );
    assert!(a.value.scopes.is_empty(), "no scope from an invalid plan");
    assert_eq!(a.value.cost.len(), 1, "the built-in plan: one request");
    assert_eq!(g.health().total_failures, 1);
}

#[test]
fn the_fallback_fails_closed_for_writes() {
    let clock = Arc::new(ManualClock::starting_at(0));
    let g = guarded(&clock);
    let write = request(
        "POST",
        "https://hostile.test/panic",
        RequestClass::UncertainWrite,
    );
    for status in [429, 500, 503] {
        let (c, by) = classify(&g, &write, &response(status, &[]));
        assert!(!matches!(by, AnsweredBy::Plugin));
        assert_eq!(c.verdict, Verdict::OutcomeUnknown, "status {status}");
        assert_eq!(c.should_retry, Some(false));
    }
}

#[test]
fn credentials_never_reach_a_plugin() {
    let clock = Arc::new(ManualClock::starting_at(0));
    let g = guarded(&clock);
    let mut req = request("POST", "https://hostile.test/echo", RequestClass::Read);
    req.headers = sluice::headers::encode_fields([
        ("content-type", "application/json"),
        ("Authorization", "Bearer sk-live-secret"),
        ("x-api-key", "key-secret"),
    ])
    .unwrap();
    let (c, by) = classify(&g, &req, &response(200, &[]));
    assert!(matches!(by, AnsweredBy::Plugin), "{by:?}");
    let seen = c.error_code.unwrap_or_default();
    assert_eq!(
        seen,
        "content-type:application/json\nAuthorization:[redacted]\nx-api-key:[redacted]\n"
    );
}

/// Credentials are redacted by the plugin itself, not only behind the guard: whatever calls
/// it (the vector runner, an embedder), the plugin never sees them.
#[test]
fn credentials_never_reach_a_plugin_called_directly() {
    let rt = runtime();
    let p = hostile(&rt);
    let mut req = request("POST", "https://hostile.test/echo", RequestClass::Read);
    req.headers = sluice::headers::encode_fields([
        ("Cookie", "session=secret-cookie"),
        ("Proxy-Authorization", "Basic secret-proxy"),
        ("api-key", "secret-azure"),
        ("accept", "*/*"),
    ])
    .unwrap();
    let seen = p
        .read_response(&req, &response(200, &[]), ResponsePart::Complete)
        .unwrap()
        .classification
        .error_code
        .unwrap_or_default();
    assert_eq!(
        seen,
        "Cookie:[redacted]\nProxy-Authorization:[redacted]\napi-key:[redacted]\naccept:*/*\n"
    );
}

/// Issue 12, item 10: "plugin `bundled plugin `ietf``" nested the quotes.
#[test]
fn a_describe_failure_names_the_plugin_once() {
    let rt = runtime_with(RuntimeConfig {
        max_memory_bytes: 64 << 10,
        call_deadline: TEST_DEADLINE,
        ..RuntimeConfig::default()
    });
    let e = rt.load_bundled("ietf").unwrap_err();
    assert!(matches!(e, LoadError::Describe { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with("bundled plugin `ietf`: `describe` "),
        "{text}"
    );
    assert_eq!(text.matches("ietf").count(), 1, "{text}");
}

#[test]
fn load_errors_name_the_input_and_what_to_do() {
    let rt = runtime();
    let e = rt.load("garbage.wasm", b"not a component").unwrap_err();
    assert!(matches!(e, LoadError::Invalid { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("garbage.wasm") && text.contains("wasm32-wasip2"),
        "{text}"
    );

    let e = rt
        .load_file(std::path::Path::new("/nonexistent/p.wasm"))
        .unwrap_err();
    assert!(
        matches!(e, LoadError::Read { .. }) && e.to_string().contains("/nonexistent/p.wasm"),
        "{e}"
    );

    let e = rt.load_bundled("nosuch").unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("nosuch") && text.contains("openai") && text.contains("ietf"),
        "{text}"
    );
}

/// Collects what a tracing subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_plugin_cannot_flood_the_log() {
    let captured = Captured::default();
    let sink = captured.clone();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(move || sink.clone())
        .with_ansi(false);
    let verdict = {
        let _log = sluice_tests::log_capture::capture(LevelFilter::INFO, layer);
        let rt = runtime();
        let p = hostile(&rt);
        classify_path(&p, "/log")
    };
    assert_eq!(verdict, Ok(Verdict::Success));
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("plugin=\"hostile\"") || l.contains("plugin=hostile"))
        .collect();
    assert_eq!(lines.len(), 16, "the per-call cap: {}", lines.len());
    assert!(
        lines.iter().all(|l| l.len() < 1024),
        "messages are truncated"
    );
}
