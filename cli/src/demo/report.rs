//! The demo's figures: what each client achieved, read from the providers' own ledgers where
//! the provider knows (attempts, 429s, tokens charged, effects stored) and from the agents'
//! records where only they know (waits, successes).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::Serialize;
use sluice_fake_provider::{Attempt, Stored};

use super::budget::BudgetRun;
use super::workload::{EQUAL_TENANTS, NOISY, RPM, Record, TPM};

/// What sluice's journal says of the writes.
#[derive(Debug, Clone, Serialize)]
pub struct WriteRun {
    /// Logical payments.
    pub logical_actions: usize,
    /// Payments the journal calls succeeded.
    pub succeeded: usize,
    /// Payments settled by reconciliation (a status query or a resend with the same key).
    pub reconciliations: usize,
    /// Escalations raised.
    pub escalations: usize,
}

/// The audit log after the run.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRun {
    /// Records written.
    pub records: u64,
    /// The fingerprint of the key that signed it (held in memory for the run only).
    pub key: String,
    /// Whether `verify` passed (with the witness, no open tail).
    pub verified: bool,
    /// What `verify` said.
    pub verification: String,
}

/// One client's run, as measured.
#[derive(Debug)]
pub struct Raw {
    /// Every call, as its agent saw it.
    pub records: Vec<Record>,
    /// The model provider's ledger.
    pub chat_attempts: Vec<Attempt>,
    /// The payments provider's ledger.
    pub pay_attempts: Vec<Attempt>,
    /// The payments the provider stored.
    pub stored: Vec<Stored>,
    /// sluice's journal figures.
    pub writes: Option<WriteRun>,
    /// sluice's audit log figures.
    pub audit: Option<AuditRun>,
    /// The noisy tenant's spend budget (sluice).
    pub budget: Option<BudgetRun>,
}

/// One tenant's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Tenant {
    /// The tenant.
    pub tenant: String,
    /// Calls done (chats and payments that succeeded within the run).
    pub requests_done: usize,
    /// Tokens of the chats done.
    pub tokens_done: u64,
    /// Its tokens done over the account's token capacity for the run.
    pub share_of_capacity: f64,
    /// Median time from a call to its answer (queue wait and retry delays), ms.
    pub wait_p50_ms: u64,
    /// 99th percentile of the same, ms.
    pub wait_p99_ms: u64,
    /// 99th percentile for its interactive agent's calls, ms (none for the noisy tenant).
    pub interactive_wait_p99_ms: Option<u64>,
}

/// The model provider's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Provider {
    /// Requests the account accepted within the run, over its requests-per-minute capacity.
    pub rpm_utilization: f64,
    /// Tokens the account charged within the run, over its tokens-per-minute capacity.
    pub tpm_utilization: f64,
    /// Attempts it received (both providers).
    pub attempts: usize,
    /// 429s it answered (both providers).
    pub rate_limited: usize,
    /// 429s per attempt.
    pub rate_limited_share: f64,
    /// Attempts per successful call.
    pub attempts_per_success: f64,
}

/// The writes' figures.
#[derive(Debug, Clone, Serialize)]
pub struct Writes {
    /// Logical payments the agents made.
    pub logical_actions: usize,
    /// Payments the client reports as done.
    pub succeeded: usize,
    /// Payments the provider stored.
    pub effects_stored: usize,
    /// Stored payments that repeat an earlier one.
    pub duplicate_effects: usize,
    /// Payments the provider stored and then dropped the connection of (injected).
    pub dropped_after_storing: usize,
    /// Settled by reconciliation (sluice).
    pub reconciliations: Option<usize>,
    /// Escalated to a person (sluice).
    pub escalations: Option<usize>,
}

/// One client's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// Per tenant.
    pub tenants: Vec<Tenant>,
    /// Jain's fairness index of tokens done among the equal tenants.
    pub fairness_equal_tenants: f64,
    /// The providers.
    pub provider: Provider,
    /// The payments.
    pub writes: Writes,
    /// The audit log (sluice).
    pub audit: Option<AuditRun>,
    /// The noisy tenant's spend budget (sluice).
    pub budget: Option<BudgetRun>,
}

fn percentile(mut v: Vec<Duration>, p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    u64::try_from(v[i].as_millis()).unwrap_or(u64::MAX)
}

/// Jain's index of `x`: 1 when all are equal, 1/n when one has everything.
pub fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    if squares == 0.0 {
        return 1.0;
    }
    sum * sum / (x.len() as f64 * squares)
}

