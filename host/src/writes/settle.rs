//! Settling a write whose outcome is unknown: ask the provider's plugin how to find out,
//! find out through the normal admission path, and move the action to what is known — or
//! to a person.
//!
//! Two rules keep a lookup from resending a write that happened:
//!
//! - the plugin is given the action's client reference only when the write's body carries
//!   it. A provider can only be searched for a reference it was sent; a reference the body
//!   lacks would be "not found" whether the write happened or not.
//! - "not found" is believed only when a second lookup, [`Writes::provider_timeout`] after
//!   the first, agrees. The first lookup may come while an attempt is still at the provider
//!   (its client timed out, or was killed, while the provider worked on): that attempt can
//!   still take effect, and a resend on the first answer would then be a second effect.
//!   Every attempt was sent before the first lookup, so by the second the provider has
//!   finished or abandoned each of them.

use super::request::StoredRequest;
use super::send::{RESEND, STATUS_QUERY};
use super::{Step, WriteError, WriteOutcome, Writes};
use crate::audit::EventKind;
use crate::contract::{ReconcilePlan, Reconciliation, RequestClass, StatusQuery, UncertainWrite};
use crate::execute::{Call, Outcome};
use crate::guard::GuardedPolicy;
use crate::headers::field_pairs;
use crate::journal::escalations::Kind;
use crate::journal::{Action, AttemptRecord, State};

/// Whether `body` holds `reference`: the provider can be asked about a reference only if it
/// was sent one.
fn carries(body: &[u8], reference: &str) -> bool {
    !reference.is_empty()
        && body
            .windows(reference.len())
            .any(|w| w == reference.as_bytes())
}

/// `scheme://host:port` of an absolute URL.
fn origin(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&url[..scheme.len() + 3 + end])
}

impl Writes {
    /// Settles `action`, which may have happened: never by a blind resend.
    ///
    /// # Errors
    /// The journal or the audit log failed.
    pub async fn settle(&self, action: Action) -> Result<WriteOutcome, WriteError> {
        self.settle_with(action, true, None).await
    }

    /// Settles `action`; `may_resend`: a resend with the same key is allowed (not when one
    /// just failed to settle it); `operation_id`: an id a person found.
    pub(super) async fn settle_with(
        &self,
        action: Action,
        may_resend: bool,
        operation_id: Option<String>,
    ) -> Result<WriteOutcome, WriteError> {
        let mut action = action;
        if action.state == State::Sent {
            // A restarted host finds the attempt marked sent and no result: unknown.
            action = self.journal.advance(action.id, State::Uncertain, None)?;
            self.audit(
                self.event(EventKind::ReconciliationRequired, &action)
                    .attempt(action.attempts)
                    .detail("sent, and no result was recorded"),
            )?;
        }
        let Some(policy) = self.executor.policy(&action.provider) else {
            let why = format!("no plugin is configured for `{}`", action.provider);
            return self.escalate(&action, Kind::UncertainWrite, &why, None, None);
        };
        let stored = StoredRequest::load(&action)?;
        if action.state != State::Reconciling {
            action = self.journal.advance(action.id, State::Reconciling, None)?;
        }
        self.step(Step::Reconciling);
        let body = self.journal.body(action.id)?;
        let mut write = UncertainWrite {
            method: action.method.clone(),
            url: stored.url.clone(),
            idempotency_key: Some(action.idempotency_key.clone()),
            client_reference: carries(&body, &action.client_reference)
                .then(|| action.client_reference.clone()),
            operation_id: operation_id.or_else(|| action.operation_id.clone()),
            now_ms: self.clock.wall_ms(),
        };
        let cancelled = self.journal.is_cancelled(&action.task)?;
        let query = match policy.reconcile(&write).value {
            ReconcilePlan::Unsupported(why) => {
                let why = format!(
                    "the `{}` plugin cannot check this write: {why}",
                    action.provider
                );
                return self.escalate(&action, Kind::UncertainWrite, &why, None, None);
            }
            ReconcilePlan::ResendSameKey => {
                return self
                    .resend_or_escalate(
                        &action,
                        &stored,
                        may_resend && !cancelled,
                        "the provider suppresses duplicates by idempotency key",
                    )
                    .await;
            }
            ReconcilePlan::Query(q) => q,
        };
        let shown = format!("{} {}", query.method, query.url);
        if origin(&query.url).is_none() || origin(&query.url) != origin(&stored.url) {
            // The host adds the credential to the query: it goes nowhere but the provider.
            let why = format!(
                "the plugin's status query goes to another origin than the write ({shown}); \
                 it was not sent"
            );
            return self.escalate(&action, Kind::UncertainWrite, &why, None, Some(shown));
        }
        let Some((status, found)) = self
            .look(&policy, &action, &stored, &query, &mut write)
            .await?
        else {
            let why = "the status query got no answer".to_owned();
            return self.escalate(&action, Kind::UncertainWrite, &why, None, Some(shown));
        };
        match found {
            Reconciliation::Found(op) => self.succeeded(
                &action,
                op,
                EventKind::Reconciled,
                status,
                "found: the write happened",
            ),
            Reconciliation::NotFound if cancelled => {
                self.audit(
                    self.event(EventKind::Reconciled, &action)
                        .status(status)
                        .detail("not found: the write did not happen, and its task is cancelled"),
                )?;
                self.cancel_action(&action)
            }
            Reconciliation::NotFound => {
                self.resend_or_escalate(
                    &action,
                    &stored,
                    may_resend,
                    "the provider confirms the write did not happen",
                )
                .await
            }
            Reconciliation::Unknown(why) => {
                let why = format!("the status query did not settle it: {why}");
                self.escalate(&action, Kind::UncertainWrite, &why, None, Some(shown))
            }
        }
    }

