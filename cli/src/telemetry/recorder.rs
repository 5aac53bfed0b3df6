//! The library's metrics, recorded through the `metrics` facade, onto OpenTelemetry's
//! instruments: a counter onto a counter, a gauge onto a gauge, a histogram onto a
//! histogram (its `_seconds` ones with sluice's buckets, as Prometheus gets them). The names
//! and labels are the ones `/metrics` serves (`sluice::observe`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;

/// A `metrics` recorder that records onto `meter`.
#[derive(Debug)]
pub struct OtelRecorder {
    meter: Meter,
    /// What `describe_*` said of each name, for the instruments made after.
    described: Mutex<HashMap<String, SharedString>>,
}

impl OtelRecorder {
    pub fn new(meter: Meter) -> Self {
        Self {
            meter,
            described: Mutex::default(),
        }
    }

    /// What `describe_*` said of `name`; empty when nothing was.
    fn description(&self, name: &str) -> String {
        let described = self
            .described
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        described
            .get(name)
            .map_or_else(String::new, |d| d.to_string())
    }

    fn describe(&self, key: KeyName, description: SharedString) {
        let mut described = self
            .described
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        described.insert(key.as_str().to_owned(), description);
    }
}

/// A series' labels as attributes.
fn attributes(key: &Key) -> Vec<KeyValue> {
    key.labels()
        .map(|l| KeyValue::new(l.key().to_owned(), l.value().to_owned()))
        .collect()
}

/// The unit of a name: seconds for `_seconds`, none otherwise.
fn seconds(name: &str) -> bool {
    name.ends_with("_seconds")
}

impl Recorder for OtelRecorder {
    fn describe_counter(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(key, description);
    }

    fn describe_gauge(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(key, description);
    }

    fn describe_histogram(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(key, description);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let name = key.name().to_owned();
        let builder = self.meter.u64_counter(name.clone());
        let builder = builder.with_description(self.description(&name));
        Counter::from_arc(Arc::new(OtelCounter {
            counter: builder.build(),
            attributes: attributes(key),
            total: AtomicU64::new(0),
        }))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let name = key.name().to_owned();
        let builder = self.meter.f64_gauge(name.clone());
        let builder = builder.with_description(self.description(&name));
        Gauge::from_arc(Arc::new(OtelGauge {
            gauge: builder.build(),
            attributes: attributes(key),
            value: Mutex::new(0.0),
        }))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let name = key.name().to_owned();
        let mut builder = self.meter.f64_histogram(name.clone());
        builder = builder.with_description(self.description(&name));
        if seconds(&name) {
            builder = builder
                .with_unit("s")
                .with_boundaries(sluice::observe::SECONDS_BUCKETS.to_vec());
        }
        Histogram::from_arc(Arc::new(OtelHistogram {
            histogram: builder.build(),
            attributes: attributes(key),
        }))
    }
}

/// A counter series: OpenTelemetry's counters only add, so an absolute value is added as
/// its rise over the last one.
#[derive(Debug)]
struct OtelCounter {
    counter: opentelemetry::metrics::Counter<u64>,
    attributes: Vec<KeyValue>,
    total: AtomicU64,
}

impl CounterFn for OtelCounter {
    fn increment(&self, value: u64) {
        self.total.fetch_add(value, Ordering::Relaxed);
        self.counter.add(value, &self.attributes);
    }

    fn absolute(&self, value: u64) {
        let before = self.total.fetch_max(value, Ordering::Relaxed);
        if value > before {
            self.counter.add(value - before, &self.attributes);
        }
    }
}

/// A gauge series: its value kept here, as `metrics` may move it up and down and
/// OpenTelemetry's gauge takes values only.
#[derive(Debug)]
struct OtelGauge {
    gauge: opentelemetry::metrics::Gauge<f64>,
    attributes: Vec<KeyValue>,
    value: Mutex<f64>,
}

impl OtelGauge {
    fn update(&self, change: impl FnOnce(f64) -> f64) {
        let mut value = self.value.lock().unwrap_or_else(PoisonError::into_inner);
        *value = change(*value);
        self.gauge.record(*value, &self.attributes);
    }
}

impl GaugeFn for OtelGauge {
    fn increment(&self, value: f64) {
        self.update(|v| v + value);
    }

    fn decrement(&self, value: f64) {
        self.update(|v| v - value);
    }

    fn set(&self, value: f64) {
        self.update(|_| value);
    }
}

/// A histogram series.
#[derive(Debug)]
struct OtelHistogram {
    histogram: opentelemetry::metrics::Histogram<f64>,
    attributes: Vec<KeyValue>,
}

impl HistogramFn for OtelHistogram {
    fn record(&self, value: f64) {
        self.histogram.record(value, &self.attributes);
    }
}
