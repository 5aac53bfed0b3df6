//! Hints an agent adds to a request as `x-sluice-*` headers, and the headers an answer
//! carries back. Every hint is optional; a malformed one is refused (400) by name, never
//! ignored, and no hint is forwarded to the provider.

use std::time::Duration;

use hyper::HeaderMap;
use sluice::admission::Class;
use sluice::contract::RequestClass;
use sluice::printable::must_escape;

/// The task the call belongs to (cancellation, the task's budgets, escalations).
pub const TASK: &str = "x-sluice-task";
/// `read`, `idempotent-write` or `uncertain-write`.
pub const CLASS: &str = "x-sluice-class";
/// `interactive`, `standard` or `background`.
pub const PRIORITY: &str = sluice_contract::hints::PRIORITY;
/// The longest the whole call may take, waits included, in milliseconds.
pub const DEADLINE_MS: &str = "x-sluice-deadline-ms";
/// A write's logical action name within its task (a resubmit of the same name is the same
/// action: never done twice).
pub const ACTION: &str = "x-sluice-action";
/// The task's goal in words, shown to whoever resolves an escalation.
pub const GOAL: &str = "x-sluice-goal";
/// The tenant, where the agent's token allows naming one.
pub const TENANT: &str = sluice_contract::hints::TENANT;

/// Answer: attempts sent to the provider.
pub const ATTEMPTS: &str = "x-sluice-attempts";
/// Answer: time the call waited (queue and backoff), in milliseconds.
pub const WAITED_MS: &str = "x-sluice-waited-ms";
/// Answer: why the call ended without success.
pub const REASON: &str = "x-sluice-reason";
/// Answer: the next safe action after a call that ended without success.
pub const NEXT_ACTION: &str = "x-sluice-next-action";
/// Answer: a write's state in the journal.
pub const ACTION_STATE: &str = "x-sluice-action-state";
/// Answer: the escalation a write waits on.
pub const ESCALATION: &str = "x-sluice-escalation";
/// Answer: the request was a retry by the agent's SDK (which must not retry).
pub const SDK_RETRY: &str = "x-sluice-sdk-retry";

/// The longest task, action or tenant name taken.
const MAX_NAME: usize = 200;
/// The longest goal taken.
const MAX_GOAL: usize = 1000;
/// The longest deadline an agent may ask for: an hour.
const MAX_DEADLINE_MS: u64 = 3_600_000;

/// The hints of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    /// `x-sluice-task`.
    pub task: Option<String>,
    /// `x-sluice-class`.
    pub class: Option<RequestClass>,
    /// `x-sluice-priority`.
    pub priority: Option<Class>,
    /// `x-sluice-deadline-ms`.
    pub deadline: Option<Duration>,
    /// `x-sluice-action`.
    pub action: Option<String>,
    /// `x-sluice-goal`.
    pub goal: Option<String>,
    /// `x-sluice-tenant`.
    pub tenant: Option<String>,
}

/// A hint that cannot be taken: the header, and what it may hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sluice: the header `{header}` {expected}")]
pub struct BadHint {
    /// The header.
    pub header: &'static str,
    /// What it may hold.
    pub expected: String,
}

fn bad(header: &'static str, expected: impl Into<String>) -> BadHint {
    BadHint {
        header,
        expected: expected.into(),
    }
}

/// One header's text, checked to be one printable line of at most `max` characters.
fn text(headers: &HeaderMap, name: &'static str, max: usize) -> Result<Option<String>, BadHint> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    let s = value
        .to_str()
        .map_err(|_| bad(name, "must be visible ASCII text"))?
        .trim();
    if s.is_empty() || s.chars().count() > max || s.chars().any(must_escape) {
        return Err(bad(
            name,
            format!("must be one printable line of 1 to {max} characters"),
        ));
    }
    Ok(Some(s.to_owned()))
}

impl Hints {
    /// Reads the hints of `headers` and removes them.
    ///
    /// # Errors
    /// [`BadHint`] naming the first malformed header.
    pub fn take(headers: &mut HeaderMap) -> Result<Self, BadHint> {
        let class = match text(headers, CLASS, 32)?.as_deref() {
            None => None,
            Some("read") => Some(RequestClass::Read),
            Some("idempotent-write") => Some(RequestClass::IdempotentWrite),
            Some("uncertain-write") => Some(RequestClass::UncertainWrite),
            Some(_) => {
                return Err(bad(
                    CLASS,
                    "must be `read`, `idempotent-write` or `uncertain-write`",
                ));
            }
        };
        let priority = match text(headers, PRIORITY, 32)?.as_deref() {
            None => None,
            Some("interactive") => Some(Class::Interactive),
            Some("standard") => Some(Class::Standard),
            Some("background") => Some(Class::Background),
            Some(_) => {
                return Err(bad(
                    PRIORITY,
                    "must be `interactive`, `standard` or `background`",
                ));
            }
        };
        let deadline = match text(headers, DEADLINE_MS, 20)? {
            None => None,
            Some(s) => match s.parse::<u64>() {
                Ok(ms) if (1..=MAX_DEADLINE_MS).contains(&ms) => Some(Duration::from_millis(ms)),
                _ => {
                    return Err(bad(
                        DEADLINE_MS,
                        format!(
                            "must be a whole number of milliseconds from 1 to {MAX_DEADLINE_MS}"
                        ),
                    ));
                }
            },
        };
        let hints = Self {
            task: text(headers, TASK, MAX_NAME)?,
            class,
            priority,
            deadline,
            action: text(headers, ACTION, MAX_NAME)?,
            goal: text(headers, GOAL, MAX_GOAL)?,
            tenant: text(headers, TENANT, MAX_NAME)?,
        };
        let ours: Vec<_> = headers
            .keys()
            .filter(|k| k.as_str().starts_with("x-sluice-"))
            .cloned()
            .collect();
        for k in ours {
            headers.remove(k);
        }
        Ok(hints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(*n, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn hints_are_read_and_never_forwarded() {
        let mut h = headers(&[
            (TASK, "invoice-run-7"),
            (CLASS, "uncertain-write"),
            (PRIORITY, "background"),
            (DEADLINE_MS, "30000"),
            (ACTION, "charge-42"),
            ("x-sluice-unknown", "x"),
            ("content-type", "application/json"),
        ]);
        let hints = Hints::take(&mut h).unwrap();
        assert_eq!(hints.task.as_deref(), Some("invoice-run-7"));
        assert_eq!(hints.class, Some(RequestClass::UncertainWrite));
        assert_eq!(hints.priority, Some(Class::Background));
        assert_eq!(hints.deadline, Some(Duration::from_secs(30)));
        assert_eq!(hints.action.as_deref(), Some("charge-42"));
        assert_eq!(h.len(), 1, "only content-type is left: {h:?}");
    }

    #[test]
    fn a_malformed_hint_is_refused_by_name() {
        for (name, value) in [
            (CLASS, "write"),
            (PRIORITY, "urgent"),
            (DEADLINE_MS, "0"),
            (DEADLINE_MS, "soon"),
            (DEADLINE_MS, "99999999"),
        ] {
            let err = Hints::take(&mut headers(&[(name, value)])).unwrap_err();
            assert_eq!(err.header, name);
            assert!(err.to_string().contains(name), "{err}");
        }
        let long = "a".repeat(201);
        assert_eq!(
            Hints::take(&mut headers(&[(TASK, &long)]))
                .unwrap_err()
                .header,
            TASK
        );
    }
}
