//! A call made ready to queue: the checks before it (its provider and credential, its
//! body, its paths' breakers), its plugin's plan, and its charge against its tenant's
//! budgets ([`crate::budget`]; settled at its end by [`super::charge`]). Nothing here waits
//! in the queue: what the checks hold is gone before the call does
//! (`benches/call_memory.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Span;

use super::breaking::BreakerPaths;
use super::pool::Pooled;
use super::tally::Tally;
use super::{Call, Executor, NextAction, NotRecorded, Outcome, Reason, trace};
use crate::admission::config::MODEL_SCOPE_PREFIX;
use crate::admission::{Class, Usage};
use crate::budget::{BudgetError, Budgets, Charge, Reservation};
use crate::clock::Clock;
use crate::contract::{BodyDigest, Request, RequestClass};
use crate::guard::GuardedPolicy;
use crate::headers::encode_fields;
use crate::offload::{self, blocking};
use crate::retry::{Stop, route_template};

/// A call made ready to queue: the request plugins see, and what its plan decided.
pub(super) struct Prepared {
    pub(super) req: Request,
    pub(super) estimate: Usage,
    pub(super) class: Class,
    pub(super) tenant: String,
    pub(super) deadline: Option<Duration>,
    pub(super) scopes: Vec<String>,
    /// The usage the last answer reported as billed, and the input tokens of it read from
    /// the provider's cache: what the call's budget charge is corrected to. Boxed: only an
    /// answer sets it, and a waiting call carries a pointer's worth of it.
    pub(super) billed: Option<Box<(Usage, crate::budget::CacheUse)>>,
    /// How long a whole answer may take to begin, when the model's settings say.
    pub(super) generation_timeout: Option<Duration>,
    /// Its breaker paths, with the credential the attempt goes with.
    pub(super) paths: BreakerPaths,
    /// A pool's call: the member its attempt goes with and what choosing the next needs;
    /// boxed, so that a call of one credential carries a pointer's worth of it while it
    /// waits.
    pub(super) pooled: Option<Box<Pooled>>,
}

/// The request plugins see, the body's model, and how long its answer may take to begin.
type Read = (Request, Option<String>, Option<Duration>);

impl Prepared {
    /// The checks before `call` queues on `ex` (it began at `started`): its provider and
    /// credential, its body, its path's breakers and its plugin's plan; `Err`: the call ends
    /// here, nothing sent. The policy is read once: every attempt of the call plans and
    /// reads on this version.
    pub(super) async fn checked(
        ex: &Executor,
        call: &Call,
        span: &Span,
        started: Instant,
    ) -> Result<(Arc<GuardedPolicy>, Self), Outcome> {
        let Some(policy) = ex.policy(&call.provider) else {
            return Err(Tally::default().end(
                Reason::UnknownProvider(call.provider.clone()),
                NextAction::FixRequest,
            ));
        };
        let known = match &call.pool {
            Some(pool) => ex.admission.has_pool(&call.provider, pool),
            None => ex.credentials.knows(&call.provider, &call.credential) != Some(false),
        };
        if !known {
            // Sent without its key, the request would only be refused: nothing goes out.
            return Err(Tally::default().end(
                Reason::UnknownCredential {
                    provider: call.provider.clone(),
                    label: call.sent_with().to_owned(),
                },
                NextAction::FixRequest,
            ));
        }
        let Some((req, model, generation_timeout)) = Self::read(ex, call).await else {
            return Err(
                Tally::default().end(Reason::Stopped(Stop::NeverRetry), NextAction::FixRequest)
            );
        };
        if let Some(key) = req.digest.duplicate_key() {
            // sluice prices and routes by one of the two values; the provider may act on the
            // other. Nothing is sent, and no breaker or budget hears of it.
            return Err(Tally::default().end(
                Reason::Malformed(format!(
                    "the body gives `{}` more than once: sluice and the provider could read \
                     different values (a model, a maximum); send each key once",
                    crate::printable::printable(&key)
                )),
                NextAction::FixRequest,
            ));
        }
        // The breakers are one credential's and one model's: another credential's revoked
        // key never stops this one's calls, and another tenant's malformed requests never
        // stop this tenant's (`breaking`). Both are checked before the plugin plans the
        // call when the call names its tenant (the sidecar's always do); else the
        // credential's before and the tenant's once the plan has named the tenant. A pool's
        // call checks its member's once admitted on it.
        let mut paths = BreakerPaths::before_plan(
            &call.provider,
            call.sent_with(),
            &route_template(&call.method, &call.url),
            model.as_deref(),
        );
        let before_plan = match &call.tenant {
            Some(tenant) => {
                paths = paths.of_tenant(tenant);
                ex.breakers.allow(&paths, started)
            }
            None => ex.breakers.allow_path(&paths, started),
        };
        if let Err(open) = before_plan {
            return Err(Tally::default().breaker_open(open));
        }
        trace::model(span, model.as_deref());
        let mut p = Self::planned(call, (req, model, generation_timeout), paths, &policy);
        span.record("tenant", p.tenant.as_str());
        if call.tenant.is_none() {
            p.paths.name_tenant(&p.tenant);
            if let Err(open) = ex.breakers.allow_tenant(&p.paths, started) {
                return Err(Tally::default().breaker_open(open));
            }
        }
        Ok((policy, p))
    }

