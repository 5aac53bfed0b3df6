//! OpenTelemetry through `sluice serve` (`[telemetry]`): an OTLP/HTTP receiver on loopback
//! in this test, decoding what the sidecar exports with the protocol's own types
//! (`opentelemetry-proto`), stands in for a collector. An agent's call with a `traceparent`
//! arrives as a `sluice.call` span in the agent's trace with a `sluice.attempt` under it,
//! both with the GenAI attributes; the provider gets the attempt's span as its parent; the
//! metrics arrive with their labels. Without `[telemetry]` nothing is exported and the
//! agent's `traceparent` goes to the provider as it came.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

use crate::raw::post;
use crate::sidecar::{Deadline, Sidecar, World};

const AGENT_CHAT: &str = "/openai/v1/chat/completions";
const CHAT: &str =
    r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":16}"#;
/// The agent's trace and its span, as its own tracer would send them.
const AGENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const AGENT_SPAN: &str = "00f067aa0ba902b7";

fn agent_traceparent() -> String {
    format!("00-{AGENT_TRACE}-{AGENT_SPAN}-01")
}

/// What the receiver was sent, by path.
#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    /// The `x-collector-token` and `x-tenant-of-collector` each export came with.
    tokens: Vec<(Option<String>, Option<String>)>,
    metrics: Vec<ExportMetricsServiceRequest>,
    /// Any other path asked for, and any body that did not decode.
    other: Vec<String>,
}

/// An OTLP/HTTP receiver on loopback: HTTP/1.1 with `content-length`, as the exporter sends.
struct Receiver {
    url: String,
    received: Arc<Mutex<Received>>,
}

impl Receiver {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Received::default()));
        let kept = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Self { url, received }
    }

    fn spans(&self) -> Vec<Span> {
        let r = self.received.lock().unwrap();
        r.traces
            .iter()
            .flat_map(|t| &t.resource_spans)
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| s.spans.clone())
            .collect()
    }

    fn service_names(&self) -> Vec<String> {
        let r = self.received.lock().unwrap();
        let traces = r.traces.iter().flat_map(|t| &t.resource_spans);
        let traces = traces.filter_map(|r| r.resource.as_ref());
        let metrics = r.metrics.iter().flat_map(|m| &m.resource_metrics);
        let metrics = metrics.filter_map(|r| r.resource.as_ref());
        traces
            .chain(metrics)
            .filter_map(|r| text(&r.attributes, "service.name"))
            .collect()
    }

    /// Each data point's attributes of the metric `name`, with its kind.
    fn metric(&self, name: &str) -> Vec<(&'static str, Vec<KeyValue>)> {
        let r = self.received.lock().unwrap();
        let metrics = r.metrics.iter().flat_map(|m| &m.resource_metrics);
        let metrics = metrics
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics);
        let mut points = Vec::new();
        for m in metrics.filter(|m| m.name == name) {
            match &m.data {
                Some(metric::Data::Sum(s)) => {
                    points.extend(s.data_points.iter().map(|p| ("sum", p.attributes.clone())));
                }
                Some(metric::Data::Gauge(g)) => {
                    points.extend(
                        g.data_points
                            .iter()
                            .map(|p| ("gauge", p.attributes.clone())),
                    );
                }
                Some(metric::Data::Histogram(h)) => points.extend(
                    h.data_points
                        .iter()
                        .map(|p| ("histogram", p.attributes.clone())),
                ),
                _ => {}
            }
        }
        points
    }

    fn nothing(&self) -> bool {
        let r = self.received.lock().unwrap();
        r.traces.is_empty() && r.metrics.is_empty() && r.other.is_empty()
    }
}

