//! The seam between the host and whatever knows a provider: one trait, four calls.
//!
//! The same questions — plan this request, read this attempt, how to settle this write, what
//! did the lookup say — are answered by a sandboxed component ([`crate::plugin::Plugin`]), by
//! the built-in conservative policy ([`crate::fallback::Fallback`]) and, in tests and
//! benches, by a plugin's logic compiled natively (`NativePlugin`, with the `native-plugins`
//! feature). [`crate::guard::GuardedPolicy`] puts any of them behind quarantine and the
//! fallback; the rest of the host talks only to the guard.

use super::{
    Cost, Description, PluginError, Reading, ReconcilePlan, Reconciliation, Request, RequestPlan,
    Response, ResponsePart, UncertainWrite, WireOutcome,
};

/// A provider policy: what the host asks of whoever knows a provider. Every answer is the
/// contract's (`wit/policy.wit`); a call that yields none is a [`PluginError`], which says
/// whether the policy declined ([`Failure::Declined`](super::Failure::Declined): the built-in
/// policy answers that one call) or failed (anything else: it counts toward quarantine).
///
/// A policy that declines everything, guarded: the built-in policy answers for it.
///
#[cfg_attr(feature = "internals", doc = "```")]
#[cfg_attr(not(feature = "internals"), doc = "```ignore")]
/// use std::sync::Arc;
/// use sluice::clock::ManualClock;
/// use sluice::contract::*;
/// use sluice::guard::{AnsweredBy, GuardedPolicy, QuarantinePolicy};
///
/// #[derive(Debug)]
/// struct Shy(Description);
///
/// impl Shy {
///     fn decline(&self, function: &'static str) -> PluginError {
///         PluginError {
///             plugin: self.0.name.clone(),
///             function,
///             failure: Failure::Declined("not mine".into()),
///         }
///     }
/// }
///
/// impl ProviderPolicy for Shy {
///     fn description(&self) -> &Description {
///         &self.0
///     }
///     fn plan_request(&self, _: &Request) -> Result<RequestPlan, PluginError> {
///         Err(self.decline("plan-request"))
///     }
///     fn read_response(&self, _: &Request, _: &WireOutcome, _: ResponsePart) -> Result<Reading, PluginError> {
///         Err(self.decline("read-response"))
///     }
///     fn reconcile(&self, _: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
///         Err(self.decline("reconcile"))
///     }
///     fn read_reconciliation(&self, _: &UncertainWrite, _: &Response) -> Result<Reconciliation, PluginError> {
///         Err(self.decline("read-reconciliation"))
///     }
/// }
///
/// let shy = Shy(Description {
///     name: "shy".into(),
///     version: "1.0.0".into(),
///     provider: "Example".into(),
///     hosts: vec!["api.example.com".into()],
///     routes: vec![],
///     read_routes: vec![],
///     error_shape: None,
///     refill: None,
/// });
/// let guard = GuardedPolicy::new(Arc::new(shy), QuarantinePolicy::default(), Arc::new(ManualClock::starting_at(0)));
/// let req = Request::new(
///     "GET",
///     "https://api.example.com/v1/things",
///     RequestClass::Read,
///     String::new(),
///     vec![],
///     0,
/// );
/// let plan = guard.plan_request(&req);
/// assert!(matches!(plan.by, AnsweredBy::Fallback(_)));
/// assert_eq!(plan.value.class, PriorityClass::Standard);
/// // A decline is not a fault: the policy is not on its way to quarantine.
/// assert_eq!(guard.health().consecutive_failures, 0);
/// ```
pub trait ProviderPolicy: Send + Sync + std::fmt::Debug {
    /// Who the policy is and which traffic it governs.
    fn description(&self) -> &Description;

    /// The policy's name, for logs and errors: its description's.
    fn name(&self) -> &str {
        &self.description().name
    }

    /// Plans a request before it is queued: its queue class, tenant and deadline, what it
    /// will use per dimension, and the narrower quota scopes it counts in.
    ///
    /// # Errors
    /// A [`PluginError`]: the policy declined, or failed to give a valid answer.
    fn plan_request(&self, req: &Request) -> Result<RequestPlan, PluginError>;

    /// Reads one attempt's outcome, or the given part of a streamed answer: the verdict, the
    /// delay the provider asks for and its error code, the quota figures the answer reports,
    /// and what the request actually used.
    ///
    /// # Errors
    /// As [`ProviderPolicy::plan_request`].
    fn read_response(
        &self,
        req: &Request,
        outcome: &WireOutcome,
        part: ResponsePart,
    ) -> Result<Reading, PluginError>;

    /// Whether [`ProviderPolicy::count_stream`] counts anything: a stream of a policy that
    /// does not is neither kept nor handed over in stretches. Default: no.
    fn counts_streams(&self) -> bool {
        false
    }

    /// Counts what one stretch of a streamed answer produced, per dimension (see the WIT's
    /// `count-stream`). Default: nothing counted, so a stream that ends without its usage
    /// keeps its estimate.
    ///
    /// # Errors
    /// As [`ProviderPolicy::plan_request`].
    fn count_stream(
        &self,
        req: &Request,
        at: u64,
        stretch: &[u8],
    ) -> Result<Vec<Cost>, PluginError> {
        let _ = (req, at, stretch);
        Ok(Vec::new())
    }

    /// Says how to learn whether an uncertain write happened.
    ///
    /// # Errors
    /// As [`ProviderPolicy::plan_request`].
    fn reconcile(&self, write: &UncertainWrite) -> Result<ReconcilePlan, PluginError>;

    /// Reads the response to the status query that [`ProviderPolicy::reconcile`] asked for.
    ///
    /// # Errors
    /// As [`ProviderPolicy::plan_request`].
    fn read_reconciliation(
        &self,
        write: &UncertainWrite,
        resp: &Response,
    ) -> Result<Reconciliation, PluginError>;
}
