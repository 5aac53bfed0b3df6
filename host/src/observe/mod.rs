//! Watching sluice run: the names of its spans, events and metrics, in one place.
//!
//! An operator must be able to see why a call waited, why it was retried and what the
//! provider said, without reading the code: a 429, a held scope, a retry, an open breaker, a
//! full queue or a quarantined plugin is otherwise silent. sluice reports through two
//! facades and leaves the choice of backend to whoever embeds it: [`tracing`] for spans and
//! events (a subscriber prints or ships them) and [`metrics`] for counters, gauges and
//! histograms (a recorder exports them; `sluice demo --metrics-addr` serves them to
//! Prometheus). Without a subscriber or a recorder, both cost next to nothing.
//!
//! **Labels never carry a secret, and stay few.** A label is a provider (as configured), a
//! credential's *label* (`Call::credential`, never a header value), a tenant, a scope (the
//! provider, credential and scope name: `openai/team-key/model:gpt-4o`), a plugin's name, a
//! plugin function, or a reason from a fixed list below. Never a URL, a task, a request id or
//! an error message: each of those would make a new series per call.
//!
//! # Spans
//!
//! | span | where | fields |
//! |---|---|---|
//! | `sluice.call` | one per logical call (`Executor::execute`, `execute_stream`) | `provider`, `credential`, `class` (`read`, `idempotent-write`, `uncertain-write`), `tenant`, `attempts`, `status` (the last HTTP status), `outcome` (`succeeded`, `streaming`, or why it ended: [`outcome`]), `waited_ms` (time in the admission queue, all attempts), and the GenAI ones below |
//! | `sluice.attempt` | one per attempt, a child of its call's span | `attempt` (from 1), `admitted` (`true` once the queue let it go, `false` when it left the queue unadmitted), `waited_ms` (time in the admission queue), `status` (HTTP; empty when none came back), `verdict` (the plugin's reading: `success`, `rate-limited`, ...), `decision` (`done`, `retry`, `stop`), and the GenAI ones below |
//!
//! Both spans also carry the attributes of OpenTelemetry's GenAI semantic conventions, so
//! that a platform that traces agent runs reads them as model calls: `gen_ai.system` (the
//! provider, as configured), `gen_ai.request.model` (the body's `model`, when it names
//! one), and, once an answer reported its usage, `gen_ai.usage.input_tokens` and
//! `gen_ai.usage.output_tokens` (on the attempt that got the answer, and on the call: its
//! last answer's). A stream's usage is known only at its end, after the call's span closed:
//! it is not on the spans. The trace context a call carries in and out (`traceparent`) is
//! [`propagate`]'s.
//!
//! # Events
//!
//! | event | level | where | fields |
//! |---|---|---|---|
//! | scope held | info | `admission::handle` (a 429 or a spent quota) | `scope`, `hold_ms`, `reason` |
//! | request refused | warn | `admission::handle` (a bound of the queue, a deadline, a size) | `provider`, `credential`, `reason`, `error` |
//! | request expired or cancelled while queued | info | `execute` | `provider`, `reason` |
//! | retry scheduled | info | `execute` | `provider`, `attempt`, `delay_ms`, `reason` (the verdict), `status` |
//! | breaker opened / half-open / closed | warn / info / info | `retry::breaker` | `path`, `error`, `failures`, `open_ms` |
//! | plugin call failed / quarantined / quarantine lifted | warn / warn / info | `guard` | `plugin`, `error`, `until_s` |
//! | plugin reloaded / reload refused | info / warn | `reload` | `provider`, `plugin`, `version`, `reason` |
//! | usage corrected | debug | `execute::usage` | `provider`, `estimated_tokens`, `actual_tokens` |
//! | call refused: the tenant's budget is spent | warn | `execute::charge` | `provider`, `tenant`, `budget`, `resets_at_ms` |
//! | budget threshold crossed | warn | `budget` | `tenant`, `budget`, `threshold_percent`, `used`, `limit`, `period`, `resets_at_ms` |
//! | shared store unreachable: local pacing / reached again | warn / info | `admission::shared` | `error`, `hosts` |
//!
//! # Metrics
//!
//! Every name is a constant here; the table is the list an operator reads.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | [`CALLS_ADMITTED`] | counter | `provider`, `credential`, `tenant` | requests the admission queue let go: one per attempt |
//! | [`CALLS_REFUSED`] | counter | `provider`, `reason` ([`refusal`]) | requests refused by the queue, or that left it without being admitted |
//! | [`ADMISSION_WAIT`] | histogram | `provider` | seconds an attempt waited in the admission queue |
//! | [`ATTEMPTS`] | counter | `provider`, `status` (`2xx`, `3xx`, `4xx`, `5xx`, `none`) | attempts sent |
//! | [`RESPONSES_429`] | counter | `provider`, `credential` | answers with status 429 |
//! | [`RETRIES`] | counter | `provider`, `reason` (the verdict) | retries scheduled |
//! | [`CALLS_ENDED`] | counter | `provider`, `outcome` ([`outcome`]) | logical calls finished |
//! | [`SCOPE_HOLDS`] | counter | `provider` | holds put on a scope (a 429, a spent quota, a caller's hold) |
//! | [`QUEUE_DEPTH`] | gauge | `scope` | requests waiting on the scope (a scope the configuration names, a credential's own, a tenant's, or an overflow scope: see below) |
//! | [`UNCONFIGURED_SCOPES`] | gauge | `provider` | names of narrower scopes the configuration does not name that the provider keeps now (at most its `max_unconfigured_scopes`; past it, new names are counted under `model:other` or `other`) |
//! | [`USAGE_CORRECTIONS`] | counter | `provider` | charges corrected from the estimate to the usage an answer reported |
//! | [`BREAKER_OPEN`] | gauge | `provider`, `credential` | paths of the credential whose breaker is open now (0 when none) |
//! | [`TENANT_BREAKER_OPENED`] | counter | | times a tenant's own breaker opened on a path its requests kept failing (the event names the tenant) |
//! | [`PLUGIN_CALL`] | histogram | `plugin`, `function` (`plan-request`, `read-response`, `reconcile`, `read-reconciliation`) | seconds a plugin call took, on the real clock |
//! | [`PLUGIN_FAILURES`] | counter | `plugin`, `cause` (`plugin`: counts toward quarantine; `input`: the plugin answers the same call without its body) | plugin calls that failed (trap, timeout, invalid output...) |
//! | [`PLUGIN_QUARANTINED`] | gauge | `plugin` | 1 while the plugin is quarantined, else 0 |
//! | [`PLUGIN_RELOADS`] | counter | `provider`, `result` (`reloaded`, `refused`) | reloads of a provider's plugin, whether the new version took traffic |
//! | [`BUDGET_THRESHOLDS`] | counter | `tenant`, `budget` (`spend_micros_per_month`...), `threshold` (percent) | a tenant's use crossed a threshold of a budget |
//! | [`BUDGET_USED_RATIO`] | gauge | `tenant`, `budget` | the share of the budget used in its current period |
//! | [`BUDGET_REFUSALS`] | counter | `tenant`, `budget` | calls refused because the budget was spent |
//! | [`SHARED_STORE_UP`] | gauge | | 1 while the shared store answers, 0 while admission paces locally |
//! | [`SHARED_STORE_FALLBACKS`] | counter | | times the shared store stopped answering and admission fell back to local pacing |
//! | [`SHARED_WAITS`] | counter | `reason` (`quota`, `hold`, `slots`) | admissions the shared store sent back to wait |
//! | [`SHARED_SLICES`] | counter | | slices of shared quotas this host took from the store (each admits many calls without a round trip) |
//! | [`POOL_CHOSEN`] | counter | `provider`, `pool`, `member` | attempts of a pool's calls admitted on the member (its use: beside its scopes' figures in `/scopes`) |
//! | [`POOL_FAILOVERS`] | counter | `provider`, `pool`, `from` | retries of a pool's read sent with another member than the attempt before, which failed on `from` |
//!
//! A gauge kept per scope ([`QUEUE_DEPTH`]) is registered when the scheduler first meets the
//! scope: install the recorder before building the host. A narrower scope whose name came
//! from requests and not from the configuration (a model an agent wrote) has none: such
//! names come and go without end, and a series cannot be dropped (see
//! [`crate::admission::scheduler::unconfigured`]), so their series would grow the exporter's
//! output with every name ever seen. Those scopes are bounded per provider and forgotten at
//! rest; they show in the admission snapshot (`/scopes`) while they live,
//! [`UNCONFIGURED_SCOPES`] counts them, and the overflow scope past the bound (`model:other`,
//! `other`) has its gauge.
//!
//! The series every call records ([`CALLS_ADMITTED`], [`ADMISSION_WAIT`], [`ATTEMPTS`],
//! [`CALLS_ENDED`], [`PLUGIN_CALL`]) are recorded through [`Handles`], made once for each set
//! of labels and made again when the recorder in effect changes; give a host one recorder
//! for its life.

