//! `execute`: one logical call, from the queue to a typed outcome.
//!
//! Each attempt waits in the admission queue, is sent once by the [`Transport`], is read by
//! the provider's plugin (behind its guard), and reports what the response said about the
//! quota before anything else happens. Then [`decide`](crate::retry::decide()) weighs the
//! class's budget: a 429 holds the whole scope *before* this call schedules its retry, so
//! every worker of the scope waits; the retry goes back through the queue, so it keeps the
//! scope's pace. Every call
//! ends in an [`Outcome`]: success, or a [`Terminal`] that says whether anything was sent,
//! whether an answer came back, what was spent, and the next safe action.

mod breaking;
mod budgets;
mod call;
mod charge;
mod framing;
mod generations;
mod places;
mod pool;
mod prepare;
mod produced;
mod reading;
pub mod recent;
mod run;
mod stream;
mod tally;
mod trace;
mod usage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::admission::coalesce::{Coalescer, Joined};
use crate::admission::{Acquire, Admission, Rejection, Usage};
use crate::budget::Budgets;
use crate::clock::Clock;
use crate::contract::RequestClass;
use crate::credentials::{Credentials, NoCredentials};
use crate::guard::GuardedPolicy;
use crate::guard::PolicySlot;
use crate::retry::RetryConfig;
use crate::task::Tasks;
use crate::transport::Transport;

use tracing::Instrument;

pub use budgets::QUOTA_EXHAUSTED;
use call::read_key;
pub use call::{
    Call, DEFAULT_CREDENTIAL, NextAction, NotRecorded, Observer, Outcome, Reason, Terminal,
    Unobserved,
};
pub use charge::CACHED_INPUT_TOKENS;
pub use framing::{event_stream_message, is_event_stream};
pub use generations::{ANY_MODEL, Generation, Generations};
pub use pool::{Endpoint, Endpoints};
use run::{CallRun, Run};
pub use stream::{PartialStream, Stream, StreamOutcome};

/// Runs calls: admission, transport, plugins and the retry policy together.
#[derive(Debug)]
pub struct Executor {
    admission: Admission,
    /// Each provider's policy, read once per call (see [`crate::reload`]).
    policies: HashMap<String, Arc<PolicySlot>>,
    transport: Transport,
    retry: RetryConfig,
    /// Credentials' breakers, shared by their tenants, and tenants' own, for the failures
    /// their requests cause.
    breakers: breaking::CallBreakers,
    rng: Mutex<fastrand::Rng>,
    /// Each scope's places for delayed retries, shared by its tenants.
    delayed: places::DelayPlaces,
    /// Cancelled tasks, and the attempts each sent against `RetryConfig::task_max_attempts`.
    tasks: Tasks,
    /// Reads in flight that opted into sharing, by what they ask.
    reads: Coalescer<String, Outcome>,
    /// The last 429s the providers answered, and the last admission waits.
    recent: recent::Recent,
    /// The secret headers of each call's credential label, asked for at each send.
    credentials: Arc<dyn Credentials>,
    /// Tenants' spend budgets, checked before a call queues; `None`: none.
    budgets: Option<Arc<Budgets>>,
    /// Each provider's per-model settings of generations.
    generations: HashMap<String, Generations>,
    /// Each provider's base URL, for calls whose URL starts with `/`.
    base_urls: HashMap<String, String>,
    /// Credentials' own endpoints, by provider, then label.
    endpoints: Endpoints,
    /// The handles of the series every call records.
    metrics: trace::CallMetrics,
    clock: Arc<dyn Clock>,
}

impl Executor {
    /// An executor. `seed` seeds the jitter (a fixed one in tests).
    pub fn new(
        admission: Admission,
        policies: HashMap<String, Arc<GuardedPolicy>>,
        transport: Transport,
        retry: RetryConfig,
        clock: Arc<dyn Clock>,
        seed: u64,
    ) -> Self {
        let slots = policies
            .into_iter()
            .map(|(name, policy)| (name, Arc::new(PolicySlot::new(policy))))
            .collect();
        Self::with_policy_slots(admission, slots, transport, retry, clock, seed)
    }

