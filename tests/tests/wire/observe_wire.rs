//! What a call reports while it runs, against the fake provider on loopback: the spans of a
//! call and of its attempts with what each learned, the events of a hold and a retry, and
//! the metrics — each checked against what the provider received, and none carrying a
//! secret. Spans are captured by a recording layer and metrics by a debugging recorder, both
//! installed for this thread only, so tests running beside these do not interfere.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::observe;
use sluice::retry::RetryConfig;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, RetryAfter, Style};
use sluice_tests::stack::{SECRET, executor};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

const CHAT: &str = "/v1/chat/completions";

/// A span as recorded: its name, its parent's index, and every field recorded on it.
#[derive(Debug, Clone)]
struct SpanRecord {
    name: &'static str,
    parent: Option<usize>,
    fields: BTreeMap<String, String>,
}

/// An event as recorded: its message and fields.
#[derive(Debug, Clone)]
struct EventRecord {
    fields: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct Recorded {
    spans: Vec<SpanRecord>,
    /// The index in `spans` of each live span id.
    ids: BTreeMap<u64, usize>,
    events: Vec<EventRecord>,
}

/// A layer that keeps every span and event, with their fields as text.
#[derive(Debug, Clone, Default)]
struct Recording(Arc<Mutex<Recorded>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recording {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent_id = if attrs.is_root() {
            None
        } else if let Some(p) = attrs.parent() {
            Some(p.clone())
        } else {
            ctx.current_span().id().cloned()
        };
        let mut r = self.0.lock().unwrap();
        let parent = parent_id.and_then(|p| r.ids.get(&p.into_u64()).copied());
        r.spans.push(SpanRecord {
            name: attrs.metadata().name(),
            parent,
            fields,
        });
        let index = r.spans.len() - 1;
        r.ids.insert(id.into_u64(), index);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut r = self.0.lock().unwrap();
        // A span this capture did not see begin (on another thread) is not its own.
        let Some(&index) = r.ids.get(&id.into_u64()) else {
            return;
        };
        values.record(&mut Fields(&mut r.spans[index].fields));
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().events.push(EventRecord { fields });
    }
}

/// The metrics recorded, by name and labels (`name{k=v,...}`), with their values as text.
fn metrics(snapshotter: &Snapshotter) -> BTreeMap<String, (MetricKind, DebugValue)> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| (series(&key), (key.kind(), value)))
        .collect()
}

fn series(key: &CompositeKey) -> String {
    let mut labels: Vec<String> = key
        .key()
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.key().name(), labels.join(","))
}

fn counter(m: &BTreeMap<String, (MetricKind, DebugValue)>, series: &str) -> u64 {
    match m.get(series) {
        Some((MetricKind::Counter, DebugValue::Counter(n))) => *n,
        other => panic!("no counter {series}: {other:?} among {:#?}", m.keys()),
    }
}

/// A chat call; the host's credentials send [`SECRET`] with it.
fn chat(fake: &FakeProvider) -> Call {
    Call::post(
        "openai",
        fake.url(CHAT),
        br#"{"model":"gpt-4o","max_tokens":16}"#.to_vec(),
    )
    .credential("team-key")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json")
}

fn fast_retry() -> RetryConfig {
    RetryConfig {
        backoff_base_ms: 50,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    }
}

/// Runs `f` on a current-thread runtime with the recording layer and the debugging recorder
/// installed for this thread.
fn watched<T>(f: impl AsyncFnOnce() -> T) -> (T, Recorded, Snapshotter) {
    let recording = Recording::default();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let out = {
        let _tracing = sluice_tests::log_capture::capture(LevelFilter::TRACE, recording.clone());
        metrics::with_local_recorder(&recorder, || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(f())
        })
    };
    let recorded = std::mem::take(&mut *recording.0.lock().unwrap());
    (out, recorded, snapshotter)
}