/// Answers the requests of one connection, keeping what they carried.
fn serve(stream: TcpStream, received: &Mutex<Received>) {
    let mut writer = stream.try_clone().expect("a second handle");
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
        let mut length = 0;
        let (mut token, mut tenant) = (None, None);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                let v = v.trim();
                match n.to_ascii_lowercase().as_str() {
                    "content-length" => length = v.parse().unwrap_or(0),
                    "x-collector-token" => token = Some(v.to_owned()),
                    "x-tenant-of-collector" => tenant = Some(v.to_owned()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        {
            let mut r = received.lock().unwrap();
            r.tokens.push((token, tenant));
            match path.as_str() {
                "/v1/traces" => match ExportTraceServiceRequest::decode(&body[..]) {
                    Ok(t) => r.traces.push(t),
                    Err(e) => r.other.push(format!("{path}: {e}")),
                },
                "/v1/metrics" => match ExportMetricsServiceRequest::decode(&body[..]) {
                    Ok(m) => r.metrics.push(m),
                    Err(e) => r.other.push(format!("{path}: {e}")),
                },
                _ => r.other.push(path.clone()),
            }
        }
        // An empty Export*ServiceResponse: everything accepted.
        let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n\
                      content-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The value of attribute `key`, as text (a number is printed).
fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|a| a.key == key)?.value.as_ref()?;
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(n) => Some(n.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        _ => Some(format!("{value:?}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A span, as the test's output shows it: name, ids and attributes.
fn shown(span: &Span) -> String {
    let attributes: Vec<String> = span
        .attributes
        .iter()
        .map(|a| {
            let v: Option<&AnyValue> = a.value.as_ref();
            let v = v.map_or_else(String::new, |_| {
                text(std::slice::from_ref(a), &a.key).unwrap_or_default()
            });
            format!("{}={v}", a.key)
        })
        .collect();
    format!(
        "{} trace={} span={} parent={} [{}]",
        span.name,
        hex(&span.trace_id),
        hex(&span.span_id),
        hex(&span.parent_span_id),
        attributes.join(", ")
    )
}

#[test]
fn a_call_is_exported_as_spans_in_the_agents_trace_and_the_provider_gets_the_attempts_parent() {
    let receiver = Receiver::start();
    let world = World::new();
    world.configure(|text| {
        text + &format!(
            "\n[telemetry]\nendpoint = \"{}\"\nservice_name = \"sluice-under-test\"\n\
             metrics_interval_ms = 200\n[telemetry.headers]\nx-collector-token = \"from-table\"\n",
            receiver.url
        )
    });
    // The variable's headers are sent too; where both name one, the table's value.
    let headers = "x-collector-token=from-env,x-tenant-of-collector=env";
    let sidecar = Sidecar::start_in(&world.config(), &[("OTEL_EXPORTER_OTLP_HEADERS", headers)]);
    let traceparent = agent_traceparent();
    let answer = post(&sidecar, AGENT_CHAT, &[("traceparent", &traceparent)], CHAT);
    assert_eq!(answer.status, 200, "{answer:?}");

    // The provider got the agent's trace, with a parent of sluice's own.
    let attempts = world.openai.attempts();
    let sent = attempts[0]
        .traceparent
        .clone()
        .expect("a traceparent at the provider");
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    assert_eq!(parts[1], AGENT_TRACE, "the agent's trace id: {sent}");
    assert_ne!(
        parts[2], AGENT_SPAN,
        "the attempt's span is the parent: {sent}"
    );
    // A call without one starts a trace of its own, which the provider is sent.
    let answer = post(&sidecar, AGENT_CHAT, &[], CHAT);
    assert_eq!(answer.status, 200, "{answer:?}");
    let own = world.openai.attempts()[1].traceparent.clone();
    let own_trace = own
        .as_deref()
        .and_then(|t| t.split('-').nth(1))
        .map(str::to_owned);
    assert!(
        own_trace
            .as_deref()
            .is_some_and(|t| t != AGENT_TRACE && t.len() == 32),
        "{own:?}"
    );

    // The metrics arrive on their interval, while the sidecar runs.
    let deadline = Deadline::after(Duration::from_secs(30));
    while receiver.metric("sluice_calls_admitted_total").is_empty() {
        assert!(!deadline.passed(), "no metrics arrived");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A graceful stop exports the spans still batched.
    let (status, log) = sidecar.terminate();
    assert!(status.success(), "{log}");
    assert!(receiver.received.lock().unwrap().other.is_empty());

    let spans = receiver.spans();
    for span in &spans {
        eprintln!("received: {}", shown(span));
    }
    let in_trace = |name: &str, trace: &str| {
        spans
            .iter()
            .find(|s| s.name == name && hex(&s.trace_id) == trace)
            .unwrap_or_else(|| panic!("no {name} span in trace {trace} among {}", spans.len()))
    };
    let call = in_trace("sluice.call", AGENT_TRACE);
    let attempt = in_trace("sluice.attempt", AGENT_TRACE);
    let own_call = in_trace("sluice.call", own_trace.as_deref().unwrap());
    assert!(own_call.parent_span_id.is_empty(), "{}", shown(own_call));
    assert_eq!(hex(&call.trace_id), AGENT_TRACE, "{}", shown(call));
    assert_eq!(hex(&call.parent_span_id), AGENT_SPAN, "{}", shown(call));
    assert_eq!(hex(&attempt.trace_id), AGENT_TRACE, "{}", shown(attempt));
    assert_eq!(attempt.parent_span_id, call.span_id, "{}", shown(attempt));
    assert_eq!(
        hex(&attempt.span_id),
        parts[2],
        "the provider's parent is the attempt"
    );

    let call_has = |key: &str| text(&call.attributes, key);
    assert_eq!(call_has("gen_ai.system").as_deref(), Some("openai"));
    assert_eq!(
        call_has("gen_ai.request.model").as_deref(),
        Some("gpt-4o-mini")
    );
    let input = world.openai.attempts()[0].input_tokens.to_string();
    let output = world.openai.attempts()[0].output_tokens.to_string();
    assert_eq!(call_has("gen_ai.usage.input_tokens"), Some(input.clone()));
    assert_eq!(call_has("gen_ai.usage.output_tokens"), Some(output.clone()));
    assert_eq!(call_has("outcome").as_deref(), Some("succeeded"));
    assert_eq!(call_has("tenant").as_deref(), Some("acme"));
    assert!(call_has("waited_ms").is_some(), "{}", shown(call));
    let attempt_has = |key: &str| text(&attempt.attributes, key);
    assert_eq!(attempt_has("attempt").as_deref(), Some("1"));
    assert_eq!(attempt_has("admitted").as_deref(), Some("true"));
    assert!(attempt_has("waited_ms").is_some(), "{}", shown(attempt));
    assert_eq!(attempt_has("gen_ai.system").as_deref(), Some("openai"));
    assert_eq!(
        attempt_has("gen_ai.request.model").as_deref(),
        Some("gpt-4o-mini")
    );
    assert_eq!(attempt_has("gen_ai.usage.input_tokens"), Some(input));
    assert_eq!(attempt_has("gen_ai.usage.output_tokens"), Some(output));
    assert_eq!(attempt_has("status").as_deref(), Some("200"));

    let admitted = receiver.metric("sluice_calls_admitted_total");
    assert!(
        admitted.iter().any(|(kind, a)| *kind == "sum"
            && text(a, "provider").as_deref() == Some("openai")
            && text(a, "tenant").as_deref() == Some("acme")),
        "{admitted:?}"
    );
    let waits = receiver.metric("sluice_admission_wait_seconds");
    assert!(
        waits
            .iter()
            .any(|(kind, a)| *kind == "histogram"
                && text(a, "provider").as_deref() == Some("openai")),
        "{waits:?}"
    );
    let tokens = receiver.received.lock().unwrap().tokens.clone();
    let both = (Some("from-table".to_owned()), Some("env".to_owned()));
    assert!(tokens.iter().all(|t| *t == both), "{tokens:?}");
    let names = receiver.service_names();
    assert!(
        !names.is_empty() && names.iter().all(|n| n == "sluice-under-test"),
        "{names:?}"
    );
}

#[test]
fn without_telemetry_nothing_is_exported_and_the_agents_traceparent_goes_on_unchanged() {
    let receiver = Receiver::start();
    let world = World::new();
    // No `[telemetry]`, and no OTEL_* variable (the sidecars of these tests run without
    // them: `Sidecar::command`).
    let sidecar = world.serve();
    let traceparent = agent_traceparent();
    let answer = post(&sidecar, AGENT_CHAT, &[("traceparent", &traceparent)], CHAT);
    assert_eq!(answer.status, 200, "{answer:?}");
    let attempts = world.openai.attempts();
    assert_eq!(
        attempts[0].traceparent.as_deref(),
        Some(traceparent.as_str())
    );
    let (status, log) = sidecar.terminate();
    assert!(status.success(), "{log}");
    assert!(receiver.nothing(), "something was exported");
}
