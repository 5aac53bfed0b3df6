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
//! tenant, but the journal kept each action's tenant with its request: only a call of that
//! tenant is sent there (a changed body then refused as ever, never sent as a new action);
//! a call of another tenant that picks the same names gets its own tenant's task, and learns
//! nothing of the other's.

use sluice::journal::Journal;
use sluice::writes::StoredRequest;

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
/// write of that action. `None`: a read that names no task. A write the journal holds for
/// `tenant` under the name an earlier version gave its task keeps that name.
pub fn task_of(
    journal: &Journal,
    agent: &str,
    tenant: &str,
    hint: Option<&str>,
    action: Option<&str>,
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
    let tenant_s = |task: &str| {
        let found = journal.find(task, action).ok().flatten();
        found.is_some_and(|a| {
            serde_json::from_str::<StoredRequest>(&a.request).is_ok_and(|r| r.tenant == tenant)
        })
    };
    if !known(&named.name) && tenant_s(&legacy) {
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
        assert_eq!(task_of(&journal, "bot", "acme", None, None), None);
        assert_eq!(
            task_of(&journal, "bot", "acme", None, Some("pay-1")),
            Some(Named {
                name: "acme/bot:pay-1".into(),
                own: true
            })
        );
        assert_eq!(
            task_of(&journal, "bot", "acme", Some("inv"), Some("pay-1"))
                .unwrap()
                .name,
            "acme/inv"
        );
        journal
            .record(&intent("agent:bot", "pay-1", "acme"))
            .unwrap();
        assert_eq!(
            task_of(&journal, "bot", "acme", None, Some("pay-1")),
            Some(Named {
                name: "agent:bot".into(),
                own: false
            })
        );
    }

    #[test]
    fn an_earlier_bare_name_is_kept_only_by_its_own_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open_or_create(&dir.path().join("j.sqlite")).unwrap();
        journal
            .record(&intent("invoices", "pay-9", "acme"))
            .unwrap();
        let task = |tenant: &str| {
            task_of(&journal, "bot", tenant, Some("invoices"), Some("pay-9"))
                .unwrap()
                .name
        };
        // Another tenant guessing the name and the action: its own task.
        assert_eq!(task("other"), "other/invoices");
        // The tenant that journaled it, after an upgrade: the task it was journaled under,
        // where a changed body is refused rather than sent as a new action.
        assert_eq!(task("acme"), "invoices");
    }

    /// A write's intent as the sidecar journals it, for `tenant`.
    fn intent(task: &str, action: &str, tenant: &str) -> sluice::journal::Intent {
        let request = StoredRequest {
            url: "http://p/x".into(),
            credential: "k".into(),
            scopes: Vec::new(),
            tenant: tenant.into(),
            headers: Vec::new(),
            deadline_ms: None,
        };
        sluice::journal::Intent {
            task: task.into(),
            action: action.into(),
            provider: "p".into(),
            method: "POST".into(),
            route: "POST /x".into(),
            class: "idempotent_write".into(),
            body: b"{}".to_vec(),
            request: serde_json::to_string(&request).unwrap(),
            goal: "g".into(),
        }
    }
}
