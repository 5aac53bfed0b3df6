//! Sending a journaled write: every attempt marked `sent` durably and audited before its
//! bytes go out, every answer recorded, and the outcome sorted into what is known.

use std::time::Duration;

use super::request::keyed;
use super::{Step, WriteError, WriteOutcome, Writes, task_id};
use crate::audit::EventKind;
use crate::contract::{Classification, Response, Verdict};
use crate::execute::{Call, NotRecorded, Observer, Outcome, Reason, Terminal};
use crate::journal::escalations::Kind;
use crate::journal::{Action, AttemptRecord, State};
use crate::retry::Stop;
use crate::vectors::verdict_name;

/// The note of a resend with the same key.
pub(super) const RESEND: &str = "resend with the same key";
/// The note of a status query.
pub(super) const STATUS_QUERY: &str = "status query";

/// Whether `attempt` was part of settling an uncertain write (a status query, or a resend
/// with the same key).
pub fn is_reconciliation(attempt: &AttemptRecord) -> bool {
    attempt.note.starts_with(RESEND) || attempt.note.starts_with(STATUS_QUERY)
}

/// Journals and audits each attempt of one action.
struct Recorder<'a> {
    writes: &'a Writes,
    action: &'a Action,
    /// Attempts the action had before this run: the journal counts across runs.
    before: u32,
    note: &'static str,
    /// Whether some attempt of this run got no answer.
    unanswered: bool,
    /// Whether every answer of this run refused the write outright (429, a spent quota, a
    /// client or auth error): then nothing of it happened.
    refused_every_time: bool,
    /// The first journal or audit failure after a send, reported when the call ends.
    error: Option<WriteError>,
}

impl Recorder<'_> {
    fn keep(&mut self, result: Result<(), WriteError>) {
        if let Err(e) = result {
            tracing::error!(action = self.action.id, "{e}");
            self.error.get_or_insert(e);
        }
    }
}

impl Observer for Recorder<'_> {
    fn before_send(&mut self, attempt: u32) -> Result<(), NotRecorded> {
        let w = self.writes;
        w.journal
            .advance(self.action.id, State::Sent, None)
            .map_err(NotRecorded::new)?;
        w.audit(
            w.event(EventKind::ActionSent, self.action)
                .attempt(self.before + attempt)
                .detail(self.note),
        )
        .map_err(NotRecorded::new)?;
        w.step(Step::SentCommitted(self.before + attempt));
        Ok(())
    }

    fn after_attempt(&mut self, attempt: u32, status: Option<u16>, read: &Classification) {
        let w = self.writes;
        let n = self.before + attempt;
        w.step(Step::Answered(n));
        self.unanswered |= status.is_none();
        self.refused_every_time &= status.is_some()
            && matches!(
                read.verdict,
                Verdict::RateLimited
                    | Verdict::QuotaExhausted
                    | Verdict::ClientError
                    | Verdict::AuthError
            );
        let record = AttemptRecord {
            attempt: n,
            at_ms: w.clock.wall_ms(),
            status,
            retry_after_ms: read.retry_after_ms,
            note: format!("{}: {}", self.note, verdict_name(read.verdict)),
        };
        let logged = w.journal.log_attempt(self.action.id, &record);
        self.keep(logged.map_err(WriteError::from));
        let mut event = w
            .event(EventKind::ActionResult, self.action)
            .attempt(n)
            .detail(verdict_name(read.verdict));
        if let Some(s) = status {
            event = event.status(s);
        }
        if let Some(ms) = read.retry_after_ms {
            event = event.retry_after_ms(ms);
        }
        let audited = w.audit(event);
        self.keep(audited);
    }

    fn retry_scheduled(&mut self, attempt: u32, delay: Duration) {
        let w = self.writes;
        let due = w
            .clock
            .wall_ms()
            .saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
        let audited = w.audit(
            w.event(EventKind::RetryScheduled, self.action)
                .attempt(self.before + attempt)
                .due_ms(due),
        );
        self.keep(audited);
    }
}

/// The provider's id for what a write created: the answer's top-level JSON `id`, a string
/// (`pi_3Nx...`) or a number (GitHub's ids).
pub(super) fn operation_id(response: &Response) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&response.body).ok()?;
    let id = match v.get("id")? {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    (!id.is_empty() && id.len() <= 255).then_some(id)
}

