//! `sluice serve`'s OpenTelemetry export (`[telemetry]`, `OTEL_*`): its spans through
//! tracing's OpenTelemetry layer, its metrics through a `metrics` recorder onto
//! OpenTelemetry's instruments, both over OTLP/HTTP with protobuf bodies; and the W3C trace
//! context carried from the agent's request to the provider. Off unless the configuration
//! or the environment asks (`settings`).

mod client;
mod context;
mod recorder;
pub mod settings;

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};

pub use recorder::OtelRecorder;
use settings::Settings;

/// The export running: what flushes it at the end.
#[derive(Debug)]
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

/// What the export gives the rest of the process: the tracer for the subscriber's layer and
/// the recorder for the metrics facade, each when its signal is on.
#[derive(Debug)]
pub struct Parts {
    pub telemetry: Telemetry,
    pub tracer: Option<Tracer>,
    pub recorder: Option<OtelRecorder>,
}

/// Starts the export `settings` describe; its requests run on `runtime`. With traces on,
/// installs the W3C trace context in the library (`sluice::install_trace_context`).
///
/// # Errors
/// An exporter that cannot be built (an endpoint that is not a URL).
pub fn start(settings: &Settings, runtime: tokio::runtime::Handle) -> anyhow::Result<Parts> {
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .build();
    let headers = settings.headers.as_ref().map_or(&[][..], |h| &h.0[..]);
    let client = client::OnRuntime::new(runtime, settings.timeout, headers)?;
    let mut tracer = None;
    let mut provider = None;
    if settings.traces {
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_timeout(settings.timeout);
        if let Some(endpoint) = &settings.endpoint {
            builder = builder.with_endpoint(signal_url(endpoint, "traces"));
        }
        let exporter = builder.build().context("the OTLP span exporter")?;
        let traces = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.clone())
            .build();
        tracer = Some(traces.tracer("sluice"));
        provider = Some(traces);
        // Once per process: a second `start` (none happens) would keep the first's.
        let _ = sluice::install_trace_context(Box::new(context::W3c::default()));
    }
    let mut meter = None;
    let mut recorder = None;
    if settings.metrics {
        let mut builder = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_timeout(settings.timeout);
        if let Some(endpoint) = &settings.endpoint {
            builder = builder.with_endpoint(signal_url(endpoint, "metrics"));
        }
        let exporter = builder.build().context("the OTLP metric exporter")?;
        let reader = PeriodicReader::builder(exporter)
            .with_interval(settings.metrics_interval)
            .build();
        let metrics = SdkMeterProvider::builder()
            .with_reader(reader)
            .with_resource(resource)
            .build();
        recorder = Some(OtelRecorder::new(
            opentelemetry::metrics::MeterProvider::meter(&metrics, "sluice"),
        ));
        meter = Some(metrics);
    }
    Ok(Parts {
        telemetry: Telemetry {
            tracer: provider,
            meter,
        },
        tracer,
        recorder,
    })
}

/// A signal's URL under the base `endpoint`, as `OTEL_EXPORTER_OTLP_ENDPOINT` is read:
/// `http://c:4318` gives `http://c:4318/v1/traces`.
fn signal_url(endpoint: &str, signal: &str) -> String {
    format!("{}/v1/{signal}", endpoint.trim_end_matches('/'))
}

impl Telemetry {
    /// Exports what is left and stops: the spans still batched, the metrics as they are now.
    /// Blocks until done (each export bounded by the timeout); call it off the runtime's
    /// worker threads, or in `block_in_place`.
    pub fn shutdown(self) {
        if let Some(t) = self.tracer
            && let Err(e) = t.shutdown()
        {
            eprintln!("sluice serve: the last spans were not exported: {e}");
        }
        if let Some(m) = self.meter
            && let Err(e) = m.shutdown()
        {
            eprintln!("sluice serve: the last metrics were not exported: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_signal_goes_to_its_path_under_the_base() {
        assert_eq!(
            super::signal_url("http://c:4318/", "traces"),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            super::signal_url("https://c/otlp", "metrics"),
            "https://c/otlp/v1/metrics"
        );
    }
}
