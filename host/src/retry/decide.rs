//! What to do after one attempt: done, retry after a delay, or stop — and whether the scope
//! must be held first. A pure function of the plugin's classification and the budgets.

use std::time::Duration;

use super::backoff::Backoff;
use super::classes::ClassBudget;
use crate::contract::{Classification, RequestClass, Verdict};

/// Why a call ends without success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A client or auth error: retrying cannot help. Fix the request, re-authenticate, or ask
    /// a person.
    NeverRetry,
    /// A conflict the provider did not mark as worth retrying.
    Conflict,
    /// A quota that resets on a billing or daily period is used up.
    QuotaExhausted {
        /// When it resets, if the provider said.
        reset_after: Option<Duration>,
    },
    /// A write may have happened: it needs reconciliation, never a blind resend.
    OutcomeUnknown,
    /// The provider said not to retry.
    ProviderSaidNo,
    /// This status is not in the class's retry list.
    StatusNotRetried(u16),
    /// The class's attempts are used up.
    AttemptsExhausted,
    /// The next wait would pass the class's wait budget.
    WaitBudgetExhausted {
        /// The wait the next attempt needed.
        needed: Duration,
    },
    /// The next wait would pass the call's deadline.
    DeadlinePassed {
        /// The wait the next attempt needed.
        needed: Duration,
    },
    /// A generation was sent and got no answer (it timed out, or its connection broke): the
    /// provider may have generated it and billed it, so it is not sent again (or was
    /// already sent again once, as `retry.resend_unanswered_generation` allows).
    GenerationUnanswered,
}

/// Names the stop as the contract names a verdict (`outcome-unknown`), with its figures: what
/// an audit note or an escalation shows a person.
impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NeverRetry => f.write_str("never-retry"),
            Self::Conflict => f.write_str("conflict"),
            Self::QuotaExhausted {
                reset_after: Some(after),
            } => write!(f, "quota-exhausted, resets in {} ms", after.as_millis()),
            Self::QuotaExhausted { reset_after: None } => f.write_str("quota-exhausted"),
            Self::OutcomeUnknown => f.write_str("outcome-unknown"),
            Self::ProviderSaidNo => f.write_str("provider-said-no"),
            Self::StatusNotRetried(status) => write!(f, "status {status} not retried"),
            Self::AttemptsExhausted => f.write_str("attempts-exhausted"),
            Self::WaitBudgetExhausted { needed } => write!(
                f,
                "wait-budget-exhausted, the next wait needed {} ms",
                needed.as_millis()
            ),
            Self::DeadlinePassed { needed } => write!(
                f,
                "deadline-passed, the next wait needed {} ms",
                needed.as_millis()
            ),
            Self::GenerationUnanswered => f.write_str("generation-unanswered"),
        }
    }
}

/// The next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The call succeeded.
    Done,
    /// Attempt again after `delay` (through the admission queue).
    Retry {
        /// How long to wait first.
        delay: Duration,
    },
    /// The call ends.
    Stop(Stop),
}

/// The decision after one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Hold the whole scope this long, before anything else is scheduled (a 429).
    pub hold_scope: Option<Duration>,
    /// What this call does next.
    pub next: Next,
}

/// What a call has spent so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spent {
    /// Attempts sent, this one included.
    pub attempts: u32,
    /// Time waited between attempts.
    pub waited: Duration,
}

/// What is known after one attempt: how its plugin read it, what it was, and what the call
/// has spent so far.
#[derive(Debug, Clone, Copy)]
pub struct AfterAttempt<'a> {
    /// The plugin's reading of the answer (or of the transport failure).
    pub classification: &'a Classification,
    /// The response's status, `None` for a transport failure.
    pub status: Option<u16>,
    /// Whether the request may have reached the provider.
    pub sent: bool,
    /// The request's class.
    pub class: RequestClass,
    /// What the call has spent, this attempt included.
    pub spent: Spent,
    /// The time left before the call's deadline, if it has one.
    pub until_deadline: Option<Duration>,
}

