//! The W3C trace context between a call's headers and its spans, through the OpenTelemetry
//! layer of the subscriber (`sluice::TraceContext`): the agent's `traceparent` becomes the
//! parent of the call's span, and each attempt carries its own span's to the provider.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// [`sluice::TraceContext`] by the W3C propagator.
#[derive(Debug, Default)]
pub struct W3c(TraceContextPropagator);

/// A call's headers, read as a carrier.
struct Headers<'a>(&'a [(String, String)]);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// The headers an attempt carries, written as a carrier.
struct Written(Vec<(String, String)>);

impl Injector for Written {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

impl sluice::TraceContext for W3c {
    fn adopt(&self, call: &Span, headers: &[(String, String)]) {
        let parent = self.0.extract(&Headers(headers));
        // Without a valid `traceparent` the call keeps the parent it has: the span it was
        // made in, if any (an embedder's), else none, and it starts a trace of its own.
        if parent.span().span_context().is_valid() {
            let _ = call.set_parent(parent);
        }
    }

    fn headers(&self, attempt: &Span) -> Vec<(String, String)> {
        let mut written = Written(Vec::with_capacity(2));
        self.0.inject_context(&attempt.context(), &mut written);
        written.0
    }
}
