//! The workload through sluice: every agent of every tenant shares one host — one admission
//! queue per provider account, the retry engine, the plugins, the journal and the audit
//! log.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sluice::Sluice;
use sluice::admission::Class;
use sluice::audit::verify;
use sluice::clock::{Clock, TokioClock, tokio_now};
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome, Reason};
use sluice::journal::State;
use sluice::writes::Write;
use sluice_fake_provider::FakeProvider;

use super::drive::drive;
use super::report::{AuditRun, Raw, WriteRun};
use super::state::Ledger;
use super::workload::{Agent, CHAT, Op, PAYMENTS, PAYMENTS_RPM, RPM, TPM};

/// The host's configuration: both accounts paced at 97% of their limits, tenants weighted
/// equally, plugins given the time a debug build needs (more than the 5 ms default), the
/// model's tokens priced and the noisy tenant given a spend budget ([`super::budget`]).
fn config() -> String {
    format!(
        "margin = 0.97\n\
         [queue]\nmax_queued = 100000\nmax_queued_per_scope = 10000\nmax_wait_ms = 600000\n\
         [providers.openai]\nplugin = \"openai\"\n\
         [providers.openai.limits]\nrequests_per_minute = {RPM}\ntokens_per_minute = {TPM}\n\
         [providers.stripe]\nplugin = \"stripe\"\n\
         [providers.stripe.limits]\nrequests_per_minute = {PAYMENTS_RPM}\n\
         [tiers.standard]\nweight = 1\n\
         [tenants]\ndefault_tier = \"standard\"\n\
         [transport]\nconnect_timeout_ms = 2000\nfirst_byte_timeout_ms = 30000\nidle_timeout_ms = 30000\n\
         [plugins]\ncall_deadline_ms = 100\n{}",
        super::budget::config()
    )
}

fn call(agent: &Agent, provider: &str, url: String, class: RequestClass, body: String) -> Call {
    let priority = if agent.interactive {
        Class::Interactive
    } else {
        Class::Background
    };
    Call::post(provider, url, body)
        .credential("team-key")
        .tenant(agent.tenant)
        .priority(priority)
        .class(class)
        .header("content-type", "application/json")
}

/// Runs the workload through one sluice host; its journal goes under `state`, its audit
/// log is `ledger`'s.
pub async fn run(
    agents: &[Agent],
    duration: Duration,
    chat: &FakeProvider,
    payments: &FakeProvider,
    state: &Path,
    ledger: &Ledger,
) -> anyhow::Result<Raw> {
    let audit = ledger.audit.clone();
    let host = Arc::new(
        Sluice::builder()
            .config_toml(&config())
            .seed(7)
            .state_dir(state)
            .audit_log(audit.clone())
            .credentials(Arc::new(|_: &str, _: &str| {
                vec![("authorization".to_owned(), "Bearer sk-demo".to_owned())]
            }))
            .build()?,
    );
    let journal = host.journal().clone();
    let budgets = host.executor().budgets().cloned();
    let refusals = super::budget::Shared::default();
    let shared = refusals.clone();
    let (chat_url, pay_url) = (chat.url(CHAT), payments.url(PAYMENTS));
    let start = tokio_now();
    let records = drive("sluice", agents, duration, move |agent, i, op| {
        let host = host.clone();
        let refusals = shared.clone();
        let (chat_url, pay_url) = (chat_url.clone(), pay_url.clone());
        async move {
            match op {
                Op::Chat { body, .. } => {
                    let c = call(&agent, "openai", chat_url, RequestClass::Read, body);
                    match host.execute(&c).await {
                        Outcome::Succeeded { .. } => true,
                        Outcome::Ended(t) if matches!(t.reason, Reason::BudgetSpent(_)) => {
                            {
                                let mut r = refusals.borrow_mut();
                                r.calls += 1;
                                r.first.get_or_insert(tokio_now() - start);
                            }
                            // Spent until the month ends: the agent stops asking.
                            tokio::time::sleep(duration).await;
                            false
                        }
                        Outcome::Ended(_) => false,
                    }
                }
                Op::Pay { body } => {
                    let w = Write {
                        task: format!("{}-{i}", agent.name),
                        action: "pay".into(),
                        goal: format!("{} pays supplier invoice {i}", agent.name),
                        call: call(
                            &agent,
                            "stripe",
                            pay_url,
                            RequestClass::UncertainWrite,
                            body,
                        ),
                    };
                    matches!(
                        host.write(&w).await,
                        Ok(sluice::writes::WriteOutcome::Succeeded { .. })
                    )
                }
            }
        }
    })
    .await;
    audit.checkpoint(TokioClock.wall_ms())?;
    let actions = journal.all()?;
    let reconciliations = actions
        .iter()
        .filter(|a| {
            journal
                .attempts_of(a.id)
                .is_ok_and(|at| at.iter().any(sluice::writes::is_reconciliation))
        })
        .count();
    let writes = WriteRun {
        logical_actions: actions.len(),
        succeeded: actions
            .iter()
            .filter(|a| a.state == State::Succeeded)
            .count(),
        reconciliations,
        escalations: journal.escalations().list(false)?.len(),
    };
    let verified = verify(&ledger.log, &ledger.public, Some(&ledger.witness), false);
    let audit = AuditRun {
        records: audit.last_seq(),
        key: ledger.fingerprint.to_string(),
        verified: verified.is_ok(),
        verification: match verified {
            Ok(r) => format!(
                "ok: {}, {}, every checkpoint in the witness",
                crate::count(r.records, "record"),
                crate::count(r.checkpoints, "checkpoint")
            ),
            Err(e) => format!("failed: {e}"),
        },
    };
    let budget = match budgets {
        Some(b) => Some(super::budget::after(&b, &refusals.borrow())?),
        None => None,
    };
    Ok(Raw {
        records,
        chat_attempts: chat.attempts(),
        pay_attempts: payments.attempts(),
        stored: payments.stored(),
        writes: Some(writes),
        audit: Some(audit),
        budget,
    })
}