mod handles;
pub mod propagate;

pub use handles::{Handle, Handles, MAX_KEPT};

use crate::contract::{RequestClass, Verdict};

/// Counter: requests the admission queue let go, one per attempt.
pub const CALLS_ADMITTED: &str = "sluice_calls_admitted_total";
/// Counter: requests refused by the admission queue, or that left it without being admitted.
pub const CALLS_REFUSED: &str = "sluice_calls_refused_total";
/// Histogram: seconds an attempt waited in the admission queue.
pub const ADMISSION_WAIT: &str = "sluice_admission_wait_seconds";
/// Counter: attempts sent, by status class.
pub const ATTEMPTS: &str = "sluice_attempts_total";
/// Counter: answers with status 429.
pub const RESPONSES_429: &str = "sluice_responses_429_total";
/// Counter: retries scheduled, by the verdict that asked for them.
pub const RETRIES: &str = "sluice_retries_total";
/// Counter: logical calls finished, by outcome.
pub const CALLS_ENDED: &str = "sluice_calls_ended_total";
/// Counter: holds put on a scope.
pub const SCOPE_HOLDS: &str = "sluice_scope_holds_total";
/// Gauge: requests waiting on a scope.
pub const QUEUE_DEPTH: &str = "sluice_queue_depth";
/// Gauge: names of a provider's unconfigured narrower scopes kept now.
pub const UNCONFIGURED_SCOPES: &str = "sluice_unconfigured_scopes";
/// Counter: charges corrected to the usage an answer reported.
pub const USAGE_CORRECTIONS: &str = "sluice_usage_corrections_total";
/// Gauge: a credential's paths whose breaker is open.
pub const BREAKER_OPEN: &str = "sluice_breaker_open";
/// Counter: times a tenant's own breaker opened.
pub const TENANT_BREAKER_OPENED: &str = "sluice_tenant_breaker_opened_total";
/// Histogram: seconds a plugin call took.
pub const PLUGIN_CALL: &str = "sluice_plugin_call_seconds";
/// The bucket bounds, in seconds, of every histogram whose name ends in `_seconds`: from a
/// plugin call's tens of microseconds to an admission wait of minutes. A recorder that
/// renders histograms (the Prometheus exporter renders summaries unless given buckets)
/// takes these, so that the series add up across hosts.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];
/// Counter: plugin calls that failed.
pub const PLUGIN_FAILURES: &str = "sluice_plugin_failures_total";
/// Gauge: 1 while a plugin is quarantined.
pub const PLUGIN_QUARANTINED: &str = "sluice_plugin_quarantined";
/// Counter: reloads of a provider's plugin, by result (`reloaded`, `refused`).
pub const PLUGIN_RELOADS: &str = "sluice_plugin_reloads_total";

