//! One attempt's answer, read and acted on: the plugin reads it in one call, what it says
//! lands in the scopes (a 429 or a spent quota holds the scope first), the charge is
//! corrected, and the retry policy decides — done, stopped, or a retry after its delay.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::breaking::{Blame, blame};
use super::charge;
use super::pool::pooled_read;
use super::run::{CallRun, failed};
use super::stream::{self, Stream};
use super::tally::{Tally, next_action};
use super::trace;
use super::usage::{self, corrected};
use super::{Call, NextAction, Observer, Outcome, QUOTA_EXHAUSTED, Reason};
use crate::admission::Permit;
use crate::contract::{
    Classification, LimitedScope, Observation, RequestClass, Response, ResponsePart,
    TransportFailure, Verdict, WireOutcome as Wire,
};
use crate::retry::{AfterAttempt, Next, Spent, decide};
use crate::transport::Started;

impl CallRun<'_> {
    /// A successful answer has begun: waits for its first chunk (within the idle limit), lets
    /// the plugin read its status and headers, and hands it over as a [`Stream`].
    pub(super) async fn open_stream(
        &mut self,
        mut body: Started,
        permit: Permit,
        observer: &mut dyn Observer,
    ) -> Result<Stream, (Wire, Permit)> {
        let (p, t) = (&self.p, &mut self.t);
        let first = match body.chunk().await {
            Ok(first) => first,
            Err(fault) => return Err((failed(fault, t), permit)),
        };
        let head = Response {
            status: body.status,
            headers: body.headers.clone(),
            body: Vec::new(),
        };
        let reading = (self.policy)
            .read_response(&p.req, &Wire::Response(head), ResponsePart::StreamStart)
            .value;
        t.sent = true;
        t.response_received = true;
        t.last_status = Some(body.status);
        trace::read(Some(body.status), reading.classification.verdict);
        observer.after_attempt(t.attempts, Some(body.status), &reading.classification);
        permit.observe(&reading.observations);
        Ok(Stream::new(stream::Opened {
            body,
            first,
            permit,
            policy: Arc::clone(&self.policy),
            req: p.req.clone(),
            estimate: p.estimate,
            attempts: t.attempts,
            waited: t.waited + t.queued,
        }))
    }

    /// Reads one attempt's outcome in one plugin call, lands what it says in the scopes,
    /// corrects the charge with the actual usage, and decides what comes next. A 429 or a
    /// spent quota holds the scope *before* anything else is scheduled.
    pub(super) fn read(
        &mut self,
        wire: &Wire,
        permit: Permit,
        observer: &mut dyn Observer,
    ) -> (Classification, crate::retry::Plan) {
        let (ex, call, started) = (self.ex, self.call, self.started);
        let (p, t) = (&mut self.p, &mut self.t);
        let (status, sent) = match wire {
            Wire::Response(r) => (Some(r.status), true),
            Wire::Transport(f) => (None, may_have_been_sent(*f)),
        };
        t.sent |= sent;
        let reading = (self.policy)
            .read_response(&p.req, wire, ResponsePart::Complete)
            .value;
        let mut c = reading.classification;
        if c.verdict == Verdict::Success && status.is_none() {
            // A failure in transport is never a success, whatever the plugin says: one
            // that may have reached the provider is an unknown outcome, one that did not
            // is transient.
            tracing::warn!(
                provider = %call.provider,
                "the plugin read a failure in transport as a success; read as a failure"
            );
            c.verdict = if sent {
                Verdict::OutcomeUnknown
            } else {
                Verdict::Transient
            };
        }
        trace::read(status, c.verdict);
        observer.after_attempt(t.attempts, status, &c);
        let mut actual = None;
        if let Wire::Response(r) = wire {
            t.response_received = true;
            t.last_status = Some(r.status);
            permit.observe(&reading.observations);
            actual = corrected(p.estimate, &reading.usage);
            if let Some(actual) = actual {
                usage::applied(&ex.metrics.corrections, &call.provider, p.estimate, actual);
            }
            if let Some(billed) = charge::billed(p.estimate, &reading.usage) {
                trace::usage(&tracing::Span::current(), &billed);
                p.billed = Some(Box::new((billed, charge::cache_use(&reading.usage))));
            }
        }
        t.error_code(c.error_code.as_ref());
        let spent = Spent {
            attempts: t.attempts,
            waited: t.waited,
        };
        let left = p.time_left(ex.clock.now().saturating_duration_since(started));
        let budget = ex.retry.budget_of(call.class);
        let plan = {
            let mut rng = ex.rng.lock().unwrap_or_else(PoisonError::into_inner);
            let after = AfterAttempt {
                classification: &c,
                status,
                sent,
                class: call.class,
                spent,
                until_deadline: left,
            };
            decide(&after, budget, &ex.retry.backoff(), &mut rng)
        };
        let plan = self.unanswered_generation(wire, plan);
        let (p, t) = (&self.p, &self.t);
        let plan = pool_retry(call, budget.max_attempts, t, plan);
        let hold = match c.verdict {
            // A spent billing or daily quota: nobody on the scope sends until its reset, or
            // for the configured time when the provider does not say.
            Verdict::QuotaExhausted => Some(c.retry_after_ms.map_or(
                Duration::from_millis(ex.retry.quota_exhausted_hold_ms),
                Duration::from_millis,
            )),
            _ => plan.hold_scope,
        };
        if let Some(hold) = hold {
            let why = match c.verdict {
                Verdict::QuotaExhausted => QUOTA_EXHAUSTED,
                _ => "rate limited",
            };
            let code = c.error_code.as_deref().unwrap_or("");
            let reason = format!("{why}: {} {code}", status.unwrap_or(429));
            for scope in held_scopes(&c, &reading.observations, &p.scopes) {
                permit.hold_scope(scope, hold, reason.trim_end());
            }
        }
        permit.complete(actual);
        (c, plan)
    }

    /// A generation (a read charged tokens) sent without an answer may have been generated
    /// and billed: it is sent again at most once, and only when the configuration allows.
    fn unanswered_generation(
        &mut self,
        wire: &Wire,
        mut plan: crate::retry::Plan,
    ) -> crate::retry::Plan {
        let (call, p, t) = (self.call, &self.p, &mut self.t);
        let unanswered = matches!(wire, Wire::Transport(f) if may_have_been_sent(*f));
        let generation = p.estimate.input_tokens > 0
            || p.estimate.output_tokens > 0
            || p.estimate.other_tokens > 0;
        if !(unanswered && generation && call.class == RequestClass::Read) {
            return plan;
        }
        t.unanswered += 1;
        let allowed = u32::from(self.ex.retry.resend_unanswered_generation);
        if matches!(plan.next, Next::Retry { .. }) && t.unanswered > allowed {
            plan.next = Next::Stop(crate::retry::Stop::GenerationUnanswered);
        }
        plan
    }

    /// Acts on an attempt's plan: done, stopped, or a retry after its delay. `None`: go on
    /// to the next attempt.
    pub(super) async fn after(
        &mut self,
        (c, plan): (Classification, crate::retry::Plan),
        wire: Wire,
        observer: &mut dyn Observer,
    ) -> Option<Outcome> {
        let (ex, call) = (self.ex, self.call);
        let (p, t) = (&mut self.p, &mut self.t);
        let status = match &wire {
            Wire::Response(r) => Some(r.status),
            Wire::Transport(_) => None,
        };
        // A 429 or a spent quota holds the scope and trips no breaker; a failure the
        // request explains, or an attempt its caller's own deadline cut, trips only its
        // tenant's (`breaking`): a tenant's tiny deadlines never open the path its key's
        // other tenants share.
        let blame = if std::mem::take(&mut t.cut_by_caller) {
            Blame::Request
        } else {
            blame(c.verdict, status)
        };
        let failure = format!(
            "{} {}",
            status.map_or_else(|| "transport".to_owned(), |s| s.to_string()),
            c.error_code.as_deref().unwrap_or("")
        );
        trace::decided(&plan.next);
        let paths = &p.paths;
        match (plan.next, wire) {
            (Next::Done, Wire::Response(response)) => {
                ex.breakers.success(paths);
                Some(Outcome::Succeeded {
                    response,
                    attempts: t.attempts,
                    waited: t.waited + t.queued,
                })
            }
            // `read` never lets a failure in transport be a success; kept as the
            // failure it is, never an answer.
            (Next::Done, wire @ Wire::Transport(_)) => {
                t.keep_answer(wire);
                ex.breakers.failure(paths, blame, &failure, ex.clock.now());
                Some(std::mem::take(t).end(
                    Reason::Stopped(crate::retry::Stop::NeverRetry),
                    NextAction::RetryLater(None),
                ))
            }
            (Next::Stop(stop), wire) => {
                t.keep_answer(wire);
                ex.breakers.failure(paths, blame, &failure, ex.clock.now());
                let next = next_action(&stop, c.retry_after_ms, status);
                Some(std::mem::take(t).end(Reason::Stopped(stop), next))
            }
            (Next::Retry { delay }, wire) => {
                t.keep_answer(wire);
                ex.breakers.failure(paths, blame, &failure, ex.clock.now());
                // A place to wait first (its tenant's share of the scope's: `places`): a
                // retry refused one takes no breaker probe.
                let places = &ex.delayed;
                let Some(mut place) = places.take(&call.provider, p.credential(call), &p.tenant)
                else {
                    return Some(std::mem::take(t).end(
                        Reason::ScopeRetriesFull {
                            max_delayed_requests: ex.retry.max_delayed_requests,
                        },
                        NextAction::RetryLater(Some(delay)),
                    ));
                };
                // A pool's read is checked on the member its next attempt goes with, once
                // admitted (`admit`), and avoids this one.
                let pooled = pooled_read(call).is_some();
                if let Some(pool) = p.pooled.as_mut().filter(|_| pooled) {
                    pool.failed();
                } else if let Err(open) = ex.breakers.allow(paths, ex.clock.now()) {
                    let after = open.retry_in;
                    return Some(std::mem::take(t).end(
                        Reason::BreakerOpen(open),
                        NextAction::RetryLater(Some(after)),
                    ));
                }
                trace::retry(call, t.attempts, status, c.verdict, delay);
                observer.retry_scheduled(t.attempts, delay);
                let slept_from = ex.clock.now();
                if !place.wait(delay).await {
                    // Taken back for a tenant under its share: this call's tenant holds more
                    // than its own, and the call ends as one that found the places full. Its
                    // next attempt is not sent: a probe it took goes back.
                    ex.breakers.release(paths);
                    let slept = ex.clock.now().saturating_duration_since(slept_from);
                    t.waited += slept;
                    return Some(std::mem::take(t).end(
                        Reason::ScopeRetriesFull {
                            max_delayed_requests: ex.retry.max_delayed_requests,
                        },
                        NextAction::RetryLater(Some(delay.saturating_sub(slept))),
                    ));
                }
                t.waited += delay;
                None
            }
        }
    }
}

