//! The [`Plugin`] trait: the contract's functions, each with a default, built from small
//! author hooks.
//!
//! The contract has one function per moment (`plan-request` before a request is queued,
//! `read-response` after an attempt), because every call into the sandbox costs a copy of
//! the request. An author thinks in smaller questions — what does this status mean, which
//! quota headers are there, what did the request use — so the trait asks those, each with a
//! generic default, and [`default_plan_request`] and [`default_read_response`] compose them
//! into the contract's answers. A plugin overrides only the hooks where its provider
//! differs, and overrides a composed function only when one answer depends on another (then
//! it can still start from the default composition).

use super::{
    Classification, Cost, Description, Observation, Outcome, PolicyError, PriorityClass, Reading,
    ReconcilePlan, Reconciliation, Request, RequestPlan, Response, ResponsePart, UncertainWrite,
    default_classify, default_priority, headers, ietf_observations, one_request,
};

/// Where a request belongs in the queue: the part of a [`RequestPlan`] that
/// [`Plugin::priority`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priority {
    /// The queue class.
    pub class: PriorityClass,
    /// The tenant the request names, for fair sharing.
    pub tenant: Option<String>,
    /// An absolute deadline the request carries, in milliseconds since the Unix epoch.
    pub deadline_ms: Option<i64>,
}

/// A provider policy. Every function but [`Plugin::describe`] has a default that follows
/// generic HTTP semantics; override what your provider does differently.
///
/// A [`PolicyError`] from any hook makes the host answer that whole call (the plan, or the
/// reading) with its built-in policy.
pub trait Plugin {
    /// Names the plugin and the traffic it governs.
    fn describe() -> Description;

    /// Reads one attempt's outcome (or part of a streamed answer) into a verdict, a delay
    /// and an error code. Default: [`default_classify`].
    ///
    /// # Errors
    /// A [`PolicyError`] declines the reading.
    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        Ok(default_classify(req, outcome))
    }

    /// Reads the quota figures in a response's headers. Called for a whole answer and at a
    /// stream's start, not at its end (the headers are the same). Default: the IETF
    /// rate-limit fields.
    ///
    /// # Errors
    /// A [`PolicyError`] declines the reading.
    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        let _ = req;
        Ok(ietf_observations(&headers(&resp.headers)))
    }

    /// What the request actually used, as the response reports it (for a stream: at
    /// `stream-end`, from its body). Default: nothing reported, so the host keeps its
    /// estimate.
    ///
    /// # Errors
    /// A [`PolicyError`] declines the reading.
    fn usage(req: &Request, resp: &Response, part: ResponsePart) -> Result<Vec<Cost>, PolicyError> {
        let _ = (req, resp, part);
        Ok(Vec::new())
    }

    /// Advises the queue class, tenant and deadline of a request. Default:
    /// [`default_priority`].
    ///
    /// # Errors
    /// A [`PolicyError`] declines the plan.
    fn priority(req: &Request) -> Result<Priority, PolicyError> {
        Ok(default_priority(req))
    }

    /// Estimates what a request will use per dimension. Default: one request.
    ///
    /// # Errors
    /// A [`PolicyError`] declines the plan.
    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let _ = req;
        Ok(vec![one_request()])
    }

    /// The narrower quota scopes a request counts in, named as this plugin's observations
    /// name them (`Observation::scope`). Default: none.
    ///
    /// # Errors
    /// A [`PolicyError`] declines the plan.
    fn scopes(req: &Request) -> Result<Vec<String>, PolicyError> {
        let _ = req;
        Ok(Vec::new())
    }

    /// The contract's `plan-request`. Default: [`default_plan_request`].
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host plan the request with its built-in policy.
    fn plan_request(req: &Request) -> Result<RequestPlan, PolicyError> {
        default_plan_request::<Self>(req)
    }

    /// The contract's `read-response`. Default: [`default_read_response`].
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host read the outcome with its built-in policy.
    fn read_response(
        req: &Request,
        outcome: &Outcome,
        part: ResponsePart,
    ) -> Result<Reading, PolicyError> {
        default_read_response::<Self>(req, outcome, part)
    }

    /// The contract's `count-stream`: what one stretch of a streamed answer produced, per
    /// dimension, counted from its events (the output tokens of its deltas; the input tokens
    /// where an event reports them, or the prompt's estimate in the first stretch, `at` 0). The host adds up the stretches and charges the sums when
    /// the stream ends without its usage. Default: nothing counted, so such a stream keeps
    /// its estimate. [`crate::sse`] finds the events.
    ///
    /// # Errors
    /// A [`PolicyError`] counts nothing for the stretch.
    fn count_stream(req: &Request, at: u64, stretch: &[u8]) -> Result<Vec<Cost>, PolicyError> {
        let _ = (req, at, stretch);
        Ok(Vec::new())
    }

    /// Says how to settle an uncertain write. Default: unsupported, so the host escalates.
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn reconcile(write: &UncertainWrite) -> Result<ReconcilePlan, PolicyError> {
        let _ = write;
        Ok(ReconcilePlan::Unsupported(
            "this plugin cannot look up writes".into(),
        ))
    }

    /// Reads the answer to the status query from [`Plugin::reconcile`]. Default: unknown.
    ///
    /// # Errors
    /// A [`PolicyError`] makes the host use its built-in policy for this call.
    fn read_reconciliation(
        write: &UncertainWrite,
        resp: &Response,
    ) -> Result<Reconciliation, PolicyError> {
        let _ = (write, resp);
        Ok(Reconciliation::Unknown(
            "this plugin cannot read lookups".into(),
        ))
    }
}

/// A plan from `P`'s hooks: [`Plugin::priority`], [`Plugin::estimate_cost`] and
/// [`Plugin::scopes`].
///
/// # Errors
/// The first hook's [`PolicyError`].
pub fn default_plan_request<P: Plugin + ?Sized>(req: &Request) -> Result<RequestPlan, PolicyError> {
    let Priority {
        class,
        tenant,
        deadline_ms,
    } = P::priority(req)?;
    Ok(RequestPlan {
        class,
        tenant,
        deadline_ms,
        cost: P::estimate_cost(req)?,
        scopes: P::scopes(req)?,
    })
}

/// A reading from `P`'s hooks: [`Plugin::classify`] always; for a response,
/// [`Plugin::parse_quota`] unless `part` is `stream-end` (its headers were read at the
/// start), and [`Plugin::usage`].
///
/// # Errors
/// The first hook's [`PolicyError`].
pub fn default_read_response<P: Plugin + ?Sized>(
    req: &Request,
    outcome: &Outcome,
    part: ResponsePart,
) -> Result<Reading, PolicyError> {
    let classification = P::classify(req, outcome)?;
    let (observations, usage) = match outcome {
        Outcome::Response(resp) => {
            let observations = match part {
                ResponsePart::StreamEnd => Vec::new(),
                ResponsePart::Complete | ResponsePart::StreamStart => P::parse_quota(req, resp)?,
            };
            (observations, P::usage(req, resp, part)?)
        }
        Outcome::Transport(_) => (Vec::new(), Vec::new()),
    };
    Ok(Reading {
        classification,
        observations,
        usage,
    })
}