impl Side {
    /// The figures of `raw` over a run of `duration`.
    pub fn of(raw: Raw, duration: Duration) -> Self {
        // The provider's sliding minute lets a run's first minute take a whole minute's
        // quota, so capacity is counted over at least one minute.
        let minutes = (duration.as_secs_f64() / 60.0).max(1.0);
        let within = |r: &&&Record| r.ok && r.ended <= duration;
        let mut tenants = Vec::new();
        for name in EQUAL_TENANTS.iter().chain([&NOISY]) {
            let mine: Vec<&Record> = raw.records.iter().filter(|r| r.tenant == *name).collect();
            let done: Vec<&&Record> = mine.iter().filter(within).collect();
            let tokens_done: u64 = done.iter().map(|r| r.tokens).sum();
            let waits: Vec<Duration> = mine.iter().filter(|r| r.ok).map(|r| r.wait).collect();
            let interactive: Vec<Duration> = mine
                .iter()
                .filter(|r| r.ok && r.interactive)
                .map(|r| r.wait)
                .collect();
            tenants.push(Tenant {
                tenant: (*name).to_owned(),
                requests_done: done.len(),
                tokens_done,
                share_of_capacity: tokens_done as f64 / (TPM as f64 * minutes),
                wait_p50_ms: percentile(waits.clone(), 0.5),
                wait_p99_ms: percentile(waits, 0.99),
                interactive_wait_p99_ms: (!interactive.is_empty())
                    .then(|| percentile(interactive, 0.99)),
            });
        }
        let equal: Vec<f64> = tenants
            .iter()
            .filter(|t| t.tenant != NOISY)
            .map(|t| t.tokens_done as f64)
            .collect();
        let in_run: Vec<&Attempt> = raw
            .chat_attempts
            .iter()
            .filter(|a| a.at < duration && a.tokens > 0)
            .collect();
        let attempts = raw.chat_attempts.len() + raw.pay_attempts.len();
        let rate_limited = raw
            .chat_attempts
            .iter()
            .chain(&raw.pay_attempts)
            .filter(|a| a.status == Some(429))
            .count();
        let successes = raw.records.iter().filter(|r| r.ok).count();
        let mut seen = HashSet::new();
        let duplicate_effects = raw.stored.iter().filter(|s| !seen.insert(&s.body)).count();
        let payments = raw.records.iter().filter(|r| r.write).count();
        Self {
            fairness_equal_tenants: jain(&equal),
            tenants,
            provider: Provider {
                rpm_utilization: in_run.len() as f64 / (RPM as f64 * minutes),
                tpm_utilization: in_run.iter().map(|a| a.tokens).sum::<u64>() as f64
                    / (TPM as f64 * minutes),
                attempts,
                rate_limited,
                rate_limited_share: rate_limited as f64 / attempts.max(1) as f64,
                attempts_per_success: attempts as f64 / successes.max(1) as f64,
            },
            writes: Writes {
                logical_actions: raw.writes.as_ref().map_or(payments, |w| w.logical_actions),
                succeeded: raw.writes.as_ref().map_or_else(
                    || raw.records.iter().filter(|r| r.write && r.ok).count(),
                    |w| w.succeeded,
                ),
                effects_stored: raw.stored.len(),
                duplicate_effects,
                dropped_after_storing: raw
                    .pay_attempts
                    .iter()
                    .filter(|a| a.status.is_none())
                    .count(),
                reconciliations: raw.writes.as_ref().map(|w| w.reconciliations),
                escalations: raw.writes.as_ref().map(|w| w.escalations),
            },
            audit: raw.audit,
            budget: raw.budget,
        }
    }

    /// The binding dimension's utilization.
    pub fn utilization(&self) -> f64 {
        self.provider
            .rpm_utilization
            .max(self.provider.tpm_utilization)
    }
}

/// One acceptance check on sluice's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What is checked.
    pub check: String,
    /// Whether it holds.
    pub passed: bool,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The run's length, seconds.
    pub duration_s: u64,
    /// Agents.
    pub agents: usize,
    /// The seed.
    pub seed: u64,
    /// Whether the run was on virtual time.
    pub virtual_time: bool,
    /// The model account's limits.
    pub limits: BTreeMap<&'static str, u64>,
    /// sluice's figures.
    pub sluice: Side,
    /// The naive client's figures.
    pub naive: Side,
    /// The acceptance checks on sluice's figures.
    pub checks: Vec<Check>,
}

