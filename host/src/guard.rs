//! A plugin behind a guard: the policy the rest of the host calls.
//!
//! Every call goes to the plugin first. When the plugin declines, the built-in
//! [`Fallback`] answers that call. When the plugin *fails* (traps, times out, exhausts
//! memory, returns invalid output), the fallback answers too, the failure is recorded, and
//! after [`QuarantinePolicy::after_consecutive_failures`] failures in a row the plugin is
//! quarantined: for [`QuarantinePolicy::duration`] it is not called at all. Then one call
//! probes it; a success lifts the quarantine, a failure renews it at once.
//!
//! Each plugin call is timed into [`crate::observe::PLUGIN_CALL`]; failures, quarantines and
//! their end are events and metrics too (see [`crate::observe`]).
//!
//! A plugin's verdict is advice, never authority over a write: whatever a plugin or the
//! fallback says, the host's retry engine never resends an outcome-unknown write.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::fallback::Fallback;
use crate::plugin::{Plugin, PluginError};
use crate::policy::{
    Outcome, Reading, ReconcilePlan, Reconciliation, Request, RequestPlan, Response, ResponsePart,
    UncertainWrite,
};

/// When to stop calling a failing plugin.
#[derive(Debug, Clone)]
pub struct QuarantinePolicy {
    /// Failures in a row that quarantine the plugin. Default: 3.
    pub after_consecutive_failures: u32,
    /// How long a quarantine lasts before one probe call. Default: 60 s.
    pub duration: Duration,
}

impl Default for QuarantinePolicy {
    fn default() -> Self {
        Self {
            after_consecutive_failures: 3,
            duration: Duration::from_secs(60),
        }
    }
}

/// Who answered a call.
#[derive(Debug, Clone)]
pub enum AnsweredBy {
    /// The plugin.
    Plugin,
    /// The built-in policy, because the plugin declined or failed (the error says which).
    Fallback(PluginError),
    /// The built-in policy, because the plugin is quarantined until the given instant.
    Quarantined(Instant),
}

/// An answer and who gave it.
#[derive(Debug, Clone)]
pub struct Answer<T> {
    /// The answer.
    pub value: T,
    /// Who gave it.
    pub by: AnsweredBy,
}

/// The health of the guarded plugin, for operators and tests.
#[derive(Debug, Clone, Default)]
pub struct Health {
    /// Failures in a row (declines do not count).
    pub consecutive_failures: u32,
    /// Failures since the guard was made.
    pub total_failures: u64,
    /// Times the plugin was quarantined.
    pub quarantines: u64,
    /// Until when it is quarantined, if it is.
    pub quarantined_until: Option<Instant>,
    /// The last failure, as text.
    pub last_failure: Option<String>,
}

/// A plugin with quarantine and the built-in fallback.
#[derive(Debug)]
pub struct GuardedPolicy {
    plugin: Arc<Plugin>,
    fallback: Fallback,
    policy: QuarantinePolicy,
    clock: Arc<dyn Clock>,
    health: Mutex<Health>,
}

impl GuardedPolicy {
    /// Guards `plugin` under `policy`, reading time from `clock`.
    pub fn new(plugin: Arc<Plugin>, policy: QuarantinePolicy, clock: Arc<dyn Clock>) -> Self {
        Self {
            plugin,
            fallback: Fallback,
            policy,
            clock,
            health: Mutex::new(Health::default()),
        }
    }

    /// The guarded plugin.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// A snapshot of the plugin's health.
    pub fn health(&self) -> Health {
        self.lock().clone()
    }

    /// Plans a request before it is queued: class, tenant, deadline, expected cost and the
    /// scopes it counts in. The built-in plan is one request, standard class, no scope.
    pub fn plan_request(&self, req: &Request) -> Answer<RequestPlan> {
        self.answer(
            "plan-request",
            |p| p.plan_request(req),
            || self.fallback.plan_request(req),
        )
    }