#[test]
fn a_call_that_meets_a_429_then_succeeds_shows_both_attempts_and_counts_them() {
    let ((outcome, fake), rec, snapshotter) = watched(async || {
        let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
            .await
            .unwrap();
        fake.script(
            CHAT,
            [Fault::RateLimited {
                retry_after: Some(RetryAfter::Millis(200)),
            }],
        );
        let ex = executor("openai", fast_retry(), Duration::from_secs(5));
        let outcome = ex.execute(&chat(&fake)).await;
        (outcome, fake)
    });
    assert!(
        matches!(outcome, Outcome::Succeeded { attempts: 2, .. }),
        "{outcome:?}"
    );
    let at_provider: Vec<Option<u16>> = fake.attempts().iter().map(|a| a.status).collect();
    assert_eq!(
        at_provider,
        [Some(429), Some(200)],
        "what the provider received"
    );

    // One call span, with what the call is and how it ended.
    let calls: Vec<(usize, &SpanRecord)> = rec
        .spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.name == observe::CALL_SPAN)
        .collect();
    assert_eq!(calls.len(), 1, "{:#?}", rec.spans);
    let (call_index, call) = calls[0];
    for (field, value) in [
        ("provider", "openai"),
        ("credential", "team-key"),
        ("tenant", "acme"),
        ("class", "read"),
        ("attempts", "2"),
        ("status", "200"),
        ("outcome", "succeeded"),
    ] {
        assert_eq!(
            call.fields.get(field).map(String::as_str),
            Some(value),
            "{field} of {call:?}"
        );
    }
    assert!(call.fields.contains_key("waited_ms"), "{call:?}");

    // Two attempt spans under it: the 429, read as rate-limited and retried, then the 200.
    let attempts: Vec<&SpanRecord> = rec
        .spans
        .iter()
        .filter(|s| s.name == observe::ATTEMPT_SPAN)
        .collect();
    assert_eq!(attempts.len(), 2, "{attempts:#?}");
    let expected = [
        ("1", "429", "rate-limited", "retry"),
        ("2", "200", "success", "done"),
    ];
    for (span, (attempt, status, verdict, decision)) in attempts.iter().zip(expected) {
        assert_eq!(
            span.parent,
            Some(call_index),
            "{span:?} is not the call's child"
        );
        let field = |f: &str| span.fields.get(f).map(String::as_str);
        assert_eq!(field("attempt"), Some(attempt), "{span:?}");
        assert_eq!(field("status"), Some(status), "{span:?}");
        assert_eq!(field("verdict"), Some(verdict), "{span:?}");
        assert_eq!(field("decision"), Some(decision), "{span:?}");
        assert!(field("waited_ms").is_some(), "{span:?}");
    }
    // The hold came before the retry, and both say why.
    let message = |e: &EventRecord| e.fields.get("message").cloned().unwrap_or_default();
    let held = rec
        .events
        .iter()
        .position(|e| message(e).starts_with("scope held"))
        .expect("a scope-held event");
    let retried = rec
        .events
        .iter()
        .position(|e| message(e) == "retry scheduled")
        .expect("a retry event");
    assert!(held < retried, "{:#?}", rec.events);
    assert_eq!(rec.events[held].fields["scope"], "openai/team-key");
    assert_eq!(rec.events[retried].fields["reason"], "rate-limited");

    // The secret is in no span and no event.
    let every_field = rec
        .spans
        .iter()
        .flat_map(|s| s.fields.values())
        .chain(rec.events.iter().flat_map(|e| e.fields.values()));
    for value in every_field {
        assert!(!value.contains(SECRET), "a secret was recorded: {value}");
        assert!(!value.contains("sk-live"), "a secret was recorded: {value}");
    }

    let m = metrics(&snapshotter);
    assert_eq!(
        counter(
            &m,
            "sluice_responses_429_total{credential=team-key,provider=openai}"
        ),
        1
    );
    assert_eq!(
        counter(
            &m,
            "sluice_retries_total{provider=openai,reason=rate-limited}"
        ),
        1
    );
    assert_eq!(
        counter(
            &m,
            "sluice_calls_admitted_total{credential=team-key,provider=openai,tenant=acme}"
        ),
        2,
        "one admission per attempt"
    );
    assert_eq!(
        counter(&m, "sluice_attempts_total{provider=openai,status=4xx}"),
        1
    );
    assert_eq!(
        counter(&m, "sluice_attempts_total{provider=openai,status=2xx}"),
        1
    );
    assert_eq!(
        counter(
            &m,
            "sluice_calls_ended_total{outcome=succeeded,provider=openai}"
        ),
        1
    );
    assert_eq!(counter(&m, "sluice_scope_holds_total{provider=openai}"), 1);
    match &m["sluice_plugin_call_seconds{function=read-response,plugin=openai}"] {
        (MetricKind::Histogram, DebugValue::Histogram(v)) => assert_eq!(v.len(), 2),
        other => panic!("{other:?}"),
    }
    match &m["sluice_queue_depth{scope=openai/team-key}"] {
        (MetricKind::Gauge, DebugValue::Gauge(v)) => assert_eq!(v.0, 0.0, "nothing waits"),
        other => panic!("{other:?}"),
    }
    for series in m.keys() {
        assert!(series.starts_with("sluice_"), "{series}");
        assert!(!series.contains("sk-live"), "a secret in a label: {series}");
        assert!(!series.contains("127.0.0.1"), "a URL in a label: {series}");
    }
}

