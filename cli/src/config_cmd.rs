//! `sluice config check`: validates an admission configuration and shows how each scope will
//! be paced.
//!
//! Every name printed comes from the file (providers, scopes, models, tiers), so each goes
//! through `sluice::printable`: a key such as `"a\nfake: valid"` would otherwise print a
//! forged line, and one holding an ESC would drive the terminal. The library's errors are
//! escaped already.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use sluice::admission::{Config, Limits, Rate};
use sluice::printable::printable;

/// Admission configuration commands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate an admission configuration (TOML) and print how every scope is paced.
    Check {
        /// The configuration file.
        file: PathBuf,
    },
}

pub fn run(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check { file } => check(&file),
    }
}

/// Appends a line to the report.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

fn check(file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let config = match Config::from_file(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // The report is printed in one write: a reader that stops early (`| head`) is not an
    // error.
    let mut out = String::new();
    outln!(out, "{}: valid", printable(&file.display().to_string()));
    outln!(
        out,
        "queue: at most {} waiting ({} per scope), {} s longest wait",
        config.queue.max_queued,
        config.queue.max_queued_per_scope,
        config.queue.max_wait_ms.get() / 1000
    );
    for (name, p) in &config.providers {
        let margin = p.margin.unwrap_or(config.margin);
        outln!(
            out,
            "provider {} (paced at {:.0}%)",
            printable(name),
            margin * 100.0
        );
        print_limits(&mut out, "  each credential", &p.limits, margin)?;
        for named in p.named_scopes() {
            let what = format!(
                "  scope {} ({})",
                printable(&named.name),
                printable(&named.key)
            );
            print_limits(&mut out, &what, named.limits, margin)?;
        }
    }
    for (name, t) in &config.tiers {
        let queued = t.max_queued.map_or("no bound".into(), |n| n.to_string());
        let flying = t.max_in_flight.map_or("no bound".into(), |n| n.to_string());
        outln!(
            out,
            "tier {}: weight {}, queued {queued}, in flight {flying}",
            printable(name),
            t.weight
        );
        print_limits(&mut out, "  each tenant", &t.limits, config.margin)?;
    }
    outln!(
        out,
        "tenants: {} assigned, others in tier {}",
        config.tenants.assign.len(),
        printable(&config.tenants.default_tier)
    );
    crate::print_once(&out)
}

fn print_limits(out: &mut String, what: &str, limits: &Limits, margin: f64) -> anyhow::Result<()> {
    if limits.is_empty() {
        outln!(out, "{what}: no limits (learned from responses)");
        return Ok(());
    }
    outln!(out, "{what}:");
    for (dimension, window, limit) in limits.quotas() {
        let rate = Rate::new(limit, window, margin)?;
        let paced = limit.get() - rate.capacity() + 1;
        outln!(
            out,
            "    {}: {limit}, paced at {paced} per {} s with a burst of {}",
            Limits::key(dimension, window),
            window.as_secs(),
            rate.capacity()
        );
    }
    if let Some(n) = limits.concurrent_requests {
        outln!(out, "    concurrent_requests: {n}");
    }
    Ok(())
}