/// Counter: a tenant's use crossed a threshold of a budget.
pub const BUDGET_THRESHOLDS: &str = "sluice_budget_thresholds_total";
/// Gauge: the share of a budget a tenant has used in its current period.
pub const BUDGET_USED_RATIO: &str = "sluice_budget_used_ratio";
/// Counter: calls refused because a budget was spent.
pub const BUDGET_REFUSALS: &str = "sluice_budget_refusals_total";
/// Counter: hosts of the group whose unfinished writes this host took over, their lease
/// having run out.
pub const TAKEOVERS: &str = "sluice_takeovers_total";
/// Gauge: 1 while the shared store answers, 0 while admission paces locally.
pub const SHARED_STORE_UP: &str = "sluice_shared_store_up";
/// Counter: times this host found that the shared store lost its state (its ownership
/// epoch gone or replaced): new actions are refused until an operator recovers it.
pub const SHARED_STORE_LOST: &str = "sluice_shared_store_lost_total";
/// Counter: times the shared store stopped answering.
pub const SHARED_STORE_FALLBACKS: &str = "sluice_shared_store_fallbacks_total";
/// Counter: admissions the shared store sent back to wait.
pub const SHARED_WAITS: &str = "sluice_shared_waits_total";
/// Counter: slices of shared quotas this host took from the store.
pub const SHARED_SLICES: &str = "sluice_shared_slices_total";
/// Counter: attempts of a pool's calls admitted on a member.
pub const POOL_CHOSEN: &str = "sluice_pool_chosen_total";
/// Counter: retries of a pool's read sent with another member than the failed attempt's.
pub const POOL_FAILOVERS: &str = "sluice_pool_failovers_total";

