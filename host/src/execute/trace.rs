//! What a call reports while it runs: its span, a span per attempt, and the executor's
//! metrics and events. The names and the reasons for them are in [`crate::observe`]; this
//! room only records, so the attempt loop reads as the design and not as bookkeeping.

use std::time::Duration;

use metrics::{Counter, Histogram};
use tracing::Span;
use tracing::field::Empty;

use super::{Call, Outcome, Reason};
use crate::admission::{Refused, Usage};
use crate::contract::Verdict;
use crate::observe::{self, ATTEMPT_SPAN, CALL_SPAN, Handles};
use crate::retry::Next;

/// The handles of the series every call records, made once for each set of labels (see
/// [`Handles`]); the rarer ones (a refusal, a retry, a 429) go through the macros.
#[derive(Debug)]
pub(super) struct CallMetrics {
    admitted: Handles<Counter, 3>,
    waited: Handles<Histogram, 1>,
    attempts: Handles<Counter, 2>,
    ended: Handles<Counter, 2>,
    pub(super) corrections: Handles<Counter, 1>,
}

impl Default for CallMetrics {
    fn default() -> Self {
        Self {
            admitted: Handles::new(
                observe::CALLS_ADMITTED,
                ["provider", "credential", "tenant"],
            ),
            waited: Handles::new(observe::ADMISSION_WAIT, ["provider"]),
            attempts: Handles::new(observe::ATTEMPTS, ["provider", "status"]),
            ended: Handles::new(observe::CALLS_ENDED, ["provider", "outcome"]),
            corrections: Handles::new(observe::USAGE_CORRECTIONS, ["provider"]),
        }
    }
}

/// The span of one logical call. Its tenant, model, attempts, status, outcome, time in the
/// queue and usage are recorded as they become known. Its parent is the trace context the
/// call's headers carry, when a [`TraceContext`](observe::propagate::TraceContext) is
/// installed.
pub(super) fn call_span(call: &Call) -> Span {
    let span = tracing::info_span!(
        CALL_SPAN,
        provider = %call.provider,
        credential = %call.sent_with(),
        class = observe::request_class(call.class),
        tenant = Empty,
        attempts = Empty,
        status = Empty,
        outcome = Empty,
        waited_ms = Empty,
        gen_ai.system = %call.provider,
        gen_ai.request.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
    );
    if let Some(context) = observe::propagate::installed() {
        context.adopt(&span, &call.headers);
    }
    span
}

/// The model the call's body names, on its span.
pub(super) fn model(call_span: &Span, model: Option<&str>) {
    if let Some(model) = model {
        call_span.record(observe::GEN_AI_REQUEST_MODEL, model);
    }
}

/// The span of attempt `attempt` (from 1), a child of `call`'s.
pub(super) fn attempt_span(
    call_span: &Span,
    call: &Call,
    attempt: u32,
    model: Option<&str>,
) -> Span {
    tracing::info_span!(
        parent: call_span,
        ATTEMPT_SPAN,
        attempt,
        admitted = Empty,
        waited_ms = Empty,
        status = Empty,
        verdict = Empty,
        decision = Empty,
        gen_ai.system = %call.provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
    )
}

/// The trace headers the attempt in flight (the current span) carries to the provider, from
/// the installed [`TraceContext`](observe::propagate::TraceContext); empty without one.
pub(super) fn outbound_headers() -> Vec<(String, String)> {
    observe::propagate::installed().map_or_else(Vec::new, |c| c.headers(&Span::current()))
}

/// The usage an answer reported as billed, on `span` (the attempt's, or the call's).
pub(super) fn usage(span: &Span, billed: &Usage) {
    span.record(observe::GEN_AI_INPUT_TOKENS, billed.input_tokens);
    span.record(observe::GEN_AI_OUTPUT_TOKENS, billed.output_tokens);
}

/// An attempt was admitted after `waited` in the queue; `queued` is the call's whole time
/// in the queue so far.
pub(super) fn admitted(
    handles: &CallMetrics,
    call: &Call,
    call_span: &Span,
    tenant: &str,
    waited: Duration,
    queued: Duration,
) {
    let attempt = Span::current();
    attempt.record("admitted", true);
    attempt.record("waited_ms", millis(waited));
    call_span.record("waited_ms", millis(queued));
    (handles.admitted)
        .get([&call.provider, call.sent_with(), tenant])
        .increment(1);
    (handles.waited)
        .get([&call.provider])
        .record(waited.as_secs_f64());
}