fn gauge(m: &BTreeMap<String, (MetricKind, DebugValue)>, series: &str) -> f64 {
    match m.get(series) {
        Some((MetricKind::Gauge, DebugValue::Gauge(v))) => v.0,
        other => panic!("no gauge {series}: {other:?} among {:#?}", m.keys()),
    }
}

fn messages(rec: &Recorded) -> Vec<String> {
    rec.events
        .iter()
        .filter_map(|e| e.fields.get("message").cloned())
        .collect()
}

#[test]
fn identical_failures_open_the_breaker_and_its_gauge_and_events_say_so() {
    let ((outcomes, fake), rec, snapshotter) = watched(async || {
        let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
            .await
            .unwrap();
        let revoked = Fault::Status {
            status: 401,
            code: "invalid_api_key",
        };
        fake.script(CHAT, [revoked, revoked]);
        let retry = RetryConfig {
            breaker_threshold: 2,
            ..fast_retry()
        };
        let ex = executor("openai", retry, Duration::from_secs(5));
        let mut outcomes = Vec::new();
        for _ in 0..3 {
            outcomes.push(ex.execute(&chat(&fake)).await);
        }
        (outcomes, fake)
    });
    assert_eq!(
        fake.attempts().len(),
        2,
        "the open breaker sent nothing more"
    );
    assert!(
        matches!(&outcomes[2], Outcome::Ended(t) if matches!(t.reason, sluice::execute::Reason::BreakerOpen(_))),
        "{:?}",
        outcomes[2]
    );
    let m = metrics(&snapshotter);
    assert_eq!(
        gauge(
            &m,
            "sluice_breaker_open{credential=team-key,provider=openai}"
        ),
        1.0
    );
    assert_eq!(
        counter(
            &m,
            "sluice_calls_ended_total{outcome=breaker-open,provider=openai}"
        ),
        1
    );
    assert_eq!(
        counter(
            &m,
            "sluice_calls_ended_total{outcome=stopped,provider=openai}"
        ),
        2
    );
    let opened = rec
        .events
        .iter()
        .find(|e| {
            e.fields
                .get("message")
                .is_some_and(|m| m.starts_with("breaker opened"))
        })
        .unwrap_or_else(|| panic!("no breaker event: {:?}", messages(&rec)));
    assert_eq!(opened.fields["error"], "401 invalid_api_key");
    assert_eq!(opened.fields["failures"], "2");
}

#[test]
fn a_request_past_the_queue_bound_is_refused_and_counted_with_its_reason() {
    let ((outcomes, fake), rec, snapshotter) = watched(async || {
        let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
            .await
            .unwrap();
        // One request in flight, one waiting: a third has no place.
        let admission = "[queue]\nmax_queued = 1\n\n\
                         [providers.openai.limits]\nconcurrent_requests = 1\n";
        let transport = sluice::transport::Transport::new(sluice::transport::Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(5),
            generation: Duration::from_secs(5),
            idle: Duration::from_secs(5),
        })
        .unwrap();
        let ex = sluice_tests::stack::executor_with("openai", admission, fast_retry(), transport);
        let c = chat(&fake);
        let (a, b, d) = tokio::join!(ex.execute(&c), ex.execute(&c), ex.execute(&c));
        (vec![a, b, d], fake)
    });
    let refused: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Ended(t) if matches!(t.reason, sluice::execute::Reason::Refused(_))))
        .collect();
    assert_eq!(refused.len(), 1, "{outcomes:?}");
    assert_eq!(fake.attempts().len(), 2, "the refused call sent nothing");
    let m = metrics(&snapshotter);
    assert_eq!(
        counter(
            &m,
            "sluice_calls_refused_total{provider=openai,reason=queue-full}"
        ),
        1
    );
    assert_eq!(
        counter(
            &m,
            "sluice_calls_ended_total{outcome=refused,provider=openai}"
        ),
        1
    );
    let event = rec
        .events
        .iter()
        .find(|e| {
            e.fields
                .get("message")
                .is_some_and(|m| m == "admission refused a request")
        })
        .unwrap_or_else(|| panic!("no refusal event: {:?}", messages(&rec)));
    assert_eq!(event.fields["reason"], "queue-full");
    assert_eq!(event.fields["provider"], "openai");
}
