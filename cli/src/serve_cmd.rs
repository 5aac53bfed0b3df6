//! `sluice serve`: the sidecar. Builds the host from the configuration file, carries on
//! the writes a previous run left, serves agents (and the admin API) until SIGINT, SIGTERM
//! or SIGHUP, then stops gracefully within `serve.shutdown_deadline_ms`.
//!
//! The audit log's signing key is never made or kept beside the log by default: whoever can
//! write the state directory could then rewrite the log and sign it again. `[audit]
//! key_file` names a key kept elsewhere; `--audit-key-in-state-dir` keeps it in the state
//! directory knowingly. On a temporary state directory the key lives in memory only.
//!
//! `--fake-providers` puts a fake provider on loopback behind every configured provider
//! (its dialect by the provider's plugin), with a key of its own that the sidecar sends:
//! the configuration runs as written with no account and no provider key, and the state
//! goes to a temporary directory unless `--state-dir` names one. `--fake-faults` makes them
//! play faults and enforce limits of their own (`sluice_fake_provider::SteadyFaults`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use sluice::Sluice;
use sluice::audit::{AuditKey, Fingerprint};
use sluice::config::PluginSource;
use sluice::printable::printable;
use sluice_fake_provider::{FakeConfig, FakeProvider, SteadyFaults, Style};
use sluice_serve::Sidecar;
use sluice_serve::config::SidecarConfig;

use crate::stop::Stop;
use crate::telemetry;

/// `sluice serve` options.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The configuration file (its `[serve]` table: listeners, agents, admin token).
    #[arg(long)]
    config: PathBuf,
    /// Listen for agents here instead of `serve.listen` (port 0: any free port).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Listen for the admin API here instead of `serve.admin.listen`.
    #[arg(long)]
    admin_listen: Option<SocketAddr>,
    /// Keep the journal, the audit log and its key here instead of `state_dir`.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Send every provider's calls to a fake provider started on loopback (no account, no
    /// key): to try the configuration as written.
    #[arg(long)]
    fake_providers: bool,
    /// With --fake-providers: faults the fake providers play and limits they enforce, as
    /// KEY=VALUE pairs: `rpm=60,429=20%,503=5%,500=2%,drop=1%,slow=300` (rpm, tpm, itpm,
    /// otpm: their own limits; 429, 503, 500, drop: the share of attempts so answered;
    /// slow: milliseconds added to each answer no fault took; 503 is 529 in Anthropic's style).
    /// To watch sluice absorb a 429 storm.
    #[arg(long, requires = "fake_providers", value_name = "SPEC")]
    fake_faults: Option<SteadyFaults>,
    /// Start a fresh journal even though the journal is missing or empty beside an earlier
    /// run's audit log, witness or shared-store epoch (refused otherwise): the writes that
    /// run sent or escalated are forgotten.
    #[arg(long)]
    fresh_journal: bool,
    /// Start the audit witness afresh when it is missing, emptied or cut short beside a log
    /// that has checkpoints (refused otherwise): recorded in the log, reported by `sluice
    /// audit verify`.
    #[arg(long)]
    new_witness_epoch: bool,
    /// Make and keep the audit log's signing key in the state directory, beside the log it
    /// signs (refused otherwise unless `[audit] key_file` names one): whoever can write that
    /// directory can then rewrite the log and sign it again.
    #[arg(long)]
    audit_key_in_state_dir: bool,
}

/// The key each fake provider demands, and the sidecar sends it.
const FAKE_KEY: &str = "fake-provider-key";

