//! What a call has done so far, and the [`Terminal`] it ends with.

use std::time::Duration;

use super::{NextAction, Outcome, Reason, Terminal};
use crate::contract::{Response, WireOutcome as Wire};
use crate::retry::{Open, Stop};

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
    /// What the last failed attempt said, once one did. Boxed: held inline, it would grow
    /// every waiting call by the answer's fields.
    said: Option<Box<Said>>,
    /// Attempts of a generation that were sent and got no answer.
    pub unanswered: u32,
    /// The last attempt was cut by the caller's own deadline, not by the transport: its
    /// failure is the caller's, and trips only its tenant's breaker.
    pub cut_by_caller: bool,
}

/// What the call's last failed attempts said, for its [`Terminal`].
#[derive(Debug, Default)]
struct Said {
    error_code: Option<String>,
    last_response: Option<Response>,
    transport_error: Option<String>,
}

impl Tally {
    fn said(&mut self) -> &mut Said {
        self.said.get_or_insert_with(Box::default)
    }

    /// Keeps a failed attempt's answer for the call's [`Terminal`] (moved, not copied: a
    /// success never pays for it).
    pub fn keep_answer(&mut self, wire: Wire) {
        if let Wire::Response(r) = wire {
            self.said().last_response = Some(r);
        }
    }

    /// The error code the last answer was read with (none: it had none).
    pub fn error_code(&mut self, code: Option<&String>) {
        match (code, &mut self.said) {
            (None, None) => {}
            (code, _) => self.said().error_code = code.cloned(),
        }
    }

    /// What the client said of an attempt that got no answer.
    pub fn transport_error(&mut self, detail: String) {
        self.said().transport_error = Some(detail);
    }

    /// The end of a call a breaker refused: with all it did so far (the tally is left
    /// empty).
    pub fn breaker_open(&mut self, open: Open) -> Outcome {
        let after = open.retry_in;
        std::mem::take(self).end(
            Reason::BreakerOpen(open),
            NextAction::RetryLater(Some(after)),
        )
    }

    pub fn end(self, reason: Reason, next_action: NextAction) -> Outcome {
        let said = self.said.map(|s| *s).unwrap_or_default();
        Outcome::Ended(Box::new(Terminal {
            reason,
            sent: self.sent,
            response_received: self.response_received,
            attempts: self.attempts,
            waited: self.waited + self.queued,
            last_status: self.last_status,
            error_code: said.error_code,
            last_response: said.last_response,
            transport_error: said.transport_error,
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