/// The queue let the attempt go without admitting it: it expired or was cancelled while it
/// waited. A refusal at submit is reported by admission itself.
pub(super) fn left_queue(call: &Call, refused: &Refused) {
    Span::current().record("admitted", false);
    let reason = match refused {
        Refused::Rejected(_) => return,
        Refused::Expired(_) => "expired",
        Refused::Cancelled => "cancelled",
    };
    tracing::info!(provider = %call.provider, reason, "a queued request left unadmitted");
    metrics::counter!(
        observe::CALLS_REFUSED,
        "provider" => call.provider.clone(),
        "reason" => reason,
    )
    .increment(1);
}

/// An attempt was sent and answered with `status` (`None`: no answer).
pub(super) fn answered(handles: &CallMetrics, call: &Call, status: Option<u16>) {
    (handles.attempts)
        .get([&call.provider, observe::status_class(status)])
        .increment(1);
    if status == Some(429) {
        metrics::counter!(
            observe::RESPONSES_429,
            "provider" => call.provider.clone(),
            "credential" => call.sent_with().to_owned(),
        )
        .increment(1);
    }
}

/// The plugin read the attempt: its status and verdict, on the attempt's span.
pub(super) fn read(status: Option<u16>, verdict: Verdict) {
    let span = Span::current();
    if let Some(status) = status {
        span.record("status", status);
    }
    span.record("verdict", observe::verdict(verdict));
}

/// What the retry policy decided for the attempt, on its span.
pub(super) fn decided(next: &Next) {
    let decision = match next {
        Next::Done => "done",
        Next::Retry { .. } => "retry",
        Next::Stop(_) => "stop",
    };
    Span::current().record("decision", decision);
}

/// A retry of the call is scheduled after `delay`, because of `verdict`.
pub(super) fn retry(
    call: &Call,
    attempt: u32,
    status: Option<u16>,
    verdict: Verdict,
    delay: Duration,
) {
    let reason = observe::verdict(verdict);
    tracing::info!(
        provider = %call.provider,
        attempt,
        status,
        delay_ms = millis(delay),
        reason,
        "retry scheduled"
    );
    metrics::counter!(
        observe::RETRIES,
        "provider" => call.provider.clone(),
        "reason" => reason,
    )
    .increment(1);
}

/// The `outcome` of a call in [`observe::CALLS_ENDED`] and on its span: `succeeded`, or why
/// it ended — `stopped`, `refused`, `out-of-time`, `cancelled`, `breaker-open`,
/// `scope-retries-full`, `task-budget-exhausted`, `unknown-provider`, `unknown-credential`,
/// `not-recorded`, `budget-spent`, `unpriced`, `malformed`. (A stream that began is
/// `streaming`.)
pub(super) fn outcome_label(o: &Outcome) -> &'static str {
    match o {
        Outcome::Succeeded { .. } => "succeeded",
        Outcome::Ended(t) => match t.reason {
            Reason::Stopped(_) => "stopped",
            Reason::Refused(_) => "refused",
            Reason::OutOfTime(_) => "out-of-time",
            Reason::Cancelled => "cancelled",
            Reason::BreakerOpen(_) => "breaker-open",
            Reason::ScopeRetriesFull { .. } => "scope-retries-full",
            Reason::TaskBudgetExhausted { .. } => "task-budget-exhausted",
            Reason::UnknownProvider(_) => "unknown-provider",
            Reason::UnknownCredential { .. } => "unknown-credential",
            Reason::NotRecorded(_) => "not-recorded",
            Reason::BudgetSpent(_) => "budget-spent",
            Reason::Unpriced(_) => "unpriced",
            Reason::Malformed(_) => "malformed",
        },
    }
}

/// The call is over: how it ended (its outcome's label, its attempts, its last status), on
/// its span and in [`observe::CALLS_ENDED`].
pub(super) fn ended(
    handles: &CallMetrics,
    span: &Span,
    call: &Call,
    (outcome, attempts, status): (&'static str, u32, Option<u16>),
) {
    span.record("outcome", outcome);
    span.record("attempts", attempts);
    if let Some(status) = status {
        span.record("status", status);
    }
    (handles.ended).get([&call.provider, outcome]).increment(1);
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