/// Decides after one attempt, from what is known of it (`after`), the request class's
/// `budget` and the `backoff`; `rng` draws the jitter.
pub fn decide(
    after: &AfterAttempt<'_>,
    budget: &ClassBudget,
    backoff: &Backoff,
    rng: &mut fastrand::Rng,
) -> Plan {
    let AfterAttempt {
        classification: c,
        status,
        sent,
        class,
        spent,
        until_deadline,
    } = *after;
    let asked = c.retry_after_ms.map(Duration::from_millis);
    let retry = spent.attempts.saturating_sub(1);
    let stop = |s| Plan {
        hold_scope: None,
        next: Next::Stop(s),
    };
    let mut hold_scope = None;
    let delay = match c.verdict {
        Verdict::Success => {
            return Plan {
                hold_scope: None,
                next: Next::Done,
            };
        }
        Verdict::ClientError | Verdict::AuthError if status != Some(408) => {
            return stop(Stop::NeverRetry);
        }
        Verdict::Conflict if c.should_retry != Some(true) => return stop(Stop::Conflict),
        Verdict::QuotaExhausted => {
            return stop(Stop::QuotaExhausted { reset_after: asked });
        }
        Verdict::OutcomeUnknown if class != RequestClass::Read => {
            return stop(Stop::OutcomeUnknown);
        }
        Verdict::RateLimited => {
            // The scope waits what the provider asked (or one backoff window), whatever this
            // call does next; this call then comes back spread over a jittered window.
            let hold = asked.unwrap_or_else(|| backoff.window(retry));
            hold_scope = Some(hold);
            hold + backoff.delay(retry, rng)
        }
        // Overloaded, transient, a retryable conflict, a 408, an unknown read: a local
        // delay, unless the provider asked for a longer one.
        _ => backoff.delay(retry, rng).max(asked.unwrap_or_default()),
    };
    let next = if c.should_retry == Some(false) {
        Next::Stop(Stop::ProviderSaidNo)
    } else if let Some(s) = status.filter(|s| sent && !budget.retry_statuses.contains(s)) {
        Next::Stop(Stop::StatusNotRetried(s))
    } else if spent.attempts >= budget.max_attempts {
        Next::Stop(Stop::AttemptsExhausted)
    } else if spent.waited + delay > budget.max_wait() {
        Next::Stop(Stop::WaitBudgetExhausted { needed: delay })
    } else if until_deadline.is_some_and(|left| delay > left) {
        Next::Stop(Stop::DeadlinePassed { needed: delay })
    } else {
        Next::Retry { delay }
    };
    Plan { hold_scope, next }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::RetryConfig;

    fn c(verdict: Verdict, retry_after_ms: Option<u64>) -> Classification {
        Classification {
            verdict,
            retry_after_ms,
            error_code: None,
            should_retry: None,
            scope: None,
        }
    }

    fn plan(cl: &Classification, status: Option<u16>, class: RequestClass, attempts: u32) -> Plan {
        let config = RetryConfig::default();
        decide(
            &AfterAttempt {
                classification: cl,
                status,
                sent: true,
                class,
                spent: Spent {
                    attempts,
                    waited: Duration::ZERO,
                },
                until_deadline: None,
            },
            &config.budget(class),
            &config.backoff(),
            &mut fastrand::Rng::with_seed(3),
        )
    }

    #[test]
    fn a_429_holds_the_scope_for_retry_after_and_retries_after_it_with_jitter() {
        let p = plan(
            &c(Verdict::RateLimited, Some(10_000)),
            Some(429),
            RequestClass::Read,
            1,
        );
        assert_eq!(p.hold_scope, Some(Duration::from_secs(10)));
        let Next::Retry { delay } = p.next else {
            panic!("{p:?}")
        };
        assert!(delay >= Duration::from_secs(10) && delay <= Duration::from_millis(10_500));
    }

    #[test]
    fn client_and_auth_errors_are_never_retried() {
        for (v, s) in [
            (Verdict::ClientError, 400),
            (Verdict::AuthError, 401),
            (Verdict::AuthError, 403),
            (Verdict::ClientError, 404),
            (Verdict::ClientError, 422),
        ] {
            assert_eq!(
                plan(&c(v, None), Some(s), RequestClass::Read, 1).next,
                Next::Stop(Stop::NeverRetry),
                "{s}"
            );
        }
    }

    #[test]
    fn a_503_waits_at_least_what_it_asked_and_does_not_hold_the_scope() {
        let p = plan(
            &c(Verdict::Overloaded, Some(3_000)),
            Some(503),
            RequestClass::Read,
            1,
        );
        assert_eq!(p.hold_scope, None);
        assert!(matches!(p.next, Next::Retry { delay } if delay >= Duration::from_secs(3)));
    }

    #[test]
    fn an_unknown_write_is_never_resent() {
        for class in [RequestClass::IdempotentWrite, RequestClass::UncertainWrite] {
            let p = plan(&c(Verdict::OutcomeUnknown, None), None, class, 1);
            assert_eq!(p.next, Next::Stop(Stop::OutcomeUnknown));
        }
        let p = plan(
            &c(Verdict::OutcomeUnknown, None),
            None,
            RequestClass::Read,
            1,
        );
        assert!(matches!(p.next, Next::Retry { .. }), "a read may be resent");
    }

    #[test]
    fn budgets_end_the_call() {
        let p = plan(
            &c(Verdict::Transient, None),
            Some(502),
            RequestClass::Read,
            4,
        );
        assert_eq!(p.next, Next::Stop(Stop::AttemptsExhausted));
        let p = plan(
            &c(Verdict::RateLimited, Some(100_000)),
            Some(429),
            RequestClass::Read,
            1,
        );
        assert!(
            matches!(p.next, Next::Stop(Stop::WaitBudgetExhausted { .. })),
            "{p:?}"
        );
        assert_eq!(
            p.hold_scope,
            Some(Duration::from_secs(100)),
            "the scope still waits"
        );
        let p = plan(
            &c(Verdict::Transient, None),
            Some(418),
            RequestClass::Read,
            1,
        );
        assert_eq!(p.next, Next::Stop(Stop::StatusNotRetried(418)));
        let p = plan(
            &c(Verdict::Transient, None),
            Some(502),
            RequestClass::UncertainWrite,
            1,
        );
        assert_eq!(p.next, Next::Stop(Stop::StatusNotRetried(502)));
    }

    #[test]
    fn a_deadline_too_close_ends_the_call_at_once() {
        let config = RetryConfig::default();
        let p = decide(
            &AfterAttempt {
                classification: &c(Verdict::RateLimited, Some(10_000)),
                status: Some(429),
                sent: true,
                class: RequestClass::Read,
                spent: Spent {
                    attempts: 1,
                    waited: Duration::ZERO,
                },
                until_deadline: Some(Duration::from_secs(5)),
            },
            &config.budget(RequestClass::Read),
            &config.backoff(),
            &mut fastrand::Rng::with_seed(1),
        );
        assert!(matches!(p.next, Next::Stop(Stop::DeadlinePassed { .. })));
    }
}
