//! `sluice demo`: a reference workload on embedded fake providers, through sluice and through
//! a naive client side by side, with the figures that matter and the checks they must pass.
//!
//! Two providers start on loopback: a model API (OpenAI-style headers, 600 requests and
//! 90 000 tokens per minute on one account) and a payments API (Stripe-style, idempotent
//! writes) that now and then stores a payment and drops the connection before answering.
//! Tenants `acme`, `globex` and `initech` each run one interactive agent and background
//! agents; `noisy` runs about three eighths of all the agents, all in the background. The
//! same agents, with the same seeds, then run through a naive client against fresh providers.
//! sluice holds `noisy` to a spend budget it reaches within the run ([`budget`]).
//!
//! By default the run is on virtual time (tokio's paused clock: the providers, the host and
//! every timer move together, and idle time is skipped), so two minutes of load take
//! seconds; `--real-time` runs on the wall clock.
//!
//! What a run keeps on disk, and how it stops on a signal, is in [`state`] and [`stop`](crate::stop); what
//! it writes beside its state (the JSON report, a kept key), in [`outputs`].

mod budget;
mod drive;
mod governed;
mod metrics;
mod naive;
mod outputs;
mod report;
mod state;
mod workload;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};

use crate::stop::{Stop, Stopped};
use outputs::JsonReport;
use report::{Report, Side};
use state::{Ledger, StateDir};
use workload::{PAYMENTS, PAYMENTS_RPM, RPM, TPM};

/// The longest run, in seconds: an hour (the reference run is two minutes).
const MAX_DURATION_S: u64 = 3_600;
/// The most agents a run takes.
const MAX_AGENTS: usize = 1_000;

/// Options of `sluice demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long the workload runs, in seconds (of virtual time unless --real-time): 1 to 3600.
    #[arg(long, default_value_t = 120)]
    duration: u64,
    /// How many agents, over all tenants: 7 to 1000.
    #[arg(long, default_value_t = 24)]
    agents: usize,
    /// The seed of the agents' choices and of the injected faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the report as JSON to this new file (its directory must exist).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run on the wall clock instead of virtual time.
    #[arg(long)]
    real_time: bool,
    /// Keep the journal, the audit log, its witness and public key in this new or empty
    /// directory of yours that no one else can write, created 0700 (default: a private
    /// temporary directory, removed when the run ends or is stopped by SIGINT, SIGTERM or
    /// SIGHUP).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Also write the audit signing key to this new file (0600), outside the state directory,
    /// to extend or re-sign the kept log later. Without it the key lives only in memory and
    /// dies with the run.
    #[arg(long, value_name = "PATH", requires = "state_dir")]
    keep_audit_key: Option<PathBuf>,
    /// Serve the run's metrics to Prometheus at http://ADDR/metrics while it runs (port 0:
    /// a free port, printed).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
}

impl DemoArgs {
    /// Refuses options no one means, before anything starts.
    fn check(&self) -> anyhow::Result<()> {
        if self.duration == 0 {
            anyhow::bail!("--duration must be at least 1 second");
        }
        if self.duration > MAX_DURATION_S {
            anyhow::bail!(
                "--duration {} is too long: at most {MAX_DURATION_S} seconds (an hour; the \
                 reference run is 120)",
                self.duration
            );
        }
        if self.agents < workload::MIN_AGENTS {
            anyhow::bail!(
                "--agents {} is too few: the workload needs at least {} (an interactive and a \
                 background agent for each of the three equal tenants, and a noisy one)",
                self.agents,
                workload::MIN_AGENTS
            );
        }
        if self.agents > MAX_AGENTS {
            anyhow::bail!("--agents {} is too many: at most {MAX_AGENTS}", self.agents);
        }
        if let (Some(key), Some(state)) = (&self.keep_audit_key, &self.state_dir) {
            outputs::check_kept_key(key, state)?;
        }
        Ok(())
    }
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
    args.check()?;
    let json = args.json.as_deref().map(JsonReport::check).transpose()?;
    let duration = Duration::from_secs(args.duration);
    let agents = workload::agents(args.agents, args.seed);
    let drops = workload::drops(duration, args.seed);
    // Before the runtime and the host: the exporter runs on its own thread, on the wall
    // clock, and every series the host registers must reach it.
    if let Some(addr) = args.metrics_addr {
        let addr = metrics::serve(addr)?;
        eprintln!("sluice demo: metrics at http://{addr}/metrics");
    }
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    if !args.real_time {
        builder.start_paused(true);
    }
    let rt = builder.build().context("start the runtime")?;
    // Before anything is on disk: from here on SIGINT, SIGTERM and SIGHUP stop the run and
    // clean up.
    let mut stop = {
        let _runtime = rt.enter();
        Stop::listen().context("listen for SIGINT, SIGTERM and SIGHUP")?
    };
    let state = StateDir::new(args.state_dir.as_deref())?;
    let ledger = Ledger::open(state.path(), args.keep_audit_key.as_deref())?;
    // Printed before anything runs, so a run stopped any way at all left the key to pin.
    eprintln!(
        "sluice demo: the audit log is signed by key {} (pin it: sluice audit verify \
         --expect-key {})",
        ledger.fingerprint, ledger.fingerprint
    );
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
    let work = async {
        let (chat, payments) = providers(&drops).await?;
        let sluice =
            governed::run(&agents, duration, &chat, &payments, state.path(), &ledger).await?;
        let (chat, payments) = providers(&drops).await?;
        let naive = naive::run(&agents, duration, &chat, &payments).await;
        anyhow::Ok((sluice, naive))
    };
    let ended = rt.block_on(async {
        tokio::select! {
            biased;
            signal = stop.signalled() => Err(signal),
            done = work => Ok(done),
        }
    });
    let (sluice, naive) = match ended {
        Ok(done) => done?,
        Err(signal) => return stopped(signal, rt, state, ledger),
    };
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
    if let Some(json) = &json {
        json.write(&serde_json::to_string_pretty(&report)?)?;
    }
    state.finish()?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// After `signal`: stops what still runs, closes a kept audit log with a checkpoint (or
/// removes the temporary state), and exits as a process ended by `signal`.
fn stopped(
    signal: Stopped,
    rt: tokio::runtime::Runtime,
    state: StateDir,
    ledger: Ledger,
) -> anyhow::Result<ExitCode> {
    rt.shutdown_timeout(Duration::from_secs(1));
    let kept = state.is_kept().then(|| state.path().to_owned());
    ledger.close()?;
    state.finish()?;
    // After SIGHUP the terminal may be gone: a message that cannot be shown is not an error.
    let mut err = std::io::stderr();
    let _ = match kept {
        Some(dir) => writeln!(
            err,
            "sluice demo: stopped by {}; its state is kept in {} (the audit log closed with a \
             checkpoint)",
            signal.name(),
            dir.display()
        ),
        None => writeln!(
            err,
            "sluice demo: stopped by {}; its temporary state is removed",
            signal.name()
        ),
    };
    Ok(ExitCode::from(signal.exit_code()))
}