    /// Asks the provider by `query` what became of `write`, and has its plugin read the
    /// answer: the answer's status and what it revealed, or `None` when no answer came. A
    /// "not found" is asked again a provider timeout later, and only the second answer
    /// counts (see the module's documentation).
    async fn look(
        &self,
        policy: &GuardedPolicy,
        action: &Action,
        stored: &StoredRequest,
        query: &StatusQuery,
        write: &mut UncertainWrite,
    ) -> Result<Option<(u16, Reconciliation)>, WriteError> {
        let mut again = !self.provider_timeout.is_zero();
        loop {
            let answer = self.query(action, stored, query).await?;
            self.step(Step::QueryAnswered);
            let Some(response) = answer else {
                return Ok(None);
            };
            let found = policy.read_reconciliation(write, &response).value;
            if found != Reconciliation::NotFound || !again {
                return Ok(Some((response.status, found)));
            }
            again = false;
            // As long as an attempt may still be at work at the provider: its own timeout,
            // or the model's configured generation time when that is longer.
            let generation = self
                .executor
                .generation_timeout(&action.provider, &self.journal.body(action.id)?)
                .unwrap_or_default();
            let wait = self.provider_timeout.max(generation);
            self.audit(
                self.event(EventKind::Reconciled, action)
                    .status(response.status)
                    .detail(&format!(
                        "not found yet: looking again in {} ms, when no attempt can still be \
                         at the provider",
                        wait.as_millis()
                    )),
            )?;
            tokio::time::sleep(wait).await;
            write.now_ms = self.clock.wall_ms();
        }
    }

    /// Resends `action` with its key when `allowed`; else a person decides.
    async fn resend_or_escalate(
        &self,
        action: &Action,
        stored: &StoredRequest,
        allowed: bool,
        because: &str,
    ) -> Result<WriteOutcome, WriteError> {
        if !allowed {
            let why = format!(
                "{because}, but a resend is not allowed now (its task is cancelled, or a \
                 resend with the same key already failed to settle it)"
            );
            return self.escalate(action, Kind::UncertainWrite, &why, None, None);
        }
        self.audit(
            self.event(EventKind::Reconciled, action)
                .detail(&format!("{because}: resending with the same key")),
        )?;
        let call = stored.call(action, self.journal.body(action.id)?);
        self.send(action, &call, RESEND).await
    }

    /// Sends a status query through the admission queue; its answer, if one came.
    async fn query(
        &self,
        action: &Action,
        stored: &StoredRequest,
        q: &StatusQuery,
    ) -> Result<Option<crate::contract::Response>, WriteError> {
        let call = Call {
            provider: action.provider.clone(),
            credential: stored.credential.clone(),
            pool: None,
            scopes: stored.scopes.clone(),
            tenant: Some(stored.tenant.clone()).filter(|t| !t.is_empty()),
            // A read that settles what happened runs even for a cancelled task.
            task: None,
            priority: None,
            class: RequestClass::Read,
            method: q.method.clone(),
            url: q.url.clone(),
            headers: field_pairs(&q.headers)
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect(),
            body: q.body.clone().into(),
            deadline: None,
            // A status query must be fresh: never shared.
            coalesce: false,
        };
        let at_ms = self.clock.wall_ms();
        let (response, attempts, status) = match self.executor.execute(&call).await {
            Outcome::Succeeded {
                response, attempts, ..
            } => {
                let s = response.status;
                (Some(response), attempts, Some(s))
            }
            Outcome::Ended(t) => (t.last_response.clone(), t.attempts, t.last_status),
        };
        self.journal.log_attempt(
            action.id,
            &AttemptRecord {
                attempt: action.attempts,
                at_ms,
                status,
                retry_after_ms: None,
                note: format!(
                    "{STATUS_QUERY} {} {} ({attempts} attempt{})",
                    q.method,
                    q.url,
                    if attempts == 1 { "" } else { "s" }
                ),
            },
        )?;
        let mut event = self
            .event(EventKind::Reconciled, action)
            .detail(&format!("{STATUS_QUERY} {} {}", q.method, q.url));
        if let Some(s) = status {
            event = event.status(s);
        }
        self.audit(event)?;
        Ok(response)
    }
}
