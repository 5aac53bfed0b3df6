//! `sluice`: the command line of the sluice governor.

mod audit_cmd;
mod budgets_cmd;
mod config_cmd;
mod config_reference;
mod demo;
mod escalations_cmd;
mod plugin_cmd;
mod plugin_new;
mod plugin_run_test;
mod plugin_template;
mod serve_cmd;
mod stop;
mod store_cmd;
mod telemetry;
mod test_binary;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Every allocation of the binary: see `Cargo.toml`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A governor for every outbound API call that AI agents make.
#[derive(Debug, Parser)]
#[command(name = "sluice", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with provider plugins: test them against recorded responses, inspect them.
    Plugin {
        #[command(subcommand)]
        command: plugin_cmd::PluginCommand,
    },
    /// Check a configuration file: providers' plugins and credentials, scopes, limits,
    /// margins, tiers, queue bounds, retry, audit and transport.
    Config {
        #[command(subcommand)]
        command: config_cmd::ConfigCommand,
    },
    /// Run a reference workload on embedded fake providers, through sluice and through a
    /// naive client side by side, and report what each achieved.
    Demo(demo::DemoArgs),
    /// Serve agents in any language: their provider SDKs point at this sidecar, which
    /// governs every call (admission, retries, safe writes, audit) and holds the keys.
    Serve(serve_cmd::ServeArgs),
    /// List, show and resolve escalations: the decisions a person must make.
    Escalations {
        #[command(subcommand)]
        command: escalations_cmd::EscalationsCommand,
    },
    /// Show what each tenant has spent this day and month, against its budgets.
    Budgets(budgets_cmd::BudgetsArgs),
    /// Make audit signing keys and verify audit logs offline.
    Audit {
        #[command(subcommand)]
        command: audit_cmd::AuditCommand,
    },
    /// The shared store of a group of hosts: recover its ownership after it lost its state.
    Store {
        #[command(subcommand)]
        command: store_cmd::StoreCommand,
    },
}

/// Prints `text` to stdout in one write. A reader that stops early (`| head`) closes the pipe:
/// that is not an error, and a report printed in one write never panics on it.
fn print_once(text: &str) -> anyhow::Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    match std::io::Write::write_all(&mut stdout, text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The Prometheus exporter of `sluice serve` and `sluice demo --metrics-addr`: its
/// `_seconds` series are histograms with sluice's buckets (it renders summaries without
/// them), so that they add up across hosts.
fn prometheus() -> anyhow::Result<metrics_exporter_prometheus::PrometheusBuilder> {
    use anyhow::Context as _;
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Suffix("_seconds".into()),
            sluice::observe::SECONDS_BUCKETS,
        )
        .context("the histograms' buckets")
}

/// `n` and `noun`, in the plural unless `n` is 1: "1 record", "2 records".
fn count(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// Installs the process's subscriber: log lines on stderr and, with `tracer`, every span of
/// sluice's at `info` and above exported through it (`telemetry`).
///
/// The lines are those `SLUICE_LOG` asks for, else `RUST_LOG`, else warnings only. A span's
/// fields show on each line logged inside it, and with `sluice=info` each call and attempt
/// prints a line when it closes (`sluice::observe` lists them). The export has a filter of
/// its own: what is logged does not change what is exported, nor the other way round.
fn subscribe(tracer: Option<opentelemetry_sdk::trace::Tracer>) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let lines = tracing_subscriber::fmt::layer()
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never in a file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let exported = tracer.map(|tracer| {
        let sluice = tracing_subscriber::filter::Targets::new()
            .with_target("sluice", tracing::Level::INFO)
            .with_target("sluice_serve", tracing::Level::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(sluice)
    });
    tracing_subscriber::registry()
        .with(exported)
        .with(lines)
        .init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `sluice serve` subscribes once it has read its configuration: its `[telemetry]` may
    // export the spans.
    if !matches!(cli.command, Command::Serve(_)) {
        subscribe(None);
    }
    let result = match cli.command {
        Command::Plugin { command } => plugin_cmd::run(command),
        Command::Config { command } => config_cmd::run(command),
        Command::Audit { command } => audit_cmd::run(command),
        Command::Escalations { command } => escalations_cmd::run(command),
        Command::Demo(args) => demo::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Budgets(args) => budgets_cmd::run(args),
        Command::Store { command } => store_cmd::run(command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, as anyhow's `{:#}` joins them, except a cause whose
/// words the line already ends with: an error that prints its source and also returns it
/// from `source()` would otherwise say it twice.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_of_a_thing_is_said_in_the_singular() {
        assert_eq!(super::count(1u64, "record"), "1 record");
        assert_eq!(super::count(0u64, "record"), "0 records");
        assert_eq!(super::count(213u64, "checkpoint"), "213 checkpoints");
    }
}
