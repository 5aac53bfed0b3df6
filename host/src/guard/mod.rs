//! A plugin behind a guard: the policy the rest of the host calls.
//!
//! The guarded policy is any [`ProviderPolicy`]: a sandboxed [`Plugin`](crate::plugin::Plugin)
//! in production, a plugin's logic compiled natively in tests. Every call goes to the plugin
//! first. When the plugin declines, the built-in
//! [`Fallback`] answers that call. When the plugin *fails* (traps, times out, exhausts
//! memory, returns invalid output), the fallback answers too, the failure is recorded, and
//! after [`QuarantinePolicy::after_consecutive_failures`] failures in a row the plugin is
//! quarantined: for [`QuarantinePolicy::duration`] it is not called at all. Then one call
//! probes it; a success lifts the quarantine, a failure renews it at once.
//!
//! # A fault on one input stays with that input
//!
//! A quarantine is shared by every tenant of the provider, so only a fault of the plugin's
//! own may count toward it. After a fault the guard asks the plugin the same question once
//! more without the body (the request's, and the response's): the body is what one caller
//! sends, while the method, the route and the headers are what every caller of the route
//! shares. A plugin that answers without the body failed on that body — a document too big
//! for its memory, a shape it mishandles — and the fault falls back for that call alone; it
//! is counted (`cause = "input"`) and logged, never toward quarantine. A plugin that fails
//! again without the body is failing on its own, and the fault counts.
//!
//! Each plugin call is timed into [`crate::observe::PLUGIN_CALL`]; failures, quarantines and
//! their end are events and metrics too (see [`crate::observe`]).
//!
//! A plugin's verdict is advice, never authority over a write: whatever a plugin or the
//! fallback says, the host's retry engine never resends an outcome-unknown write.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::Histogram;

use crate::clock::Clock;
use crate::contract::{
    Cost, PluginError, ProviderPolicy, Reading, ReconcilePlan, Reconciliation, Request,
    RequestPlan, Response, ResponsePart, UncertainWrite, WireOutcome,
};
use crate::fallback::Fallback;
use crate::observe::Handles;

mod slot;

pub use slot::PolicySlot;

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
    /// Failures since the guard was made that count toward quarantine.
    pub total_failures: u64,
    /// Failures on one call's body that the plugin did not repeat without it: the input's,
    /// not counted toward quarantine.
    pub input_failures: u64,
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
    plugin: Arc<dyn ProviderPolicy>,
    fallback: Fallback,
    policy: QuarantinePolicy,
    clock: Arc<dyn Clock>,
    health: Mutex<Health>,
    /// [`crate::observe::PLUGIN_CALL`]'s handles, by plugin and function.
    timings: Handles<Histogram, 2>,
}

