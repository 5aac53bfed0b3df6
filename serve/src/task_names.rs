//! The names of agents' tasks. A task an agent names (`x-sluice-task`) belongs to its
//! tenant: the name it gives is kept as `TENANT/NAME` (a `/` or `%` in the tenant written
//! `%2F`, `%25`), so two tenants that pick one name have two tasks, and an agent cannot join,
//! cancel by accident, or learn the outcome of another tenant's actions by naming its task.
//! A write that names no task is a task of its own, `TENANT/AGENT:ACTION`: one that runs out
//! of time freezes that action, not every later write of the agent; and its task state is
//! forgotten when it ends.
//!
//! Actions journaled under the names earlier versions gave (the bare name, or `agent:NAME`
//! for writes that named none) keep them: a resubmission finds its action there, so an
//! upgrade never turns a journaled write into a new one. Those names say nothing of their
//! tenant, so only a resubmission of the very write — same task name, same action, same
//! body — is sent there; any other call under a name another tenant once used gets its own
//! tenant's task, and learns nothing of the other's.

use sluice::journal::Journal;

/// A task's name, and whether it is a write's own (forgotten when the write ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The name.
    pub name: String,
    /// A task of one action, which the agent did not name.
    pub own: bool,
}

/// The prefix of the fresh action name a write that names none is given: random, so never
/// journaled before.
pub const FRESH_ACTION: &str = "once:";

/// `name` as a task of `tenant`.
pub fn scoped(tenant: &str, name: &str) -> String {
    let tenant = tenant.replace('%', "%25").replace('/', "%2F");
    format!("{tenant}/{name}")
}

/// The task of a call of `agent` for `tenant` that named `hint`; `action`: the call is a
/// write of that action, with `body`. `None`: a read that names no task. A write the
/// journal holds, with that body, under the name an earlier version gave its task keeps
/// that name.
pub fn task_of(
    journal: &Journal,
    agent: &str,
    tenant: &str,
    hint: Option<&str>,
    action: Option<&str>,
    body: &[u8],
) -> Option<Named> {
    let named = match (hint, action) {
        (Some(h), _) => Named {
            name: scoped(tenant, h),
            own: false,
        },
        (None, Some(a)) => Named {
            name: scoped(tenant, &format!("{agent}:{a}")),
            own: true,
        },
        (None, None) => return None,
    };
    let Some(action) = action.filter(|a| !a.starts_with(FRESH_ACTION)) else {
        // A read, or a write of a fresh action: no earlier name to look up.
        return Some(named);
    };
    let legacy = hint.map_or_else(|| format!("agent:{agent}"), str::to_owned);
    let known = |task: &str| journal.knows(task, action).unwrap_or(false);
    let resubmitted = |task: &str| journal.holds(task, action, body).unwrap_or(false);
    if !known(&named.name) && resubmitted(&legacy) {
        tracing::info!(
            task = %sluice::printable::printable(&legacy),
            action = %sluice::printable::printable(action),
            "a write journaled under its task's earlier name keeps it"
        );
        return Some(Named {
            name: legacy,
            own: false,
        });
    }
    Some(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_are_kept_apart_whatever_their_names() {
        assert_eq!(scoped("acme", "invoices"), "acme/invoices");
        assert_ne!(scoped("a/b", "c"), scoped("a", "b/c"));
        assert_eq!(scoped("a/b", "c"), "a%2Fb/c");
        assert_ne!(scoped("a%2Fb", "c"), scoped("a/b", "c"));
    }

    #[test]
    fn a_write_without_a_task_is_a_task_of_its_own_and_an_earlier_name_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open_or_create(&dir.path().join("j.sqlite")).unwrap();
        assert_eq!(task_of(&journal, "bot", "acme", None, None, b""), None);
        assert_eq!(
            task_of(&journal, "bot", "acme", None, Some("pay-1"), b"{}"),
            Some(Named {
                name: "acme/bot:pay-1".into(),
                own: true
            })
        );
        assert_eq!(
            task_of(&journal, "bot", "acme", Some("inv"), Some("pay-1"), b"{}")
                .unwrap()
                .name,
            "acme/inv"
        );
        journal
            .record(&sluice::journal::Intent {
                task: "agent:bot".into(),
                action: "pay-1".into(),
                provider: "p".into(),
                method: "POST".into(),
                route: "POST /x".into(),
                class: "idempotent_write".into(),
                body: b"{}".to_vec(),
                request: "{}".into(),
                goal: "g".into(),
            })
            .unwrap();
        assert_eq!(
            task_of(&journal, "bot", "acme", None, Some("pay-1"), b"{}"),
            Some(Named {
                name: "agent:bot".into(),
                own: false
            })
        );
    }

    #[test]
    fn an_earlier_bare_name_is_kept_only_by_a_resubmission_of_the_very_write() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open_or_create(&dir.path().join("j.sqlite")).unwrap();
        journal
            .record(&sluice::journal::Intent {
                task: "invoices".into(),
                action: "pay-9".into(),
                provider: "p".into(),
                method: "POST".into(),
                route: "POST /x".into(),
                class: "idempotent_write".into(),
                body: br#"{"amount":5}"#.to_vec(),
                request: "{}".into(),
                goal: "g".into(),
            })
            .unwrap();
        let task = |body: &[u8]| {
            task_of(
                &journal,
                "bot",
                "other",
                Some("invoices"),
                Some("pay-9"),
                body,
            )
            .unwrap()
            .name
        };
        // Another tenant guessing the name and the action, with its own body: its own task.
        assert_eq!(task(br#"{"amount":6}"#), "other/invoices");
        // The same write sent again after an upgrade: the task it was journaled under.
        assert_eq!(task(br#"{"amount":5}"#), "invoices");
    }
}
