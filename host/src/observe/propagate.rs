//! The trace context a call carries across sluice (W3C Trace Context: `traceparent`,
//! `tracestate`): the caller's is the parent of the call's span, and each attempt goes to the
//! provider with its own span as the parent.
//!
//! sluice's spans are `tracing` spans, which know nothing of trace ids; the subscriber that
//! exports them does. So the library asks a [`TraceContext`] the embedder installs (the
//! `sluice` command installs one when it exports over OTLP, `[telemetry]`): it adopts the
//! caller's context for the call's span, and writes the headers for an attempt's. Without
//! one, a call's headers go to the provider as the caller gave them, its `traceparent` too:
//! nothing changes.

use std::sync::OnceLock;

use tracing::Span;

/// The headers of the W3C Trace Context, lower case.
pub const TRACE_HEADERS: [&str; 2] = ["traceparent", "tracestate"];

/// Carries the trace context between a call's headers and its spans.
pub trait TraceContext: Send + Sync + std::fmt::Debug {
    /// Makes the context in `headers` (the call's, as the caller gave them: `traceparent`,
    /// `tracestate`) the parent of `call`, the call's span, before it is first entered. A
    /// call without one, or with one that does not parse, keeps the parent it has (the span
    /// it was made in, if any; else it starts a trace of its own).
    fn adopt(&self, call: &Span, headers: &[(String, String)]);

    /// The trace headers an attempt carries to the provider: the context of `attempt`, its
    /// span, as `(name, value)` pairs; they replace any the caller sent. Empty: the call's
    /// headers go unchanged.
    fn headers(&self, attempt: &Span) -> Vec<(String, String)>;
}

static INSTALLED: OnceLock<Box<dyn TraceContext>> = OnceLock::new();

/// Installs the process's trace context, once, before the first call (as a `tracing`
/// subscriber is): `Err` gives it back when one was installed already.
pub fn install_trace_context(context: Box<dyn TraceContext>) -> Result<(), Box<dyn TraceContext>> {
    INSTALLED.set(context)
}

/// The installed trace context, if any.
pub(crate) fn installed() -> Option<&'static dyn TraceContext> {
    INSTALLED.get().map(|c| &**c)
}

/// Whether `name` is a header of the W3C Trace Context, in any case.
pub(crate) fn is_trace_header(name: &str) -> bool {
    TRACE_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
}