impl GuardedPolicy {
    /// Guards `plugin` (a loaded [`Plugin`](crate::plugin::Plugin), or any other
    /// [`ProviderPolicy`]) under `policy`, reading time from `clock`.
    pub fn new<P: ProviderPolicy + 'static>(
        plugin: Arc<P>,
        policy: QuarantinePolicy,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self::guarding(plugin, policy, clock)
    }

    /// As [`GuardedPolicy::new`], for a policy already behind `dyn`.
    pub fn guarding(
        plugin: Arc<dyn ProviderPolicy>,
        policy: QuarantinePolicy,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            plugin,
            fallback: Fallback,
            policy,
            clock,
            health: Mutex::new(Health::default()),
            timings: Handles::new(crate::observe::PLUGIN_CALL, ["plugin", "function"]),
        }
    }

    /// The guarded plugin.
    pub fn plugin(&self) -> &dyn ProviderPolicy {
        &*self.plugin
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
            |p| p.plan_request(&without_body(req)).map(drop),
        )
    }

    /// Reads an attempt's outcome (or one part of a streamed answer) in one plugin call:
    /// its classification, the quota observations and the usage it reports.
    pub fn read_response(
        &self,
        req: &Request,
        outcome: &WireOutcome,
        part: ResponsePart,
    ) -> Answer<Reading> {
        self.answer(
            "read-response",
            |p| p.read_response(req, outcome, part),
            |p| {
                let outcome = match outcome {
                    WireOutcome::Response(r) => WireOutcome::Response(Response {
                        status: r.status,
                        headers: r.headers.clone(),
                        body: Vec::new(),
                    }),
                    WireOutcome::Transport(t) => WireOutcome::Transport(*t),
                };
                p.read_response(&without_body(req), &outcome, part)
                    .map(drop)
            },
        )
    }

    /// Whether the guarded plugin counts streams ([`ProviderPolicy::counts_streams`]).
    pub fn counts_streams(&self) -> bool {
        self.plugin.counts_streams()
    }

    /// Counts what one stretch of a streamed answer produced (the built-in policy counts
    /// nothing: the stream keeps its estimate).
    pub fn count_stream(&self, req: &Request, at: u64, stretch: &[u8]) -> Answer<Vec<Cost>> {
        self.answer(
            "count-stream",
            |p| p.count_stream(req, at, stretch),
            |p| p.count_stream(&without_body(req), at, &[]).map(drop),
        )
    }

    /// Says how to settle an uncertain write.
    pub fn reconcile(&self, write: &UncertainWrite) -> Answer<ReconcilePlan> {
        // A write's lookup carries no body: a fault here is the plugin's.
        self.answer(
            "reconcile",
            |p| p.reconcile(write),
            |p| p.reconcile(write).map(drop),
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
            |p| {
                let bare = Response {
                    status: resp.status,
                    headers: resp.headers.clone(),
                    body: Vec::new(),
                };
                p.read_reconciliation(write, &bare).map(drop)
            },
        )
    }

    /// Asks the plugin, unless it is quarantined; the built-in policy answers when it is,
    /// or when the plugin declines or fails (a failure is recorded). After a fault,
    /// `without_body` asks the same question without the body, to tell a fault of the
    /// plugin's from one of the input's (see the module docs).
    fn answer<T>(
        &self,
        function: &'static str,
        call: impl Fn(&dyn ProviderPolicy) -> Result<T, PluginError>,
        without_body: impl FnOnce(&dyn ProviderPolicy) -> Result<(), PluginError>,
    ) -> Answer<T> {
        // The built-in policy answers every call: its `Err` arm is never taken.
        let fallback = || match call(&self.fallback) {
            Ok(value) => value,
            Err(e) => unreachable!("the built-in policy failed, which it never does: {e}"),
        };
        let now = self.clock.now();
        if let Some(until) = self.lock().quarantined_until.filter(|u| now < *u) {
            return Answer {
                value: fallback(),
                by: AnsweredBy::Quarantined(until),
            };
        }
        match self.timed(function, || call(&*self.plugin)) {
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
                    let again = self.timed(function, || without_body(&*self.plugin));
                    match again {
                        Err(again) if again.failure.is_fault() => self.record_failure(&e, now),
                        _ => self.record_input_failure(&e),
                    }
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
        call: impl FnOnce() -> Result<T, PluginError>,
    ) -> Result<T, PluginError> {
        // What a plugin call costs is CPU time in this process, which the injected clock
        // (virtual in tests and the demo) does not see; this reading decides nothing.
        #[allow(clippy::disallowed_methods, reason = "measures, never decides")]
        let began = Instant::now();
        let result = call();
        (self.timings)
            .get([self.plugin.name(), function])
            .record(began.elapsed().as_secs_f64());
        result
    }

    fn report_quarantined(&self, quarantined: bool) {
        let plugin = self.plugin.name().to_owned();
        metrics::gauge!(crate::observe::PLUGIN_QUARANTINED, "plugin" => plugin)
            .set(if quarantined { 1.0 } else { 0.0 });
    }

    /// A fault the plugin does not repeat without the body: that call's input's, kept out
    /// of the count toward quarantine.
    fn record_input_failure(&self, e: &PluginError) {
        let plugin = self.plugin.name().to_owned();
        metrics::counter!(crate::observe::PLUGIN_FAILURES, "plugin" => plugin, "cause" => "input")
            .increment(1);
        let mut h = self.lock();
        h.input_failures += 1;
        h.last_failure = Some(e.to_string());
        drop(h);
        tracing::warn!(plugin = %self.plugin.name(), error = %e, "plugin call failed on this request's body (it answers without it); the built-in policy answered this call, and the plugin goes on serving");
    }

    fn record_failure(&self, e: &PluginError, now: Instant) {
        let plugin = self.plugin.name().to_owned();
        metrics::counter!(crate::observe::PLUGIN_FAILURES, "plugin" => plugin, "cause" => "plugin")
            .increment(1);
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

/// `req` without its body: what every caller of the route shares.
fn without_body(req: &Request) -> Request {
    Request::new(
        req.method.clone(),
        req.url.clone(),
        req.class,
        req.headers.clone(),
        Vec::new(),
        req.now_ms,
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::clock::ManualClock;
    use crate::contract::{Description, Failure, PriorityClass, RequestClass};

    /// A policy that traps on its first `failures` calls, then plans everything interactive.
    #[derive(Debug)]
    struct Flaky {
        description: Description,
        failures: u32,
        calls: AtomicU32,
    }

    impl Flaky {
        fn new(failures: u32) -> Self {
            Self {
                description: Description {
                    name: "flaky".into(),
                    version: "1.0.0".into(),
                    provider: "Example".into(),
                    hosts: Vec::new(),
                    routes: Vec::new(),
                    read_routes: vec![],
                    error_shape: None,
                    refill: None,
                },
                failures,
                calls: AtomicU32::new(0),
            }
        }

        fn fail(&self, function: &'static str) -> PluginError {
            PluginError {
                plugin: self.name().to_owned(),
                function,
                failure: Failure::Trap("unreachable".into()),
            }
        }
    }

    impl ProviderPolicy for Flaky {
        fn description(&self) -> &Description {
            &self.description
        }

        fn plan_request(&self, req: &Request) -> Result<RequestPlan, PluginError> {
            if self.calls.fetch_add(1, Ordering::SeqCst) < self.failures {
                return Err(self.fail("plan-request"));
            }
            let mut plan = Fallback.plan_request(req)?;
            plan.class = PriorityClass::Interactive;
            Ok(plan)
        }

        fn read_response(
            &self,
            _: &Request,
            _: &WireOutcome,
            _: ResponsePart,
        ) -> Result<Reading, PluginError> {
            Err(self.fail("read-response"))
        }

        fn reconcile(&self, _: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
            Err(self.fail("reconcile"))
        }

        fn read_reconciliation(
            &self,
            _: &UncertainWrite,
            _: &Response,
        ) -> Result<Reconciliation, PluginError> {
            Err(self.fail("read-reconciliation"))
        }
    }

    fn req() -> Request {
        Request::new(
            "GET",
            "https://api.example.com/",
            RequestClass::Read,
            String::new(),
            Vec::new(),
            0,
        )
    }

    #[test]
    fn any_policy_behind_the_trait_is_quarantined_after_failing_and_probed_after_the_wait() {
        let clock = Arc::new(ManualClock::starting_at(0));
        // Each failing call is asked again without its body, and fails again: six failures.
        let flaky = Arc::new(Flaky::new(6));
        let g = GuardedPolicy::new(flaky.clone(), QuarantinePolicy::default(), clock.clone());
        for i in 0..3 {
            let a = g.plan_request(&req());
            assert!(
                matches!(a.by, AnsweredBy::Fallback(_)),
                "call {i}: {:?}",
                a.by
            );
            assert_eq!(a.value.class, PriorityClass::Standard);
        }
        assert!(matches!(
            g.plan_request(&req()).by,
            AnsweredBy::Quarantined(_)
        ));
        assert_eq!(
            flaky.calls.load(Ordering::SeqCst),
            6,
            "three calls and their probes without the body; not called while quarantined"
        );
        assert_eq!(g.plugin().name(), "flaky");

        clock.advance(QuarantinePolicy::default().duration);
        let probe = g.plan_request(&req());
        assert!(matches!(probe.by, AnsweredBy::Plugin), "{:?}", probe.by);
        assert_eq!(probe.value.class, PriorityClass::Interactive);
        let h = g.health();
        assert_eq!((h.quarantines, h.total_failures), (1, 3));
        assert!(h.quarantined_until.is_none());
    }

    /// A policy that runs out of memory on any body over 1 KiB, as a plugin given a
    /// 20 MB document would.
    #[derive(Debug)]
    struct Small(Description);

    impl ProviderPolicy for Small {
        fn description(&self) -> &Description {
            &self.0
        }

        fn plan_request(&self, req: &Request) -> Result<RequestPlan, PluginError> {
            if req.body.len() > 1024 {
                return Err(PluginError {
                    plugin: "small".into(),
                    function: "plan-request",
                    failure: Failure::OutOfMemory(16 << 20),
                });
            }
            let mut plan = Fallback.plan_request(req)?;
            plan.class = PriorityClass::Interactive;
            Ok(plan)
        }

        fn read_response(
            &self,
            req: &Request,
            outcome: &WireOutcome,
            part: ResponsePart,
        ) -> Result<Reading, PluginError> {
            Fallback.read_response(req, outcome, part)
        }

        fn reconcile(&self, w: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
            Fallback.reconcile(w)
        }

        fn read_reconciliation(
            &self,
            w: &UncertainWrite,
            r: &Response,
        ) -> Result<Reconciliation, PluginError> {
            Fallback.read_reconciliation(w, r)
        }
    }

    #[test]
    fn a_fault_on_one_body_falls_back_for_that_call_and_never_quarantines_the_plugin() {
        let clock = Arc::new(ManualClock::starting_at(0));
        let small = Arc::new(Small(Flaky::new(0).description));
        let g = GuardedPolicy::new(small, QuarantinePolicy::default(), clock);
        let big = req().with_body(vec![b'x'; 20 << 20]);
        for i in 0..10 {
            let a = g.plan_request(&big);
            assert!(
                matches!(&a.by, AnsweredBy::Fallback(e) if e.failure.is_fault()),
                "call {i}: {:?}",
                a.by
            );
            assert!(
                a.value.cost.len() > 1,
                "the built-in plan charges the body's tokens"
            );
        }
        let h = g.health();
        assert_eq!(
            (h.total_failures, h.input_failures, h.quarantines),
            (0, 10, 0)
        );
        // Every other caller is still planned by the plugin.
        let a = g.plan_request(&req());
        assert!(matches!(a.by, AnsweredBy::Plugin), "{:?}", a.by);
        assert_eq!(a.value.class, PriorityClass::Interactive);
    }
}
