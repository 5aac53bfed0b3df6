//! `sluice demo`: a reference workload on embedded fake providers, through sluice and through
//! a naive client side by side, with the figures that matter and the checks they must pass.
//!
//! Two providers start on loopback: a model API (OpenAI-style headers, 600 requests and
//! 90 000 tokens per minute on one account) and a payments API (Stripe-style, idempotent
//! writes) that now and then stores a payment and drops the connection before answering.
//! Tenants `acme`, `globex` and `initech` each run one interactive agent and background
//! agents; `noisy` runs three eighths of all the agents, all in the background. The same agents, with
//! the same seeds, then run through a naive client against fresh providers.
//!
//! By default the run is on virtual time (tokio's paused clock: the providers, the host and
//! every timer move together, and idle time is skipped), so two minutes of load take
//! seconds; `--real-time` runs on the wall clock.

mod drive;
mod governed;
mod naive;
mod report;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};

use report::{Report, Side};
use workload::{PAYMENTS, PAYMENTS_RPM, RPM, TPM};

/// Options of `sluice demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long the workload runs, in seconds (of virtual time unless --real-time).
    #[arg(long, default_value_t = 120)]
    duration: u64,
    /// How many agents, over all tenants (at least 7).
    #[arg(long, default_value_t = 24)]
    agents: usize,
    /// The seed of the agents' choices and of the injected faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run on the wall clock instead of virtual time.
    #[arg(long)]
    real_time: bool,
    /// Keep the journal, the audit log, its witness and public key in this new or empty
    /// directory (default: a temporary directory, removed).
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

/// Starts a model provider and a payments provider whose writes drop at `drops`.
async fn providers(drops: &[Duration]) -> anyhow::Result<(FakeProvider, Arc<FakeProvider>)> {
    let chat = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(RPM).tpm(TPM))
        .await
        .context("start the model provider on loopback")?;
    let payments = Arc::new(
        FakeProvider::start(FakeConfig::new(Style::Stripe).rpm(PAYMENTS_RPM))
            .await
            .context("start the payments provider on loopback")?,
    );
    // At each drop time, the next payment to arrive is stored and its connection dropped —
    // once the previous drop has happened, so two drops never queue up for one payment.
    let drops = drops.to_vec();
    let faults = payments.clone();
    tokio::spawn(async move {
        let start = sluice::clock::tokio_now();
        for (n, at) in drops.into_iter().enumerate() {
            tokio::time::sleep_until(start + at).await;
            while faults
                .attempts()
                .iter()
                .filter(|a| a.status.is_none())
                .count()
                < n
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            faults.script(PAYMENTS, [Fault::StoreThenDrop]);
        }
    });
    Ok((chat, payments))
}

pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    if args.duration == 0 {
        anyhow::bail!("--duration must be at least 1 second");
    }
    if args.agents < workload::MIN_AGENTS {
        anyhow::bail!(
            "--agents {} is too few: the workload needs at least {} (an interactive and a \
             background agent for each of the three equal tenants, and a noisy one)",
            args.agents,
            workload::MIN_AGENTS
        );
    }
    let duration = Duration::from_secs(args.duration);
    let agents = workload::agents(args.agents, args.seed);
    let drops = workload::drops(duration, args.seed);
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    if !args.real_time {
        builder.start_paused(true);
    }
    let rt = builder.build().context("start the runtime")?;
    let temp;
    let state = match &args.state_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("create the state directory {}", dir.display()))?;
            // A journal from an earlier run would answer this run's actions as done: never
            // mix runs, never overwrite one.
            let used = std::fs::read_dir(dir)
                .with_context(|| format!("read the state directory {}", dir.display()))?
                .next()
                .is_some();
            if used {
                anyhow::bail!(
                    "the state directory {} is not empty (an earlier run's journal and audit \
                     log?): give a new or empty directory",
                    dir.display()
                );
            }
            dir.clone()
        }
        None => {
            temp = tempfile::tempdir().context("make a temporary state directory")?;
            temp.path().to_owned()
        }
    };
    eprintln!(
        "sluice demo: {} agents for {} s on {} time; model account {RPM} RPM / {TPM} TPM",
        agents.len(),
        args.duration,
        if args.real_time {
            "wall-clock"
        } else {
            "virtual"
        }
    );
    let (sluice, naive) = rt.block_on(async {
        let (chat, payments) = providers(&drops).await?;
        let keys = tempfile::tempdir().context("make a directory for the audit key")?;
        let sluice =
            governed::run(&agents, duration, &chat, &payments, &state, keys.path()).await?;
        let (chat, payments) = providers(&drops).await?;
        let naive = naive::run(&agents, duration, &chat, &payments).await;
        anyhow::Ok((sluice, naive))
    })?;
    let report = Report::new(
        duration,
        agents.len(),
        args.seed,
        !args.real_time,
        Side::of(sluice, duration),
        Side::of(naive, duration),
    );
    let text = report.render();
    crate::print_once(&text)?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