    /// An executor that reads each provider's policy from its slot when a call begins, so a
    /// reload ([`crate::reload::PluginSet::reload`]) swaps it for the calls that follow.
    pub fn with_policy_slots(
        admission: Admission,
        policies: HashMap<String, Arc<PolicySlot>>,
        transport: Transport,
        retry: RetryConfig,
        clock: Arc<dyn Clock>,
        seed: u64,
    ) -> Self {
        let open_for = Duration::from_millis(retry.breaker_open_ms);
        let breakers = breaking::CallBreakers::new(retry.breaker_threshold, open_for);
        let delayed = places::DelayPlaces::new(retry.max_delayed_requests);
        let tasks = Tasks::new(retry.task_max_attempts);
        Self {
            admission,
            policies,
            transport,
            retry,
            breakers,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            delayed,
            tasks,
            reads: Coalescer::new(),
            recent: recent::Recent::default(),
            credentials: Arc::new(NoCredentials),
            budgets: None,
            generations: HashMap::new(),
            base_urls: HashMap::new(),
            endpoints: Endpoints::new(),
            metrics: trace::CallMetrics::default(),
            clock,
        }
    }

    /// How long an answer of `provider` for a request with `body` may take, when its model
    /// has a configured generation timeout (`[providers.X.generations."m"] timeout_ms`): an
    /// attempt may still be at work at the provider that long after it was sent.
    pub fn generation_timeout(&self, provider: &str, body: &[u8]) -> Option<Duration> {
        let generations = self.generations.get(provider)?;
        let model = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("model")?.as_str().map(str::to_owned));
        generations.of(model.as_deref()).timeout
    }

    /// Applies each provider's per-model settings of generations (by provider name): the
    /// output a generation naming no maximum is planned at, and how long a whole answer may
    /// take (see [`Generations`]).
    #[must_use]
    pub fn with_generations(mut self, generations: HashMap<String, Generations>) -> Self {
        self.generations = generations;
        self
    }

    /// Sends calls made with a credential that has its own [`Endpoint`] there (by
    /// provider, then credential label) instead of to the provider's base URL.
    #[must_use]
    pub fn with_endpoints(mut self, endpoints: Endpoints) -> Self {
        self.endpoints = endpoints;
        self
    }

    /// Resolves a call's URL that starts with `/` against its provider's base URL (by
    /// provider name), when the provider has one; the call itself is left as it is.
    #[must_use]
    pub fn with_base_urls(mut self, base_urls: HashMap<String, String>) -> Self {
        self.base_urls = base_urls;
        self
    }

    /// Where `call` goes: its URL, made absolute from its provider's base URL when it starts
    /// with `/` and the provider has one.
    fn url_of(&self, call: &Call) -> String {
        match self.base_urls.get(&call.provider) {
            Some(base) if call.url.starts_with('/') => {
                format!("{}{}", base.trim_end_matches('/'), call.url)
            }
            _ => call.url.clone(),
        }
    }

    /// Checks and counts every call against its tenant's `budgets` (by default, none): a
    /// call of a tenant whose budget is spent is refused before it queues
    /// ([`Reason::BudgetSpent`]).
    #[must_use]
    pub fn with_budgets(mut self, budgets: Arc<Budgets>) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// The budgets calls are counted against, if any.
    pub fn budgets(&self) -> Option<&Arc<Budgets>> {
        self.budgets.as_ref()
    }

    /// Sends each call with the headers `credentials` give its credential label (by
    /// default, none).
    #[must_use]
    pub fn with_credentials(mut self, credentials: Arc<dyn Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// Where the secret headers of a call's credential label come from.
    pub fn credentials(&self) -> &Arc<dyn Credentials> {
        &self.credentials
    }

    /// Every path's circuit breaker with failures counted, as it stands now (see
    /// [`crate::retry::Breakers::states`]): the credentials' paths, then the tenants' own
    /// (whose path ends `tenant=NAME`). Looking changes nothing.
    pub fn breakers(&self) -> Vec<crate::retry::BreakerState> {
        self.breakers.states(self.clock.now())
    }

    /// The last 429s the providers answered, oldest first, absorbed by retries or not
    /// (see [`recent`]).
    pub fn recent_429s(&self) -> Vec<recent::Answered429> {
        self.recent.list_429s()
    }

    /// Hands `each` the tenant and the wait (ms) of each of the last admission waits (see
    /// [`recent`]) of a call admitted after `since_ms` (wall ms), oldest first. Nothing is
    /// copied: `each` runs while the waits are held, so it should only note what it is
    /// given (a caller that samples them every second keeps its own buffers).
    pub fn each_recent_wait(&self, since_ms: i64, each: impl FnMut(&str, u64)) {
        self.recent.each_wait_since(since_ms, each);
    }

    /// The admission handle the executor queues on.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Runs `call` to its outcome.
    pub async fn execute(&self, call: &Call) -> Outcome {
        self.execute_observed(call, &mut Unobserved).await
    }

    /// The policy that reads `provider`'s answers now, if one is configured: a call that
    /// begins now runs on it to its end, whatever reloads happen meanwhile.
    pub fn policy(&self, provider: &str) -> Option<Arc<GuardedPolicy>> {
        self.policies.get(provider).map(|slot| slot.current())
    }

    /// Runs `call` to its outcome, telling `observer` about each attempt.
    pub async fn execute_observed(&self, call: &Call, observer: &mut dyn Observer) -> Outcome {
        if call.coalesce && call.class == RequestClass::Read {
            // Boxed: a call that does not share its read does not carry the sharing's state
            // inline while it waits (`benches/call_memory.rs`).
            return Box::pin(self.coalesced(call, observer)).await;
        }
        self.run_whole(call, observer).await
    }

    /// Runs `call` in its span ([`CallRun`]), and records how it ended. Everything it does
    /// is recorded in the call's span (see [`crate::observe`]).
    async fn run(&self, call: &Call, observer: &mut dyn Observer, stream: bool) -> Run {
        let span = trace::call_span(call);
        let run = CallRun::run(self, call, observer, stream, &span)
            .instrument(span.clone())
            .await;
        trace::ended(&self.metrics, &span, call, run.summary());
        run
    }

    /// `call` with the one member of its pool it keeps for its whole life (a write: its
    /// idempotency key and its reconciliation are that member's): the member that would
    /// admit one request of it soonest now. A call without a pool is returned as it is.
    ///
    /// # Errors
    /// [`Rejection::UnknownPool`] when its provider has no such pool.
    pub fn pinned(&self, call: &Call) -> Result<Call, Rejection> {
        let Some(pool) = &call.pool else {
            return Ok(call.clone());
        };
        let mut acquire = Acquire::new(&call.provider, &call.credential)
            .tenant(call.tenant.as_deref().unwrap_or("default"))
            .usage(Usage::ONE_REQUEST)
            .pool(pool.as_str());
        for s in &call.scopes {
            acquire = acquire.scope(s);
        }
        let member = self.admission.choose_member(&acquire)?;
        let mut pinned = call.clone();
        pinned.credential = member.to_string();
        pinned.pool = None;
        Ok(pinned)
    }

    /// Runs `call` to its outcome, its answer read whole.
    async fn run_whole(&self, call: &Call, observer: &mut dyn Observer) -> Outcome {
        match self.run(call, observer, false).await {
            Run::Done(outcome) => outcome,
            Run::Stream(_) => unreachable!("a call run whole never streams"),
        }
    }

    /// Runs `call` and hands its answer back as a stream once the provider begins a
    /// successful answer and its first chunk arrives. Until then it is retried as any call
    /// is; after that, nothing is sent again for it (see [`Stream`]).
    pub async fn execute_stream(&self, call: &Call) -> StreamOutcome {
        match self.run(call, &mut Unobserved, true).await {
            Run::Stream(stream) => StreamOutcome::Streaming(stream),
            Run::Done(Outcome::Ended(terminal)) => StreamOutcome::Ended(terminal),
            // Never: `attempt` hands a success of a streamed call over as a stream, and
            // ends one a plugin misread. Were it to happen, the call ends as a failure.
            Run::Done(Outcome::Succeeded {
                response,
                attempts,
                waited,
            }) => {
                tracing::error!("a streamed call succeeded without a stream; it ends as a failure");
                StreamOutcome::Ended(Box::new(Terminal {
                    reason: Reason::Stopped(crate::retry::Stop::NeverRetry),
                    sent: true,
                    response_received: true,
                    attempts,
                    waited,
                    last_status: Some(response.status),
                    error_code: None,
                    last_response: Some(response),
                    transport_error: None,
                    next_action: NextAction::FixRequest,
                }))
            }
        }
    }

    /// A read that shares one attempt with identical reads of its credential in flight.
    async fn coalesced(&self, call: &Call, observer: &mut dyn Observer) -> Outcome {
        match self.reads.join(read_key(call)) {
            Joined::Leader(lead) => {
                let outcome = self.run_whole(call, observer).await;
                lead.finish(outcome.clone());
                outcome
            }
            Joined::Follower(follow) => match follow.wait().await {
                Ok(outcome) => outcome,
                // The leader gave up (cancelled): this read goes on its own.
                Err(_) => self.run_whole(call, observer).await,
            },
        }
    }
}
