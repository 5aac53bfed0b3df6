//! `sluice plugin test`, `inspect`, `list`, `new` (in `plugin_new`) and `run-test` (in
//! `plugin_run_test`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use sluice::contract::RequestClass;
use sluice::plugin::{CacheOutcome, ComponentCache, Plugin, PluginRuntime, RuntimeConfig, bundled};
use sluice::printable::printable;
use sluice::vectors::{self, VectorFile, VectorReport};
use sluice_plugin_record::{RecordOptions, Recording};

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Check a plugin against vector files; prints one line per case and `N passed, N failed`.
    ///
    /// Exits 1 when a case fails, 2 when a file or the plugin cannot be loaded.
    ///
    /// With --record FILE, records cases instead: reads a captured response (a HAR file, or
    /// a `curl -i` dump, with or without -v), has the plugin read it, and adds a case per
    /// exchange to the --out vector file (created when absent; printed when --out is not
    /// given), its expectations filled with what the plugin answered. Review them before
    /// committing. Credential and account headers are written redacted; a case name
    /// the file already holds is refused, and nothing is written.
    Test(TestArgs),
    /// Show what a plugin says about itself, what it exports and the limits it runs under.
    Inspect {
        /// A bundled plugin's name (openai, anthropic, github, stripe, ietf) or a .wasm path.
        plugin: String,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
    /// List the bundled plugins.
    List,
    /// Create a plugin crate: a skeleton plugin with unit tests, test vectors and a README.
    ///
    /// The crate stands outside any workspace and depends on this checkout's SDK by path.
    /// Refuses a bad crate name and an existing directory that is not empty.
    New(crate::plugin_new::NewArgs),
    /// Run a plugin crate's wasm32-wasip2 test binary in the plugin sandbox: cargo's runner.
    ///
    /// In the crate's `.cargo/config.toml`: `[target.wasm32-wasip2] runner = ["sluice",
    /// "plugin", "run-test"]`; then `cargo test --target wasm32-wasip2`. Output is the
    /// binary's stdout and stderr; it gets no files, network or environment. Exits with the
    /// binary's status (134 when it traps, 2 when it cannot run).
    RunTest(crate::plugin_run_test::RunTestArgs),
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// A bundled plugin's name or a .wasm path.
    #[arg(required_unless_present = "bundled")]
    plugin: Option<String>,
    /// Vector files (the format of docs/PLUGIN-VECTORS.md).
    #[arg(required_unless_present_any = ["bundled", "record"])]
    vectors: Vec<PathBuf>,
    /// Test every bundled plugin against the vectors it ships with.
    #[arg(long, conflicts_with_all = ["plugin", "vectors", "record"])]
    bundled: bool,
    /// Record cases from a captured response: a HAR file or a `curl -i` dump.
    #[arg(long, value_name = "FILE", conflicts_with = "vectors")]
    record: Option<PathBuf>,
    /// The vector file the recorded cases are added to (created when absent). Without it,
    /// the cases are printed as a vector file.
    #[arg(long, value_name = "VECTORS.json", requires = "record")]
    out: Option<PathBuf>,
    /// HAR: record only entries whose URL starts with URL (repeatable; default every
    /// entry). curl dump: the request's URL (default: from the -v lines).
    #[arg(long, value_name = "URL", requires = "record")]
    request_url: Vec<String>,
    /// curl dump: the request's method (default: from the -v lines, else GET).
    #[arg(long, value_name = "METHOD", requires = "record")]
    request_method: Option<String>,
    /// The request class written in the cases.
    #[arg(long, value_enum, value_name = "CLASS", requires = "record")]
    request_class: Option<ClassArg>,
    /// The recorded case's name (default: `METHOD /path answered STATUS`).
    #[arg(long, value_name = "NAME", requires = "record")]
    name: Option<String>,
    #[command(flatten)]
    runtime: RuntimeArgs,
}

/// A request class, as the vector format names it.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ClassArg {
    Read,
    IdempotentWrite,
    UncertainWrite,
}

impl From<ClassArg> for RequestClass {
    fn from(c: ClassArg) -> Self {
        match c {
            ClassArg::Read => Self::Read,
            ClassArg::IdempotentWrite => Self::IdempotentWrite,
            ClassArg::UncertainWrite => Self::UncertainWrite,
        }
    }
}

/// The longest deadline `--deadline-ms` takes: ten minutes is already far past anything a
/// plugin call should need.
const MAX_DEADLINE_MS: u64 = 600_000;

#[derive(Debug, Args)]
pub struct RuntimeArgs {
    /// Wall time one plugin call may take, in milliseconds (1 to 600000).
    #[arg(
        long,
        default_value_t = 5,
        value_name = "MS",
        value_parser = clap::value_parser!(u64).range(1..=MAX_DEADLINE_MS)
    )]
    deadline_ms: u64,
    /// Don't read or write the compiled-plugin cache.
    #[arg(long)]
    no_cache: bool,
}

impl RuntimeArgs {
    fn runtime(&self) -> anyhow::Result<PluginRuntime> {
        let config = RuntimeConfig {
            call_deadline: Duration::from_millis(self.deadline_ms),
            ..RuntimeConfig::default()
        };
        let cache = if self.no_cache {
            ComponentCache::new(None)
        } else {
            ComponentCache::user_default()
        };
        Ok(PluginRuntime::new(config, cache)?)
    }
}

