//! A host process for the crash tests: it resumes what its journal holds, then performs a
//! task's writes against a provider, printing every step of every write. With
//! `--pause-at K` it stops dead at its K-th step, so the test can `kill -9` it there.
//!
//! `crash_host <PROVIDER> <PROVIDER_URL> <STATE_DIR> <TASK> <ACTIONS> <CLASS> [--pause-at K]
//! [--checkpoint-every N] [--cache DIR] [--new-witness-epoch] [--store URL --host-id ID]
//! [--linger-ms MS] [--journal-url URL --lease-ttl-ms MS]`
//!
//! The damage soak's options: a signed checkpoint every `N` audit records (so a short run
//! has a witness to lose), compiled plugins cached in `DIR` (so an artifact can be swapped
//! without touching other tests' cache), the operator's word to start a new witness epoch,
//! and a shared store (Redis at `URL`, two hosts, this one `ID`) whose state can be lost,
//! with the host kept alive `MS` after its work (`done`) so that the store's upkeep runs.
//! The group runs' options: the journal of a group of hosts (PostgreSQL at `URL`), with a
//! lease of `MS`; an action another host of the group owns is tried again every 100 ms, as
//! an agent whose call a load balancer sent to another replica would, until it is taken
//! over (or 30 s pass). So is a write deferred (nothing sent, the action pending).
//! A host that will not start says why on its standard error and exits 3.
//!
//! `PROVIDER` is `stripe` or `github` (`sluice_tests::crash_run::Provider`): the plugin that
//! reads the provider, and the body each write carries.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sluice::contract::RequestClass;
use sluice::journal::JournalError;
use sluice::plugin::ComponentCache;
use sluice::retry::{RetryConfig, class_named};
use sluice::writes::{WriteError, WriteOutcome};
use sluice_tests::crash_run::Provider;
use sluice_tests::stack::{Paths, builder, transport, write};
use sluice_tests::store_loss::LEASE_TTL_MS;

/// How long the fake provider may go on working on an attempt after its client has gone:
/// its slowest scripted answer in the crash runs takes 450 ms (`crash_run::Run::seeded`),
/// and a loaded machine may start it late.
const PROVIDER_TIMEOUT: Duration = Duration::from_millis(800);

/// How long an action another host of the group owns, or one deferred, is tried again.
const OWNED_ELSEWHERE_PATIENCE: Duration = Duration::from_secs(30);