    /// Reads an attempt's outcome (or one part of a streamed answer) in one plugin call:
    /// its classification, the quota observations and the usage it reports.
    pub fn read_response(
        &self,
        req: &Request,
        outcome: &Outcome,
        part: ResponsePart,
    ) -> Answer<Reading> {
        self.answer(
            "read-response",
            |p| p.read_response(req, outcome, part),
            || self.fallback.read_response(req, outcome, part),
        )
    }

    /// Says how to settle an uncertain write.
    pub fn reconcile(&self, write: &UncertainWrite) -> Answer<ReconcilePlan> {
        self.answer(
            "reconcile",
            |p| p.reconcile(write),
            || self.fallback.reconcile(write),
        )
    }

    /// Reads a status query's answer.
    pub fn read_reconciliation(
        &self,
        write: &UncertainWrite,
        resp: &Response,
    ) -> Answer<Reconciliation> {
        self.answer(
            "read-reconciliation",
            |p| p.read_reconciliation(write, resp),
            || self.fallback.read_reconciliation(write, resp),
        )
    }

    /// Calls `function` of the plugin (`call`), unless it is quarantined, and falls back.
    fn answer<T>(
        &self,
        function: &'static str,
        call: impl FnOnce(&Plugin) -> Result<T, PluginError>,
        fallback: impl FnOnce() -> T,
    ) -> Answer<T> {
        let now = self.clock.now();
        if let Some(until) = self.lock().quarantined_until.filter(|u| now < *u) {
            return Answer {
                value: fallback(),
                by: AnsweredBy::Quarantined(until),
            };
        }
        match self.timed(function, call) {
            Ok(value) => {
                let mut h = self.lock();
                h.consecutive_failures = 0;
                if h.quarantined_until.take().is_some() {
                    tracing::info!(plugin = %self.plugin.name(), "plugin quarantine lifted: its probe call answered");
                    self.report_quarantined(false);
                }
                Answer {
                    value,
                    by: AnsweredBy::Plugin,
                }
            }
            Err(e) => {
                if e.failure.is_fault() {
                    self.record_failure(&e, now);
                }
                Answer {
                    value: fallback(),
                    by: AnsweredBy::Fallback(e),
                }
            }
        }
    }

    /// Runs `call`, timing it on the real clock into [`crate::observe::PLUGIN_CALL`].
    fn timed<T>(
        &self,
        function: &'static str,
        call: impl FnOnce(&Plugin) -> Result<T, PluginError>,
    ) -> Result<T, PluginError> {
        // What a plugin call costs is CPU time in this process, which the injected clock
        // (virtual in tests and the demo) does not see; this reading decides nothing.
        #[allow(clippy::disallowed_methods, reason = "measures, never decides")]
        let began = Instant::now();
        let result = call(&self.plugin);
        metrics::histogram!(
            crate::observe::PLUGIN_CALL,
            "plugin" => self.plugin.name().to_owned(),
            "function" => function,
        )
        .record(began.elapsed().as_secs_f64());
        result
    }

    fn report_quarantined(&self, quarantined: bool) {
        let plugin = self.plugin.name().to_owned();
        metrics::gauge!(crate::observe::PLUGIN_QUARANTINED, "plugin" => plugin)
            .set(if quarantined { 1.0 } else { 0.0 });
    }

    fn record_failure(&self, e: &PluginError, now: Instant) {
        let plugin = self.plugin.name().to_owned();
        metrics::counter!(crate::observe::PLUGIN_FAILURES, "plugin" => plugin).increment(1);
        let mut h = self.lock();
        h.consecutive_failures = h.consecutive_failures.saturating_add(1);
        h.total_failures += 1;
        h.last_failure = Some(e.to_string());
        if h.consecutive_failures >= self.policy.after_consecutive_failures {
            h.quarantined_until = Some(now + self.policy.duration);
            h.quarantines += 1;
            self.report_quarantined(true);
            tracing::warn!(plugin = %self.plugin.name(), error = %e, until_s = self.policy.duration.as_secs(), "plugin quarantined; the built-in policy answers meanwhile");
        } else {
            tracing::warn!(plugin = %self.plugin.name(), error = %e, "plugin call failed; the built-in policy answered");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }
}