/// A pool's read goes on with another member without waiting out its member's hold: a read
/// stopped by the member's spent quota is retried at once, within its class's attempts,
/// and a retry after a 429 waits only its backoff, not the hold (which keeps the member,
/// not the pool, waiting). If every member is held, admission makes it wait for the first
/// to come back. `max_attempts`: the call's class's.
fn pool_retry(
    call: &Call,
    max_attempts: u32,
    t: &Tally,
    mut plan: crate::retry::Plan,
) -> crate::retry::Plan {
    if pooled_read(call).is_none() {
        return plan;
    }
    match plan.next {
        Next::Stop(crate::retry::Stop::QuotaExhausted { .. }) if t.attempts < max_attempts => {
            plan.next = Next::Retry {
                delay: Duration::ZERO,
            };
        }
        Next::Retry { delay } => {
            let held = plan.hold_scope.unwrap_or_default();
            plan.next = Next::Retry {
                delay: delay.saturating_sub(held),
            };
        }
        _ => {}
    }
    plan
}

/// Whether a transport failure may have delivered the request.
fn may_have_been_sent(f: TransportFailure) -> bool {
    matches!(
        f,
        TransportFailure::TimeoutAfterSend | TransportFailure::ResetAfterSend
    )
}

/// The scopes a 429 or a spent quota is about: the one the plugin's classification names,
/// else as the answer's quota figures name them — the scopes of the figures that say a quota
/// is spent (`remaining: 0`), else of every figure it carries. A figure without a scope is
/// about the credential's own bucket; an answer with no figures at all holds the credential's
/// bucket, since a limit of unknown scope is assumed to be the whole account's. So a model's
/// spent quota (OpenAI's and Anthropic's figures name the model) holds that model, and the
/// same key's other models keep flowing.
///
/// A named scope the call is not charged in (`charged`: the call's and its plan's scopes)
/// would hold nothing that waits, so the credential's bucket is held instead: a provider
/// whose figures name quotas its plugin does not plan into is held whole, as before.
fn held_scopes<'a>(
    c: &'a Classification,
    observations: &'a [Observation],
    charged: &[String],
) -> Vec<Option<&'a str>> {
    let charged_in = |name: Option<&'a str>| name.filter(|n| charged.iter().any(|s| s == n));
    match &c.scope {
        Some(LimitedScope::Credential) => return vec![None],
        Some(LimitedScope::Named(name)) => return vec![charged_in(Some(name.as_str()))],
        None => {}
    }
    let spent = observations.iter().any(|o| o.remaining == Some(0));
    let mut scopes: Vec<Option<&str>> = observations
        .iter()
        .filter(|o| !spent || o.remaining == Some(0))
        .map(|o| charged_in(o.scope.as_deref()))
        .collect();
    scopes.sort_unstable();
    scopes.dedup();
    if scopes.is_empty() {
        scopes.push(None);
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::held_scopes;
    use crate::contract::{Classification, LimitedScope, Observation, ReportedDimension, Verdict};

    fn figure(scope: Option<&str>, remaining: u64) -> Observation {
        Observation {
            scope: scope.map(str::to_owned),
            dimension: ReportedDimension::Requests,
            limit: Some(100),
            remaining: Some(remaining),
            used: None,
            reset_after_ms: Some(1_000),
            window_ms: None,
            source: "x-ratelimit-remaining-requests".into(),
        }
    }

    fn limited(scope: Option<LimitedScope>) -> Classification {
        Classification {
            verdict: Verdict::RateLimited,
            retry_after_ms: None,
            error_code: None,
            should_retry: None,
            scope,
        }
    }

    fn charged() -> Vec<String> {
        vec!["model:a".into(), "model:b".into(), "search".into()]
    }

    #[test]
    fn a_hold_lands_on_the_scopes_the_answer_names() {
        let (c, charged) = (limited(None), charged());
        assert_eq!(
            held_scopes(&c, &[], &charged),
            vec![None],
            "no figures: the whole credential"
        );
        let model = [figure(Some("model:a"), 0), figure(Some("model:a"), 40)];
        assert_eq!(held_scopes(&c, &model, &charged), vec![Some("model:a")]);
        let spent_key = [figure(Some("model:a"), 3), figure(None, 0)];
        assert_eq!(
            held_scopes(&c, &spent_key, &charged),
            vec![None],
            "the spent figure decides"
        );
        let none_spent = [figure(Some("model:a"), 3), figure(Some("search"), 1)];
        assert_eq!(
            held_scopes(&c, &none_spent, &charged),
            vec![Some("model:a"), Some("search")]
        );
    }

    #[test]
    fn a_scope_the_call_is_not_charged_in_holds_the_credential() {
        let c = limited(None);
        let policy = [figure(Some("burst-policy"), 0)];
        assert_eq!(held_scopes(&c, &policy, &charged()), vec![None]);
        let named = limited(Some(LimitedScope::Named("elsewhere".into())));
        assert_eq!(held_scopes(&named, &[], &charged()), vec![None]);
    }

    #[test]
    fn the_classification_s_scope_overrides_the_figures() {
        let model = [figure(Some("model:a"), 0)];
        let key = limited(Some(LimitedScope::Credential));
        assert_eq!(held_scopes(&key, &model, &charged()), vec![None]);
        let named = limited(Some(LimitedScope::Named("model:b".into())));
        assert_eq!(
            held_scopes(&named, &model, &charged()),
            vec![Some("model:b")]
        );
    }
}