impl Report {
    /// The report, with its checks.
    pub fn new(
        duration: Duration,
        agents: usize,
        seed: u64,
        virtual_time: bool,
        sluice: Side,
        naive: Side,
    ) -> Self {
        let s = &sluice;
        let checks = vec![
            Check {
                check: format!(
                    "zero duplicate effects: {} stored = {} succeeded, {} repeated",
                    s.writes.effects_stored, s.writes.succeeded, s.writes.duplicate_effects
                ),
                passed: s.writes.duplicate_effects == 0
                    && s.writes.effects_stored == s.writes.succeeded,
            },
            Check {
                check: format!("utilization {:.1}% >= 95%", s.utilization() * 100.0),
                passed: s.utilization() >= 0.95,
            },
            Check {
                check: format!(
                    "429s {:.2}% of attempts <= 0.5%",
                    s.provider.rate_limited_share * 100.0
                ),
                passed: s.provider.rate_limited_share <= 0.005,
            },
            Check {
                check: format!(
                    "Jain's fairness among equal tenants {:.3} >= 0.95",
                    s.fairness_equal_tenants
                ),
                passed: s.fairness_equal_tenants >= 0.95,
            },
            Check {
                check: "the audit log verifies".into(),
                passed: s.audit.as_ref().is_some_and(|a| a.verified),
            },
        ];
        Self {
            duration_s: duration.as_secs(),
            agents,
            seed,
            virtual_time,
            limits: BTreeMap::from([("requests_per_minute", RPM), ("tokens_per_minute", TPM)]),
            sluice,
            naive,
            checks,
        }
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The report as text.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let (s, n) = (&self.sluice, &self.naive);
        let _ = writeln!(
            o,
            "\n{} agents, {} s ({} time), seed {}; one model account at {} RPM and {} TPM, \
             one payments account\n",
            self.agents,
            self.duration_s,
            if self.virtual_time {
                "virtual"
            } else {
                "wall-clock"
            },
            self.seed,
            RPM,
            TPM
        );
        let _ = writeln!(o, "{:<34}{:>14}{:>14}", "", "sluice", "naive");
        let row = |o: &mut String, what: &str, a: String, b: String| {
            let _ = writeln!(o, "{what:<34}{a:>14}{b:>14}");
        };
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        row(
            &mut o,
            "TPM utilization",
            pct(s.provider.tpm_utilization),
            pct(n.provider.tpm_utilization),
        );
        row(
            &mut o,
            "RPM utilization",
            pct(s.provider.rpm_utilization),
            pct(n.provider.rpm_utilization),
        );
        row(
            &mut o,
            "attempts",
            s.provider.attempts.to_string(),
            n.provider.attempts.to_string(),
        );
        row(
            &mut o,
            "429s received",
            s.provider.rate_limited.to_string(),
            n.provider.rate_limited.to_string(),
        );
        row(
            &mut o,
            "attempts per successful call",
            format!("{:.3}", s.provider.attempts_per_success),
            format!("{:.3}", n.provider.attempts_per_success),
        );
        row(
            &mut o,
            "fairness (Jain, equal tenants)",
            format!("{:.3}", s.fairness_equal_tenants),
            format!("{:.3}", n.fairness_equal_tenants),
        );
        for (a, b) in s.tenants.iter().zip(&n.tenants) {
            row(
                &mut o,
                &format!("{}: calls done / share", a.tenant),
                format!("{} / {}", a.requests_done, pct(a.share_of_capacity)),
                format!("{} / {}", b.requests_done, pct(b.share_of_capacity)),
            );
            row(
                &mut o,
                &format!("{}: wait p50 / p99 (ms)", a.tenant),
                format!("{} / {}", a.wait_p50_ms, a.wait_p99_ms),
                format!("{} / {}", b.wait_p50_ms, b.wait_p99_ms),
            );
            if let (Some(x), Some(y)) = (a.interactive_wait_p99_ms, b.interactive_wait_p99_ms) {
                row(
                    &mut o,
                    &format!("{}: interactive p99 (ms)", a.tenant),
                    x.to_string(),
                    y.to_string(),
                );
            }
        }
        row(
            &mut o,
            "payments (logical)",
            s.writes.logical_actions.to_string(),
            n.writes.logical_actions.to_string(),
        );
        row(
            &mut o,
            "payments done",
            s.writes.succeeded.to_string(),
            n.writes.succeeded.to_string(),
        );
        row(
            &mut o,
            "connections dropped after storing",
            s.writes.dropped_after_storing.to_string(),
            n.writes.dropped_after_storing.to_string(),
        );
        row(
            &mut o,
            "payments stored at provider",
            s.writes.effects_stored.to_string(),
            n.writes.effects_stored.to_string(),
        );
        row(
            &mut o,
            "duplicate payments",
            s.writes.duplicate_effects.to_string(),
            n.writes.duplicate_effects.to_string(),
        );
        let opt = |x: Option<usize>| x.map_or_else(|| "-".to_owned(), |v| v.to_string());
        row(
            &mut o,
            "reconciled",
            opt(s.writes.reconciliations),
            opt(n.writes.reconciliations),
        );
        row(
            &mut o,
            "escalated",
            opt(s.writes.escalations),
            opt(n.writes.escalations),
        );
        if let Some(a) = &s.audit {
            let _ = writeln!(
                o,
                "\naudit log: {}, signed by key {}; verify: {}",
                crate::count(a.records, "record"),
                a.key,
                a.verification
            );
        }
        if let Some(b) = &s.budget {
            let _ = writeln!(o, "{}", super::budget::render(b));
        }
        let _ = writeln!(o, "\nchecks on sluice:");
        for c in &self.checks {
            let _ = writeln!(
                o,
                "  [{}] {}",
                if c.passed { "ok" } else { "FAIL" },
                c.check
            );
        }
        o
    }
}
