//! A restarted host's first work, and people's decisions carried out.

use super::request::StoredRequest;
use super::send::RESEND;
use super::{WriteError, WriteOutcome, Writes, task_id};
use crate::audit::{Event, EventKind};
use crate::journal::escalations::{Approval, Choice};
use crate::journal::{Intent, State};
use crate::printable::printable;

impl Writes {
    /// Resumes every unfinished action with its original key, then carries out decisions
    /// people made while no host ran. A `pending` action sent nothing and is sent; a
    /// `sent`, `uncertain` or `reconciling` one is settled by asking the provider, never
    /// resent blindly; a cancelled task's actions never wake.
    ///
    /// # Errors
    /// The journal or the audit log failed; what was done before stays done.
    pub async fn recover(&self) -> Result<Vec<WriteOutcome>, WriteError> {
        let mut outcomes = Vec::new();
        for listed in self.journal.unfinished()? {
            let Some(_claim) = self.claim(listed.id) else {
                continue;
            };
            // Read again under the claim: the list may be old (a takeover runs this while
            // the host serves), and a run that released the claim may have moved the action
            // on — escalated it, settled it — or another host may own it now.
            let action = self.journal.get(listed.id)?;
            let ours =
                action.state.is_unfinished() && self.journal.knows(&action.task, &action.action)?;
            if ours {
                outcomes.push(self.resume(action).await?);
            }
        }
        outcomes.extend(self.apply_decisions().await?);
        Ok(outcomes)
    }

    /// Copies decisions and body disclosures recorded in the journal (by the CLI, or the
    /// library) into the audit log.
    ///
    /// # Errors
    /// The journal or the audit log failed.
    pub fn audit_decisions(&self) -> Result<(), WriteError> {
        let (approvals, disclosures) = self.journal.escalations().unaudited()?;
        for a in &approvals {
            let kind = if a.kind == "access" {
                EventKind::AccessApproved
            } else {
                EventKind::Decision
            };
            let mut event = Event::new(kind, a.at_ms).task(&a.task).detail(&format!(
                "escalation {}: {}{}",
                a.escalation_id,
                a.summary(),
                a.note_after(": ")
            ));
            if let Some(id) = a.action_id
                && let Ok(action) = self.journal.get(id)
            {
                event = event
                    .action(&action.action)
                    .idempotency_key(&action.idempotency_key);
            }
            self.audit(event)?;
        }
        for d in &disclosures {
            self.audit(
                Event::new(EventKind::BodyDisclosed, d.at_ms)
                    .task(&d.task)
                    .detail(&format!(
                        "escalation {}: the body of action {} was shown to {}",
                        d.escalation_id,
                        d.action_id,
                        printable(&d.asked_by)
                    )),
            )?;
        }
        let approvals: Vec<i64> = approvals.iter().map(|a| a.id).collect();
        let disclosures: Vec<i64> = disclosures.iter().map(|d| d.id).collect();
        self.journal
            .escalations()
            .audited(&approvals, &disclosures)?;
        Ok(())
    }

    /// Carries out the decisions people made on escalations and not yet carried out.
    ///
    /// # Errors
    /// The journal or the audit log failed.
    pub async fn apply_decisions(&self) -> Result<Vec<WriteOutcome>, WriteError> {
        // One at a time in a host: the sidecar's loop and a takeover may both look, and a
        // decision is carried out once.
        let _one = self.deciding.lock().await;
        self.audit_decisions()?;
        let mut outcomes = Vec::new();
        for approval in self.journal.escalations().undone()? {
            match self.apply(&approval).await? {
                Applied::Done(outcome) => {
                    outcomes.extend(outcome);
                    self.journal.escalations().done(approval.escalation_id)?;
                }
                // The action's state did not change: the decision stays to be carried
                // out, and the case stays open.
                Applied::NotYet { why, outcome } => {
                    tracing::warn!(
                        escalation = approval.escalation_id,
                        "a decision was not carried out yet, and its case stays open: {why}"
                    );
                    outcomes.extend(outcome);
                }
            }
        }
        Ok(outcomes)
    }

    async fn apply(&self, approval: &Approval) -> Result<Applied, WriteError> {
        let escalation = self.journal.escalations().get(approval.escalation_id)?;
        let Some(id) = escalation.action_id else {
            return Ok(Applied::Done(None));
        };
        let action = self.journal.get(id)?;
        if action.state != State::Escalated {
            return Ok(Applied::Done(None));
        }
        let Some(_claim) = self.claim(id) else {
            return Ok(Applied::NotYet {
                why: "another run of this host is working on the action".into(),
                outcome: None,
            });
        };
        let stored = StoredRequest::load(&action)?;
        let outcome = match approval.decision.choice {
            Choice::QueryExisting => {
                let action = self.journal.advance(id, State::Reconciling, None)?;
                self.settle_with(action, false, approval.decision.operation_id.clone())
                    .await?
            }
            Choice::RetrySameKey => {
                let call = stored.call(&action, self.journal.body(id)?);
                self.send(&action, &call, RESEND).await?
            }
            // Refused by a spent quota or budget: nothing happened, so it is sent as it
            // first was (a budget is checked again).
            Choice::Wait | Choice::RaiseBudget => {
                let call = stored.call(&action, self.journal.body(id)?);
                self.send(&action, &call, "send").await?
            }
            Choice::RaiseQuota => {
                self.executor
                    .lift_hold(&action.provider, &stored.credential);
                let call = stored.call(&action, self.journal.body(id)?);
                self.send(&action, &call, "send").await?
            }
            Choice::ContinueAccess => {
                self.executor.resume_task(task_id(&action.task));
                let call = stored.call(&action, self.journal.body(id)?);
                self.send(&action, &call, "send").await?
            }
            Choice::SendAsNew => {
                let body = self.journal.body(id)?;
                let intent = Intent {
                    task: action.task.clone(),
                    action: format!("{}~new-{}", action.action, approval.id),
                    provider: action.provider.clone(),
                    method: action.method.clone(),
                    route: action.route.clone(),
                    class: action.class.clone(),
                    body: body.clone(),
                    request: action.request.clone(),
                    goal: action.goal.clone(),
                };
                self.journal.advance(id, State::Cancelled, None)?;
                let fresh = self.journal.record(&intent)?.action().clone();
                self.audit(
                    self.event(EventKind::ActionRequested, &fresh)
                        .detail(&format!(
                            "sent as a new operation in place of `{}` by decision: may create a \
                         second side effect",
                            action.action
                        )),
                )?;
                let call = stored.call(&fresh, body);
                self.send(&fresh, &call, "send as new").await?
            }
            Choice::Cancel | Choice::ChangePlan => return Ok(Applied::Done(None)),
        };
        // A send refused before its first byte (backpressure, an open breaker) left the
        // action as it was: the decision is not carried out yet.
        if let WriteOutcome::Deferred { action, terminal } = &outcome
            && action.state == State::Escalated
        {
            let why = terminal.as_ref().map_or_else(
                || "its send was refused".to_owned(),
                |t| format!("its send was refused: {}", t.reason),
            );
            return Ok(Applied::NotYet {
                why,
                outcome: Some(outcome),
            });
        }
        Ok(Applied::Done(Some(outcome)))
    }
}

/// What carrying out one decision came to.
enum Applied {
    /// Carried out (or nothing to carry out any more): the decision is marked applied.
    Done(Option<WriteOutcome>),
    /// The action's state did not change: the decision stays to be carried out.
    NotYet {
        why: String,
        outcome: Option<WriteOutcome>,
    },
}