pub fn run(cmd: PluginCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PluginCommand::Test(args) => test(&args),
        PluginCommand::Inspect { plugin, runtime } => {
            let rt = runtime.runtime()?;
            let p = rt.load_spec(&plugin)?;
            inspect(&p, &rt);
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::New(args) => crate::plugin_new::run(&args),
        PluginCommand::RunTest(args) => crate::plugin_run_test::run(&args),
        PluginCommand::List => {
            for name in bundled::names() {
                println!("{name}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn test(args: &TestArgs) -> anyhow::Result<ExitCode> {
    let rt = args.runtime.runtime()?;
    if let Some(capture) = &args.record {
        return record(&rt, args, capture);
    }
    let mut runs: Vec<(Plugin, Vec<VectorFile>)> = Vec::new();
    if args.bundled {
        for name in bundled::names() {
            let plugin = rt.load_bundled(name)?;
            let label = PathBuf::from(format!("plugins/{name}/vectors.json"));
            let text = bundled::vectors(name).context("a bundled plugin without vectors")?;
            runs.push((plugin, vec![vectors::parse(&label, text)?]));
        }
    } else {
        let spec = args.plugin.as_deref().context("name a plugin")?;
        let plugin = rt.load_spec(spec)?;
        let files = args
            .vectors
            .iter()
            .map(|p| vectors::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        runs.push((plugin, files));
    }
    let (mut passed, mut failed) = (0, 0);
    for (plugin, files) in &runs {
        for file in files {
            let report = vectors::run(plugin, file);
            print_report(plugin.name(), &report);
            passed += report.passed();
            failed += report.failed();
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--record`: the new cases go to `--out`, or to standard output as a vector file.
fn record(rt: &PluginRuntime, args: &TestArgs, capture: &Path) -> anyhow::Result<ExitCode> {
    let spec = args.plugin.as_deref().context("name a plugin")?;
    let plugin = rt.load_spec(spec)?;
    let opts = RecordOptions {
        request_urls: args.request_url.clone(),
        request_method: args.request_method.clone(),
        request_class: args.request_class.map(Into::into),
        name: args.name.clone(),
    };
    let recording = sluice_plugin_record::record(&plugin, capture, args.out.as_deref(), &opts)?;
    let failed: Vec<String> = recording
        .report
        .lines(plugin.name())
        .filter(|l| l.starts_with("FAIL"))
        .collect();
    // A recorded case fails only if the plugin answers differently twice: not deterministic.
    anyhow::ensure!(
        failed.is_empty(),
        "the plugin answered the recorded cases differently when they were replayed; nothing \
         written:\n{}",
        failed.join("\n")
    );
    let Some(out) = &args.out else {
        print!("{}", recording.text);
        report_recorded(&recording, None);
        return Ok(ExitCode::SUCCESS);
    };
    sluice_plugin_record::save(out, &recording)
        .with_context(|| format!("{}: cannot write", out.display()))?;
    report_recorded(&recording, Some(out));
    Ok(ExitCode::SUCCESS)
}

/// What was recorded, on standard error (standard output may carry the vector file).
fn report_recorded(recording: &Recording, out: Option<&Path>) {
    let n = recording.names.len();
    match out {
        Some(out) => eprintln!(
            "recorded {n} case{} into {}:",
            if n == 1 { "" } else { "s" },
            printable(&out.display().to_string())
        ),
        None => eprintln!("recorded {n} case{}:", if n == 1 { "" } else { "s" }),
    }
    for name in &recording.names {
        eprintln!("  {}", printable(name));
    }
    for note in &recording.notes {
        eprintln!("note: {}", printable(note));
    }
    eprintln!("their expectations are what the plugin answers now: review them before committing");
}

fn print_report(plugin: &str, report: &VectorReport) {
    for line in report.lines(plugin) {
        println!("{line}");
    }
}

/// What a plugin says about itself is its own text: printed escaped, like a report.
fn inspect(p: &Plugin, rt: &PluginRuntime) {
    let d = p.description();
    let c = rt.config();
    println!("plugin    {} {}", printable(&d.name), printable(&d.version));
    println!("provider  {}", printable(&d.provider));
    println!("hosts     {}", printable(&d.hosts.join(", ")));
    println!("routes    {}", printable(&d.routes.join(", ")));
    println!("contract  {}", p.contract());
    println!("exports");
    for e in p.exports() {
        println!("  {e}");
    }
    println!("limits");
    println!("  deadline per call   {} ms", c.call_deadline.as_millis());
    println!("  memory              {} MiB", c.max_memory_bytes >> 20);
    println!("  table elements      {}", c.max_table_elements);
    println!("  wasm stack          {} KiB", c.max_wasm_stack >> 10);
    println!("  strings returned    <= {} bytes", c.caps.max_string_bytes);
    println!("  tenants and scopes  <= {} bytes", c.caps.max_name_bytes);
    println!("  lists returned      <= {} entries", c.caps.max_list_len);
    println!("  scopes per request  <= {}", c.caps.max_scopes);
    println!("  delays returned     <= {} s", c.caps.max_delay_ms / 1000);
    println!("capabilities  none (no files, env, network; clocks frozen; time only via now-ms)");
    println!(
        "compiled      {}",
        match p.cache_outcome() {
            CacheOutcome::Hit => "loaded from the cache",
            CacheOutcome::Compiled => "compiled now",
        }
    );
}