fn main() {
    // Warnings (a recompiled artifact, a tightened file) go to standard error, which the
    // test keeps.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let args: Vec<String> = std::env::args().collect();
    let usage = "crash_host <PROVIDER> <PROVIDER_URL> <STATE_DIR> <TASK> <ACTIONS> <CLASS> \
                 [--pause-at K] [--checkpoint-every N] [--cache DIR] [--new-witness-epoch] \
                 [--store URL --host-id ID] [--linger-ms MS] \
                 [--journal-url URL --lease-ttl-ms MS]";
    let [_, provider, url, dir, task, actions, class, rest @ ..] = &args[..] else {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    };
    let Some(provider) = Provider::named(provider) else {
        eprintln!("PROVIDER is stripe or github; usage: {usage}");
        std::process::exit(2);
    };
    let actions: usize = actions.parse().expect("ACTIONS is a number");
    let class = class_named(class).unwrap_or(RequestClass::UncertainWrite);
    let (mut pause_at, mut checkpoint_every, mut cache, mut new_epoch) = (None, None, None, false);
    let (mut store, mut host_id, mut linger) = (None, None, Duration::ZERO);
    let (mut journal_url, mut lease_ttl_ms) = (None, None);
    let mut options = rest.iter();
    while let Some(flag) = options.next() {
        let mut value = || options.next().expect("a value after the option").clone();
        match flag.as_str() {
            "--pause-at" => pause_at = Some(value().parse::<u32>().expect("K is a number")),
            "--checkpoint-every" => {
                checkpoint_every = Some(value().parse::<u32>().expect("N is a number"));
            }
            "--cache" => cache = Some(value()),
            "--new-witness-epoch" => new_epoch = true,
            "--store" => store = Some(value()),
            "--host-id" => host_id = Some(value()),
            "--journal-url" => journal_url = Some(value()),
            "--lease-ttl-ms" => {
                lease_ttl_ms = Some(value().parse::<u64>().expect("MS is a number"));
            }
            "--linger-ms" => {
                linger = Duration::from_millis(value().parse().expect("MS is a number"));
            }
            other => {
                eprintln!("unknown option {other}; usage: {usage}");
                std::process::exit(2);
            }
        }
    }
    let paths = Paths::under(Path::new(dir));
    let retry = RetryConfig {
        backoff_base_ms: 50,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _entered = rt.enter();
    let steps = AtomicU32::new(0);
    let mut config = format!(
        "[providers.{}.limits]\nrequests_per_minute = 6000\n",
        provider.name()
    );
    if let Some(n) = checkpoint_every {
        config.push_str(&format!("[audit]\ncheckpoint_every = {n}\n"));
    }
    if let Some(url) = store {
        let id = host_id.expect("--host-id with --store");
        // A short lease: a host restarted after a kill waits this long for its id.
        config.push_str(&format!(
            "[store]\nurl = \"{url}\"\nhosts = 2\nhost_id = \"{id}\"\n\
             lease_ttl_ms = {LEASE_TTL_MS}\ntimeout_ms = 500\n"
        ));
    }
    if let Some(url) = journal_url {
        config.push_str(&format!("[journal]\nurl = \"{url}\"\n"));
        if let Some(ms) = lease_ttl_ms {
            config.push_str(&format!("lease_ttl_ms = {ms}\n"));
        }
    }
    let mut builder = builder(
        provider.name(),
        &config,
        retry,
        transport(Duration::from_secs(1)),
    )
    .state_dir(&paths.dir);
    if let Some(dir) = cache {
        builder = builder.component_cache(ComponentCache::new(Some(dir.into())));
    }
    let writes = builder
        .new_witness_epoch(new_epoch)
        .provider_timeout(PROVIDER_TIMEOUT)
        .on_write_step(move |step| {
            let n = steps.fetch_add(1, Ordering::SeqCst) + 1;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "step {n} {}", step.name());
            if pause_at == Some(n) {
                let _ = writeln!(out, "paused");
                let _ = out.flush();
                drop(out);
                loop {
                    std::thread::sleep(Duration::from_secs(60));
                }
            }
            let _ = out.flush();
        })
        .build()
        .unwrap_or_else(|e| {
            eprintln!("crash_host: the host did not start: {e}");
            std::process::exit(3);
        });
    rt.block_on(async {
        for outcome in writes.recover().await.expect("recover") {
            println!(
                "recovered {} {:?}",
                outcome.action().action,
                outcome.action().state
            );
        }
        for i in 0..actions {
            let action = format!("a{i}");
            let mut w = write(
                provider.name(),
                task,
                &action,
                url,
                class,
                &provider.body(task, &action, i),
            );
            if provider == Provider::GitHub {
                w.call.headers = vec![("content-type".into(), "application/json".into())];
            }
            let mut waited = Duration::ZERO;
            let outcome = loop {
                match writes.write(&w).await {
                    Err(WriteError::Journal(JournalError::OwnedElsewhere { .. }))
                        if waited < OWNED_ELSEWHERE_PATIENCE =>
                    {
                        if waited.is_zero() {
                            println!("owned-elsewhere a{i}");
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        waited += Duration::from_millis(100);
                    }
                    // Nothing was sent, as its outcome says: an agent sends it again (a
                    // refused write only goes when its agent submits it again).
                    Ok(
                        WriteOutcome::Deferred { terminal, .. }
                        | WriteOutcome::Refused { terminal, .. },
                    ) if waited < OWNED_ELSEWHERE_PATIENCE => {
                        let why = terminal.map_or_else(String::new, |t| format!("{:?}", t.reason));
                        println!("deferred a{i} {why}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        waited += Duration::from_millis(100);
                    }
                    other => break other,
                }
            };
            match outcome {
                Ok(o) => println!("outcome a{i} {:?}", o.action().state),
                Err(e) => println!("error a{i} {e}"),
            }
        }
        println!("done");
        tokio::time::sleep(linger).await;
    });
}