impl Writes {
    /// Sends `action` (as `call`, with the action's key) and sorts out what is known.
    pub(super) async fn send(
        &self,
        action: &Action,
        call: &Call,
        note: &'static str,
    ) -> Result<WriteOutcome, WriteError> {
        let call = keyed(action, call);
        let mut recorder = Recorder {
            writes: self,
            action,
            before: action.attempts,
            note,
            unanswered: false,
            refused_every_time: true,
            error: None,
        };
        let outcome = self.executor.execute_observed(&call, &mut recorder).await;
        // A refusal proves nothing happened only if no earlier attempt may have acted: a
        // 429 to a resend says nothing of the first send.
        let (refused, error) = (
            action.attempts == 0 && !recorder.unanswered && recorder.refused_every_time,
            recorder.error,
        );
        if let Some(e) = error {
            // The journal or the log missed a result: leave the action as it is (`sent`),
            // so it is settled by reading, never resent.
            return Err(WriteError::NotRecorded(Box::new(e)));
        }
        match outcome {
            Outcome::Succeeded { response, .. } => {
                // Kept before the action is marked done: a resubmission finds it.
                self.keep_answer(action.id, &response);
                self.succeeded(
                    action,
                    operation_id(&response),
                    EventKind::ActionResult,
                    response.status,
                    "succeeded",
                )
                .map(|done| match done {
                    WriteOutcome::Succeeded { action, .. } => WriteOutcome::Succeeded {
                        action,
                        response: Some(Box::new(response)),
                        replayed: false,
                    },
                    other => other,
                })
            }
            Outcome::Ended(t) => self.after_failure(action, t, refused, note).await,
        }
    }

    async fn after_failure(
        &self,
        action: &Action,
        t: Box<Terminal>,
        refused: bool,
        note: &'static str,
    ) -> Result<WriteOutcome, WriteError> {
        let now = self.journal.get(action.id)?;
        if now.state != State::Sent {
            // This run sent nothing.
            if t.reason == Reason::Cancelled || self.journal.is_cancelled(&now.task)? {
                if now.state.may_become(State::Cancelled) && now.attempts == 0 {
                    return self.cancel_action(&now);
                }
                return self.outcome_of(&now);
            }
            if now.state == State::Pending
                && let Reason::BudgetSpent(spent) = &t.reason
            {
                // Refused before it queued: the tenant's budget is spent until its period
                // resets. A person decides (wait for the reset, raise the budget, cancel).
                let reason = format!("the tenant's budget is spent: {spent}");
                return self.escalate(&now, Kind::BudgetSpent, &reason, Some(&t), None);
            }
            if now.state == State::Pending
                && matches!(t.reason, Reason::OutOfTime(_) | Reason::Refused(_))
                && let Some(hold) = self.quota_hold(&now)?
            {
                // The scope is held for a spent quota past what the write may wait (its
                // deadline, or the queue's bound): a person decides (wait, raise the quota,
                // change the plan, cancel).
                let reason = format!("the provider's quota is spent ({})", hold.reason);
                return self.escalate(&now, Kind::QuotaExhausted, &reason, Some(&t), None);
            }
            if t.out_of_time() && now.state == State::Pending {
                // The time budget is spent: a person decides whether the task goes on;
                // its waiting work is cancelled now and never wakes.
                self.executor.cancel_task(task_id(&now.task));
                let reason = format!("the task's time budget is spent: {}", describe(&t));
                return self.escalate(&now, Kind::TimeBudget, &reason, Some(&t), None);
            }
            if now.state == State::Pending {
                // Refused before its first byte: the agent is told nothing happened, and
                // nothing sends it later unless the agent submits it again.
                let refused = self.journal.advance(now.id, State::Refused, None)?;
                self.audit(
                    self.event(EventKind::ActionResult, &refused)
                        .detail(&format!("refused before it was sent: {}", describe(&t))),
                )?;
                self.step(Step::ResultCommitted(State::Refused));
                return Ok(WriteOutcome::Refused {
                    action: refused,
                    terminal: Some(t),
                });
            }
            // A decision's send refused before its first byte: the action keeps its state
            // (escalated), and the decision stays to be carried out.
            return Ok(WriteOutcome::Deferred {
                action: now,
                terminal: Some(t),
            });
        }
        if refused && matches!(t.reason, Reason::Stopped(Stop::QuotaExhausted { .. })) {
            // Refused outright by a spent quota: nothing happened, and it is not a short
            // wait. A person decides (wait, raise the quota, change the plan, cancel).
            let reason = format!("the provider's quota is spent: {}", describe(&t));
            return self.escalate(&now, Kind::QuotaExhausted, &reason, Some(&t), None);
        }
        if refused && t.out_of_time() {
            // Every answer refused it, and waiting for the next chance would pass the
            // budget: nothing happened, and a person decides whether the task goes on.
            self.executor.cancel_task(task_id(&now.task));
            let reason = format!("the task's time budget is spent: {}", describe(&t));
            return self.escalate(&now, Kind::TimeBudget, &reason, Some(&t), None);
        }
        if refused {
            let failed = self.journal.advance(action.id, State::Failed, None)?;
            self.audit(
                self.event(EventKind::ActionResult, &failed)
                    .detail(&format!("failed: {}", describe(&t))),
            )?;
            self.step(Step::ResultCommitted(State::Failed));
            return Ok(WriteOutcome::Failed {
                action: failed,
                terminal: Some(t),
            });
        }
        let uncertain = self.journal.advance(action.id, State::Uncertain, None)?;
        self.audit(
            self.event(EventKind::ReconciliationRequired, &uncertain)
                .attempt(uncertain.attempts)
                .detail(&describe(&t)),
        )?;
        self.step(Step::ResultCommitted(State::Uncertain));
        // A resend that did not settle it goes to a person, not round again.
        Box::pin(self.settle_with(uncertain, note != RESEND, None)).await
    }
}