/// The span of one logical call.
pub const CALL_SPAN: &str = "sluice.call";
/// The span of one attempt, a child of its call's.
pub const ATTEMPT_SPAN: &str = "sluice.attempt";
/// The GenAI semantic conventions' attribute of the provider's system, on both spans.
pub const GEN_AI_SYSTEM: &str = "gen_ai.system";
/// The GenAI attribute of the model the request names, on both spans.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// The GenAI attribute of the input tokens an answer reported.
pub const GEN_AI_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// The GenAI attribute of the output tokens an answer reported.
pub const GEN_AI_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";

/// What a metric is, for the recorder's `# TYPE` and `# HELP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations in seconds, bucketed by [`SECONDS_BUCKETS`].
    Seconds,
}

/// Every metric the host records: its name, kind and help text. The one list: [`describe`]
/// describes from it, and a test holds it to every name this module defines.
pub const METRICS: [(&str, MetricKind, &str); 28] = {
    use MetricKind::{Counter, Gauge, Seconds};
    [
        (
            CALLS_ADMITTED,
            Counter,
            "Requests the admission queue let go, one per attempt",
        ),
        (
            CALLS_REFUSED,
            Counter,
            "Requests refused by the admission queue, or that left it unadmitted",
        ),
        (
            ADMISSION_WAIT,
            Seconds,
            "Time an attempt waited in the admission queue",
        ),
        (ATTEMPTS, Counter, "Attempts sent, by status class"),
        (RESPONSES_429, Counter, "Answers with status 429"),
        (
            RETRIES,
            Counter,
            "Retries scheduled, by the verdict that asked for them",
        ),
        (CALLS_ENDED, Counter, "Logical calls finished, by outcome"),
        (
            SCOPE_HOLDS,
            Counter,
            "Holds put on a quota scope (a 429, a spent quota)",
        ),
        (QUEUE_DEPTH, Gauge, "Requests waiting on a quota scope"),
        (
            UNCONFIGURED_SCOPES,
            Gauge,
            "Names of a provider's narrower scopes the configuration does not name, kept now",
        ),
        (
            USAGE_CORRECTIONS,
            Counter,
            "Charges corrected to the usage an answer reported",
        ),
        (
            BREAKER_OPEN,
            Gauge,
            "Paths of a credential whose breaker is open",
        ),
        (
            TENANT_BREAKER_OPENED,
            Counter,
            "Times a tenant's own breaker opened on a path its requests kept failing",
        ),
        (PLUGIN_CALL, Seconds, "Time a plugin call took"),
        (PLUGIN_FAILURES, Counter, "Plugin calls that failed"),
        (
            PLUGIN_QUARANTINED,
            Gauge,
            "1 while the plugin is quarantined",
        ),
        (
            PLUGIN_RELOADS,
            Counter,
            "Reloads of a provider's plugin, by whether the new version took traffic",
        ),
        (
            BUDGET_THRESHOLDS,
            Counter,
            "A tenant's use crossed a threshold of a budget",
        ),
        (
            BUDGET_USED_RATIO,
            Gauge,
            "The share of a budget a tenant has used in its current period",
        ),
        (
            BUDGET_REFUSALS,
            Counter,
            "Calls refused because a budget was spent",
        ),
        (
            TAKEOVERS,
            Counter,
            "Hosts of the group whose unfinished writes this host took over, their lease run out",
        ),
        (
            SHARED_STORE_UP,
            Gauge,
            "1 while the shared store answers, 0 while admission paces locally",
        ),
        (
            SHARED_STORE_LOST,
            Counter,
            "Times the shared store was found to have lost its state (new actions refused)",
        ),
        (
            SHARED_STORE_FALLBACKS,
            Counter,
            "Times the shared store stopped answering",
        ),
        (
            SHARED_WAITS,
            Counter,
            "Admissions the shared store sent back to wait",
        ),
        (
            SHARED_SLICES,
            Counter,
            "Slices of shared quotas this host took from the store",
        ),
        (
            POOL_CHOSEN,
            Counter,
            "Attempts of a pool's calls admitted on a member",
        ),
        (
            POOL_FAILOVERS,
            Counter,
            "Retries of a pool's read sent with another member than the failed attempt's",
        ),
    ]
};