    /// The request plugins see, with the provider's per-model settings applied (its
    /// default output limit); the body's model, looked up once for the settings and the
    /// breaker's path; and how long its answer may take to begin.
    ///
    /// A long body is read on the blocking pool ([`offload::read`]): the thread this call is
    /// awaited on may be serving other tenants' calls.
    async fn read(ex: &Executor, call: &Call) -> Option<Read> {
        let headers = call.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let headers = encode_fields(headers).ok()?;
        let digest = offload::read(&call.body, BodyDigest::of).await;
        let mut req = Request::digested(
            call.method.clone(),
            ex.url_of(call),
            call.class,
            headers,
            call.body.clone(),
            digest,
            ex.clock.wall_ms(),
        );
        let model = req.digest.string("model");
        let generation = ex
            .generations
            .get(&call.provider)
            .map(|g| g.of(model.as_deref()))
            .unwrap_or_default();
        if generation.default_max_output.is_some() {
            req.digest
                .set_default_max_output(generation.default_max_output);
        }
        Some((req, model, generation.timeout))
    }

    /// Where `req` belongs: the call's own settings first, then its plugin's plan (tenant,
    /// deadline, class), and every scope the plan names.
    fn planned(
        call: &Call,
        (req, model, generation_timeout): Read,
        paths: BreakerPaths,
        policy: &GuardedPolicy,
    ) -> Self {
        let now_ms = req.now_ms;
        let plan = policy.plan_request(&req).value;
        let deadline = call.deadline.or_else(|| {
            let ms = plan.deadline_ms?.saturating_sub(now_ms);
            Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
        });
        let mut scopes = call.scopes.clone();
        for s in plan.scopes {
            if !scopes.contains(&s) {
                scopes.push(s);
            }
        }
        Self {
            estimate: Usage::from_estimate(&plan.cost),
            class: call.priority.unwrap_or_else(|| plan.class.into()),
            tenant: call
                .tenant
                .clone()
                .or(plan.tenant)
                .unwrap_or_else(|| "default".to_owned()),
            deadline,
            scopes,
            billed: None,
            generation_timeout,
            paths,
            pooled: call
                .pool
                .is_some()
                .then(|| Box::new(Pooled::new(call, model))),
            req,
        }
    }