impl Writes {
    /// The hold a spent quota put on the scope `action` is sent through, if one is in force.
    fn quota_hold(&self, action: &Action) -> Result<Option<crate::admission::Hold>, WriteError> {
        let stored = super::request::StoredRequest::load(action)?;
        Ok(self
            .executor
            .quota_hold(&action.provider, &stored.credential))
    }

    /// Records that `action` happened — the journal, then the audit log — and says so.
    pub(super) fn succeeded(
        &self,
        action: &Action,
        op: Option<String>,
        kind: EventKind,
        status: u16,
        how: &str,
    ) -> Result<WriteOutcome, WriteError> {
        let done = self
            .journal
            .advance(action.id, State::Succeeded, op.as_deref())?;
        self.audit(self.event(kind, &done).status(status).detail(&format!(
            "{how}; operation {}",
            op.as_deref().unwrap_or("unknown")
        )))?;
        self.step(Step::ResultCommitted(State::Succeeded));
        Ok(WriteOutcome::Succeeded {
            action: done,
            response: None,
            replayed: false,
        })
    }
}

/// A short account of how a call ended, on one line: `stopped: outcome-unknown after 1
/// attempt, no answer, waited 0 ms`. Control characters in a reason's text are escaped.
pub(super) fn describe(t: &Terminal) -> String {
    let status = t
        .last_status
        .map_or_else(|| "no answer".to_owned(), |s| format!("last status {s}"));
    let mut reason = String::new();
    for c in t.reason.to_string().chars() {
        if c.is_control() {
            reason.extend(c.escape_default());
        } else {
            reason.push(c);
        }
    }
    format!(
        "{reason} after {} attempt{}, {status}, waited {} ms",
        t.attempts,
        if t.attempts == 1 { "" } else { "s" },
        t.waited.as_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Bound, Rejection};
    use crate::execute::NextAction;

    fn ended(reason: Reason, attempts: u32, last_status: Option<u16>) -> Terminal {
        Terminal {
            reason,
            sent: true,
            response_received: last_status.is_some(),
            attempts,
            waited: Duration::from_millis(1_500),
            last_status,
            error_code: None,
            last_response: None,
            transport_error: None,
            next_action: NextAction::Reconcile,
        }
    }

    #[test]
    fn a_write_s_ending_reads_as_words_not_as_a_debug_print() {
        assert_eq!(
            describe(&ended(Reason::Stopped(Stop::OutcomeUnknown), 1, None)),
            "stopped: outcome-unknown after 1 attempt, no answer, waited 1500 ms"
        );
        assert_eq!(
            describe(&ended(
                Reason::Stopped(Stop::StatusNotRetried(409)),
                3,
                Some(409)
            )),
            "stopped: status 409 not retried after 3 attempts, last status 409, waited 1500 ms"
        );
        assert_eq!(
            describe(&ended(
                Reason::Refused(Rejection::Backpressure(Bound::Tenant {
                    tenant: "acme\nfull".into(),
                    max_queued: 3
                })),
                0,
                None
            )),
            "refused: backpressure: tenant acme\\nfull already has 3 requests waiting (its \
             tier's max_queued) after 0 attempts, no answer, waited 1500 ms"
        );
    }
}