/// The attempts each fake provider keeps a record of, and the writes it keeps stored: the
/// last ones only, so that a long load through the sidecar does not grow it with every
/// request (nothing here reads the record; its quotas and faults count every attempt apart
/// from it; a write let go takes its idempotency key with it, as keys expire at a provider).
const FAKE_KEPT: usize = 1_000;

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let config = match sluice_serve::config::from_file(&args.config) {
        Ok(config) => config,
        Err(e) => {
            crate::subscribe(None);
            return Err(e.into());
        }
    };
    // Before any thread starts, so that none runs the code while it moves (it would not be
    // disturbed if one did: the bytes at every address stay the same).
    let huge_text = config
        .serve
        .code_on_huge_pages
        .then(sluice::code_on_huge_pages);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    // `[telemetry]` and `OTEL_*`: off unless one of them asks.
    let exported =
        telemetry::settings::resolve(&config.host.telemetry, |name| std::env::var(name).ok())
            .context("[telemetry]")
            .and_then(|s| {
                s.map(|s| telemetry::start(&s, rt.handle().clone()))
                    .transpose()
            });
    let (telemetry, tracer, otel_metrics) = match exported {
        Ok(Some(p)) => (Some(p.telemetry), p.tracer, p.recorder),
        Ok(None) => (None, None, None),
        Err(e) => {
            crate::subscribe(None);
            return Err(e);
        }
    };
    crate::subscribe(tracer);
    match huge_text {
        Some(moved @ sluice::HugeText::Moved { .. }) => tracing::info!("{moved}"),
        Some(left) => tracing::info!("{left} ([serve] code_on_huge_pages)"),
        None => {}
    }
    // Installed before the host is built; `/metrics` on the admin API renders it, and with
    // `[telemetry]` the same series go to the collector too.
    let prometheus = crate::prometheus()?.build_recorder();
    let metrics = prometheus.handle();
    let installed = match otel_metrics {
        Some(otel) => {
            let both = metrics_util::layers::FanoutBuilder::default()
                .add_recorder(prometheus)
                .add_recorder(otel)
                .build();
            metrics::set_global_recorder(both).map_err(|_| "another recorder was installed")
        }
        None => {
            metrics::set_global_recorder(prometheus).map_err(|_| "another recorder was installed")
        }
    };
    installed
        .map_err(anyhow::Error::msg)
        .context("installing the metrics recorder")?;
    // `# HELP` and `# TYPE` for every series, the host's and the sidecar's.
    sluice::observe::describe();
    sluice_serve::metric_names::describe();
    let served = rt.block_on(serve(args, config, metrics));
    // On the main thread, while the runtime's workers still run the last exports.
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    served
}