/// Describes every metric of [`METRICS`] to the installed recorder (an exporter prints it as
/// `# HELP`): call it once, after installing the recorder.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    for (name, kind, help) in METRICS {
        match kind {
            MetricKind::Counter => describe_counter!(name, help),
            MetricKind::Gauge => describe_gauge!(name, help),
            MetricKind::Seconds => describe_histogram!(name, Unit::Seconds, help),
        }
    }
}

/// A request class as the contract spells it.
pub fn request_class(class: RequestClass) -> &'static str {
    match class {
        RequestClass::Read => "read",
        RequestClass::IdempotentWrite => "idempotent-write",
        RequestClass::UncertainWrite => "uncertain-write",
    }
}

/// A verdict as the contract spells it.
pub fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Success => "success",
        Verdict::RateLimited => "rate-limited",
        Verdict::QuotaExhausted => "quota-exhausted",
        Verdict::Overloaded => "overloaded",
        Verdict::Transient => "transient",
        Verdict::Conflict => "conflict",
        Verdict::ClientError => "client-error",
        Verdict::AuthError => "auth-error",
        Verdict::OutcomeUnknown => "outcome-unknown",
    }
}

/// The `status` label of [`ATTEMPTS`]: the status class, or `none` when no answer came.
pub fn status_class(status: Option<u16>) -> &'static str {
    match status {
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(500..=599) => "5xx",
        Some(_) => "other",
        None => "none",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_name_is_in_the_one_list_prefixed_and_once() {
        // Every `sluice_` name this module defines, read from its own source.
        let source = include_str!("mod.rs");
        let defined: Vec<&str> = source
            .lines()
            .filter_map(|l| l.strip_prefix("pub const "))
            .filter_map(|l| l.split_once(": &str = \"sluice_"))
            .map(|(_, rest)| rest.split('"').next().unwrap_or(""))
            .collect();
        assert!(defined.len() >= 28, "{defined:?}");
        let listed: Vec<&str> = METRICS
            .iter()
            .map(|(n, ..)| &n["sluice_".len()..])
            .collect();
        for name in &defined {
            assert!(listed.contains(name), "sluice_{name} is not in METRICS");
        }
        let mut seen = std::collections::HashSet::new();
        for (n, kind, help) in METRICS {
            assert!(n.starts_with("sluice_"), "{n}");
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit()),
                "{n} is not a Prometheus name"
            );
            assert!(seen.insert(n), "{n} twice");
            assert!(!help.is_empty(), "{n} has no help");
            // Prometheus's conventions: a counter's name ends in `_total`, seconds in
            // `_seconds`, a gauge in neither.
            match kind {
                MetricKind::Counter => assert!(n.ends_with("_total"), "{n}"),
                MetricKind::Seconds => assert!(n.ends_with("_seconds"), "{n}"),
                MetricKind::Gauge => {
                    assert!(!n.ends_with("_total") && !n.ends_with("_seconds"), "{n}");
                }
            }
        }
    }

    #[test]
    fn status_classes_are_few() {
        assert_eq!(status_class(Some(429)), "4xx");
        assert_eq!(status_class(Some(200)), "2xx");
        assert_eq!(status_class(None), "none");
        assert_eq!(status_class(Some(999)), "other");
    }
}
