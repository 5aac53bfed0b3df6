//! What a call has done so far, and the [`Terminal`] it ends with.

use std::time::Duration;

use super::{NextAction, Outcome, Reason, Terminal};
use crate::contract::{Response, WireOutcome as Wire};
use crate::retry::Stop;

/// What a call has done so far.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub sent: bool,
    pub response_received: bool,
    pub attempts: u32,
    /// Time waited between attempts (what the class's wait budget counts).
    pub waited: Duration,
    /// Time spent in the admission queue, every attempt together.
    pub queued: Duration,
    pub last_status: Option<u16>,
    pub error_code: Option<String>,
    pub last_response: Option<Response>,
    pub transport_error: Option<String>,
    /// Attempts of a generation that were sent and got no answer.
    pub unanswered: u32,
}

impl Tally {
    /// Keeps a failed attempt's answer for the call's [`Terminal`] (moved, not copied: a
    /// success never pays for it).
    pub fn keep_answer(&mut self, wire: Wire) {
        if let Wire::Response(r) = wire {
            self.last_response = Some(r);
        }
    }

    pub fn end(self, reason: Reason, next_action: NextAction) -> Outcome {
        Outcome::Ended(Box::new(Terminal {
            reason,
            sent: self.sent,
            response_received: self.response_received,
            attempts: self.attempts,
            waited: self.waited + self.queued,
            last_status: self.last_status,
            error_code: self.error_code,
            last_response: self.last_response,
            transport_error: self.transport_error,
            next_action,
        }))
    }
}

/// What to do after a call the retry policy stopped.
pub(super) fn next_action(
    stop: &Stop,
    retry_after_ms: Option<u64>,
    status: Option<u16>,
) -> NextAction {
    let after = retry_after_ms.map(Duration::from_millis);
    match stop {
        // An auth failure is a credential problem, not the request's.
        Stop::NeverRetry | Stop::StatusNotRetried(_) if matches!(status, Some(401 | 403)) => {
            NextAction::Reauthenticate
        }
        // A status the class does not retry that says nothing is wrong with the request (a
        // 429, a timeout, a server's failure): the caller may try later, never "fix it".
        Stop::StatusNotRetried(s) if *s == 408 || *s == 429 || *s >= 500 => {
            NextAction::RetryLater(after)
        }
        Stop::NeverRetry | Stop::StatusNotRetried(_) => NextAction::FixRequest,
        Stop::Conflict => NextAction::ResolveConflict,
        Stop::QuotaExhausted { reset_after } => NextAction::WaitForQuota(*reset_after),
        Stop::OutcomeUnknown => NextAction::Reconcile,
        Stop::ProviderSaidNo
        | Stop::AttemptsExhausted
        | Stop::WaitBudgetExhausted { .. }
        | Stop::DeadlinePassed { .. }
        | Stop::GenerationUnanswered => NextAction::RetryLater(after),
    }
}
