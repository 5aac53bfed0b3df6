//! `sluice plugin run-test`: cargo's runner for a plugin crate's `wasm32-wasip2` tests.
//!
//! A plugin crate's `.cargo/config.toml` names it (`[target.wasm32-wasip2] runner =
//! ["sluice", "plugin", "run-test"]`), so `cargo test --target wasm32-wasip2` runs the unit
//! tests inside the engine that hosts the plugin, sandboxed as the plugin is; see
//! [`crate::test_binary`]. The exit status is the test binary's own.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::test_binary::{self, CommandExit};
use anyhow::Context as _;
use clap::Args;

/// Without a `--help` of its own: `cargo test --target wasm32-wasip2 -- --help` passes it to
/// the test binary, whose help it is (`sluice plugin help run-test` shows this one).
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct RunTestArgs {
    /// The test binary: a WASI command component, as `cargo test --target wasm32-wasip2`
    /// builds.
    wasm: PathBuf,
    /// Its arguments, passed on as given (test filters, `--nocapture`, `--list`...).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

/// libtest's flags that turn its capture of a test's output off (`--show-output` does not:
/// it prints what was captured once a test ends, which an abort never lets happen).
const CAPTURE_OFF: &[&str] = &["--nocapture", "--no-capture"];

pub fn run(args: &RunTestArgs) -> anyhow::Result<ExitCode> {
    let guest_args = args
        .args
        .iter()
        .map(|a| {
            a.to_str()
                .map(str::to_owned)
                .with_context(|| format!("an argument is not UTF-8: {}", a.to_string_lossy()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let exit = test_binary::run_test_binary(&args.wasm, &guest_args)?;
    if let CommandExit::Trapped(trap) = &exit {
        eprintln!(
            "error: {} trapped: {trap}\n(a panic aborts the whole run on wasm32-wasip2)",
            args.wasm.display()
        );
        // libtest captured the test's output, the panic message with it, and the abort lost
        // it. The run is deterministic (no clock, files or network), so run it again without
        // capturing: the same test panics again, its message printed.
        if !guest_args.iter().any(|a| CAPTURE_OFF.contains(&a.as_str())) {
            eprintln!("running it again with --nocapture to show the panic's message:");
            let mut again = guest_args.clone();
            again.push("--nocapture".to_owned());
            test_binary::run_test_binary(&args.wasm, &again)?;
        }
    }
    Ok(ExitCode::from(exit.status()))
}
