//! The workload through sluice: every agent of every tenant shares one host — one admission
//! queue per provider account, the retry engine, the plugins, the journal and the audit
//! log.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sluice::admission::{Admission, Class, Config};
use sluice::audit::verify;
use sluice::clock::{Clock, TokioClock};
use sluice::contract::RequestClass;
use sluice::execute::{Call, Executor, Outcome};
use sluice::guard::{GuardedPolicy, QuarantinePolicy};
use sluice::journal::{Journal, State};
use sluice::plugin::{ComponentCache, PluginRuntime, RuntimeConfig};
use sluice::retry::RetryConfig;
use sluice::transport::{Timeouts, Transport};
use sluice::writes::{Write, Writes};
use sluice_fake_provider::FakeProvider;

use super::drive::drive;
use super::report::{AuditRun, Raw, WriteRun};
use super::state::Ledger;
use super::workload::{Agent, CHAT, Op, PAYMENTS, PAYMENTS_RPM, RPM, TPM};

/// Admission for the two accounts, paced at 97% of their limits, tenants weighted equally.
fn admission_config() -> String {
    format!(
        "margin = 0.97\n\
         [queue]\nmax_queued = 100000\nmax_queued_per_scope = 10000\nmax_wait_ms = 600000\n\
         [providers.openai.limits]\nrequests_per_minute = {RPM}\ntokens_per_minute = {TPM}\n\
         [providers.stripe.limits]\nrequests_per_minute = {PAYMENTS_RPM}\n\
         [tiers.standard]\nweight = 1\n\
         [tenants]\ndefault_tier = \"standard\"\n"
    )
}

fn executor() -> anyhow::Result<Executor> {
    let rt = PluginRuntime::new(
        RuntimeConfig {
            // A debug build runs plugins slower than the 5 ms default allows for.
            call_deadline: Duration::from_millis(100),
            ..RuntimeConfig::default()
        },
        ComponentCache::user_default(),
    )?;
    let clock: Arc<dyn Clock> = Arc::new(TokioClock);
    let mut policies = HashMap::new();
    for name in ["openai", "stripe"] {
        let plugin = rt.load_bundled(name)?;
        let guarded =
            GuardedPolicy::new(Arc::new(plugin), QuarantinePolicy::default(), clock.clone());
        policies.insert(name.to_owned(), Arc::new(guarded));
    }
    let admission = Admission::new(Config::from_toml(&admission_config())?, clock.clone())?;
    let transport = Transport::new(Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(30),
        idle: Duration::from_secs(30),
    })?;
    Ok(Executor::new(
        admission,
        policies,
        transport,
        RetryConfig::default(),
        clock,
        7,
    ))
}

fn call(agent: &Agent, provider: &str, url: String, class: RequestClass, body: String) -> Call {
    Call {
        provider: provider.into(),
        credential: "team-key".into(),
        scopes: Vec::new(),
        tenant: Some(agent.tenant.into()),
        task: None,
        priority: Some(if agent.interactive {
            Class::Interactive
        } else {
            Class::Background
        }),
        class,
        method: "POST".into(),
        url,
        headers: vec![("content-type".into(), "application/json".into())],
        secrets: vec![("authorization".into(), "Bearer sk-demo".into())],
        body: body.into_bytes(),
        deadline: None,
        coalesce: false,
    }
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
    let journal = Arc::new(Journal::open_or_create(&state.join("journal.sqlite"))?);
    let executor = Arc::new(executor()?);
    let writes = Arc::new(Writes::new(
        executor.clone(),
        journal.clone(),
        audit.clone(),
        Arc::new(|_: &str, _: &str| {
            vec![("authorization".to_owned(), "Bearer sk-demo".to_owned())]
        }),
        Arc::new(TokioClock),
    ));
    let (chat_url, pay_url) = (chat.url(CHAT), payments.url(PAYMENTS));
    let records = drive("sluice", agents, duration, move |agent, i, op| {
        let (executor, writes) = (executor.clone(), writes.clone());
        let (chat_url, pay_url) = (chat_url.clone(), pay_url.clone());
        async move {
            match op {
                Op::Chat { body, .. } => {
                    let c = call(&agent, "openai", chat_url, RequestClass::Read, body);
                    matches!(executor.execute(&c).await, Outcome::Succeeded { .. })
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
                        writes.write(&w).await,
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
        escalations: journal.escalations(false)?.len(),
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
    Ok(Raw {
        records,
        chat_attempts: chat.attempts(),
        pay_attempts: payments.attempts(),
        stored: payments.stored(),
        writes: Some(writes),
        audit: Some(audit),
    })
}