/// Serves until a stop signal, then stops gracefully.
async fn serve(
    args: ServeArgs,
    mut config: SidecarConfig,
    metrics: metrics_exporter_prometheus::PrometheusHandle,
) -> anyhow::Result<ExitCode> {
    {
        let mut stop = Stop::listen().context("listening for stop signals")?;
        let mut fakes = Vec::new();
        let mut builder = Sluice::builder();
        let mut temp = None;
        if args.fake_providers {
            let faults = args.fake_faults.clone().unwrap_or_default();
            for (name, setup) in &mut config.host.providers {
                let config = FakeConfig::new(style_of(&setup.plugin))
                    .keep_attempts(FAKE_KEPT)
                    .keep_writes(FAKE_KEPT);
                let fake = FakeProvider::start(faults.limit(config))
                    .await
                    .context("starting a fake provider")?;
                fake.require_credential("authorization", &format!("Bearer {FAKE_KEY}"));
                fake.play(&faults);
                eprintln!(
                    "provider {} -> fake provider at {} ({faults})",
                    printable(name),
                    fake.url("")
                );
                setup.base_url = Some(fake.url(""));
                setup.credentials.clear();
                fakes.push(fake);
            }
            builder = builder.credentials(Arc::new(|_: &str, _: &str| {
                vec![("authorization".to_owned(), format!("Bearer {FAKE_KEY}"))]
            }));
            if args.state_dir.is_none() && config.host.state_dir.is_none() {
                let dir = tempfile::tempdir().context("making a temporary state directory")?;
                builder = builder.state_dir(dir.path().join("state"));
                temp = Some(dir);
            }
        }
        if let Some(dir) = &args.state_dir {
            builder = builder.state_dir(dir);
        }
        if config.host.audit.key_file.is_none() {
            if temp.is_some() {
                // The state goes with the run: so does the key, never written.
                builder = builder.audit_key(AuditKey::generate()?);
            } else if !args.audit_key_in_state_dir {
                anyhow::bail!(key_beside_log(
                    args.state_dir.as_ref().or(config.host.state_dir.as_ref())
                ));
            }
        }
        builder = builder
            .fresh_journal(args.fresh_journal)
            .new_witness_epoch(args.new_witness_epoch);
        let sluice = Arc::new(builder.config(config.host.clone()).build()?);
        // At every start, and again at the end: the key to pin when verifying the log.
        let signed_by = format!(
            "the audit log {} is signed by key {}",
            sluice.audit().path().display(),
            Fingerprint::of(&sluice.audit().verifying_key())
        );
        eprintln!("sluice serve: {signed_by}");
        let mut sidecar = Sidecar::new(sluice, &config)?.metrics(metrics);
        if let Some(addr) = args.listen {
            sidecar = sidecar.listen(addr);
        }
        if let Some(addr) = args.admin_listen {
            sidecar = sidecar.admin_listen(addr);
        }
        #[cfg(unix)]
        open_files_for(&config.serve);
        let running = sidecar.start().await?;
        eprintln!(
            "sluice serve: agents connect to http://{}/PROVIDER/... (providers: {})",
            running.addr(),
            config
                .host
                .providers
                .keys()
                .map(|p| printable(p).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(admin) = running.admin_addr() {
            eprintln!("sluice serve: admin API at http://{admin}");
            eprintln!("sluice serve: operator's console at http://{admin}/console");
        }
        let signal = stop.signalled().await;
        eprintln!(
            "sluice serve: {}: stopping (in-flight calls get {} ms)",
            signal.name(),
            config.serve.shutdown_deadline.as_millis()
        );
        let drained = running.shutdown().await;
        if drained.writes_left > 0 {
            eprintln!(
                "sluice serve: {} writes were still running at the deadline; the journal holds \
                 them and the next start carries them on",
                drained.writes_left
            );
        } else {
            eprintln!("sluice serve: stopped; no write left unfinished");
        }
        eprintln!("sluice serve: {signed_by}");
        drop(fakes);
        drop(temp);
        Ok(ExitCode::SUCCESS)
    }
}

/// Why `sluice serve` does not start with its signing key beside the log, and what to do.
/// Raises the process's soft limit on open files to its hard limit, as far as the listeners'
/// bounds may need (every seated and unauthenticated connection, the admin's, and as many
/// again to the providers), and says so when the hard limit is lower than that.
#[cfg(unix)]
fn open_files_for(serve: &sluice_serve::config::ServeConfig) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let admin = serve.admin.as_ref().map_or(0, |a| a.max_connections);
    let want = 2 * u64::from(serve.max_connections + serve.max_unauthenticated + admin) + 256;
    let limit = getrlimit(Resource::Nofile);
    let (current, maximum) = (limit.current.unwrap_or(u64::MAX), limit.maximum);
    if current < want {
        let raised = maximum.map_or(want, |m| m.min(want));
        if setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(raised),
                maximum,
            },
        )
        .is_err()
            || raised < want
        {
            tracing::warn!(
                open_files = raised.max(current),
                wanted = want,
                "the process may open fewer files than serve.max_connections and \
                 serve.max_unauthenticated may need: raise its limit (ulimit -n, or LimitNOFILE \
                 in a systemd unit)"
            );
        }
    }
}

fn key_beside_log(state_dir: Option<&PathBuf>) -> String {
    let dir = state_dir.map_or_else(
        || "the user's state directory".to_owned(),
        |d| d.display().to_string(),
    );
    format!(
        "sluice serve does not keep the audit log's signing key in the state directory \
         ({dir}), beside the log it signs: whoever can write there could rewrite the log and \
         sign it again. Make a key elsewhere (`sluice audit keygen --secret /etc/sluice/audit.key \
         --public audit.pub`, on another volume or owner) and name it in `[audit] key_file`; a \
         key the state directory holds already (`audit.key`) can be moved there, its \
         fingerprint unchanged. Or keep it beside the log knowingly: \
         `--audit-key-in-state-dir`."
    )
}

/// The dialect of the fake provider behind a provider of `plugin`.
fn style_of(plugin: &PluginSource) -> Style {
    match plugin {
        PluginSource::Bundled(name) => match name.as_str() {
            "anthropic" => Style::Anthropic,
            "github" => Style::GitHub,
            "stripe" => Style::Stripe,
            _ => Style::OpenAi,
        },
        PluginSource::File(_) => Style::OpenAi,
    }
}