    /// Charges the estimate to its tenant's `budgets`. `Ok(None)`: nothing is budgeted.
    ///
    /// A spent budget ends the call at once, before it queues, with when it resets (by `clock`);
    /// a journal that cannot record the charge ends it too: nothing is sent uncounted.
    pub(super) async fn reserve(
        &self,
        budgets: Option<&Arc<Budgets>>,
        clock: &dyn Clock,
        call_provider: &str,
    ) -> Result<Option<Reservation>, Outcome> {
        let Some(budgets) = budgets.filter(|b| b.config().is_active()).cloned() else {
            return Ok(None);
        };
        // Boxed: the charge's state (what the journal's call takes, and its answer) would
        // otherwise be held inline in every call's future for the call's whole life, with
        // budgets or without (`benches/call_memory.rs`).
        Box::pin(self.reserve_in(budgets, clock, call_provider)).await
    }

    /// [`Self::reserve`] in `budgets`, which are active.
    async fn reserve_in(
        &self,
        budgets: Arc<Budgets>,
        clock: &dyn Clock,
        call_provider: &str,
    ) -> Result<Option<Reservation>, Outcome> {
        let p = self;
        let model = p
            .scopes
            .iter()
            .find_map(|s| s.strip_prefix(MODEL_SCOPE_PREFIX))
            .map(str::to_owned);
        let (tenant, provider, estimate) = (p.tenant.clone(), call_provider.to_owned(), p.estimate);
        // The journal's call, here when it is this host's file, on the blocking pool when it is a
        // group's in PostgreSQL: a round trip there holds a thread for milliseconds.
        let admitted = blocking(budgets.waits_on_network(), move || {
            budgets.admit(&Charge {
                tenant: &tenant,
                provider: &provider,
                model: model.as_deref(),
                estimate,
            })
        })
        .await
        .map_err(|stopped| {
            Tally::default().end(
                Reason::NotRecorded(NotRecorded::new(stopped)),
                NextAction::RetryLater(None),
            )
        })?;
        admitted.map_err(|e| match e {
            BudgetError::Spent(spent) => {
                let now = clock.wall_ms();
                let until = u64::try_from(spent.resets_at_ms.saturating_sub(now)).unwrap_or(0);
                tracing::warn!(
                    provider = call_provider,
                    tenant = %spent.tenant,
                    budget = %spent.budget,
                    resets_at_ms = spent.resets_at_ms,
                    "call refused: the tenant's budget is spent"
                );
                Tally::default().end(
                    Reason::BudgetSpent(spent),
                    NextAction::WaitForQuota(Some(Duration::from_millis(until))),
                )
            }
            BudgetError::Unpriced(unpriced) => {
                tracing::warn!(
                    provider = call_provider,
                    tenant = %unpriced.tenant,
                    model = unpriced.model.as_deref().unwrap_or(""),
                    "call refused: its cost cannot be priced and its tenant has a spend budget"
                );
                Tally::default().end(Reason::Unpriced(unpriced), NextAction::FixRequest)
            }
            BudgetError::Ledger(e) => Tally::default().end(
                Reason::NotRecorded(NotRecorded::new(e)),
                NextAction::RetryLater(None),
            ),
        })
    }

    /// The credential the attempt goes with: the call's, or the member of its pool the
    /// attempt was admitted on.
    pub(super) fn credential<'a>(&'a self, call: &'a Call) -> &'a str {
        match &self.pooled {
            Some(p) => p.member.as_deref().unwrap_or(&call.credential),
            None => &call.credential,
        }
    }

    /// The pool the attempt of `call` about to queue chooses a member of: a read's at every
    /// attempt, a write's at its first only (it keeps that member).
    pub(super) fn choosing<'a>(&self, call: &'a Call) -> Option<&'a str> {
        let unchosen = self.pooled.as_ref().is_some_and(|x| x.member.is_none());
        call.pool
            .as_deref()
            .filter(|_| call.class == RequestClass::Read || unchosen)
    }

    /// What is left of the call's deadline, `elapsed` after it began; `None`: it has none.
    pub(super) fn time_left(&self, elapsed: Duration) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_sub(elapsed))
    }
}
