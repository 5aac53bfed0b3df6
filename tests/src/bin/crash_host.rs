//! A host process for the crash tests: it resumes what its journal holds, then performs a
//! task's writes against a provider, printing every step of every write. With
//! `--pause-at K` it stops dead at its K-th step, so the test can `kill -9` it there.
//!
//! `crash_host <PROVIDER> <PROVIDER_URL> <STATE_DIR> <TASK> <ACTIONS> <CLASS> [--pause-at K]`
//!
//! `PROVIDER` is `stripe` or `github` (`sluice_tests::crash_run::Provider`): the plugin that
//! reads the provider, and the body each write carries.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sluice::contract::RequestClass;
use sluice::retry::{RetryConfig, class_named};
use sluice_tests::crash_run::Provider;
use sluice_tests::stack::{Paths, host_builder, write};

/// How long the fake provider may go on working on an attempt after its client has gone:
/// its slowest scripted answer in the crash runs takes 450 ms (`crash_run::Run::seeded`),
/// and a loaded machine may start it late.
const PROVIDER_TIMEOUT: Duration = Duration::from_millis(800);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "crash_host <PROVIDER> <PROVIDER_URL> <STATE_DIR> <TASK> <ACTIONS> <CLASS> \
                 [--pause-at K]";
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
    let pause_at: Option<u32> = match rest {
        [flag, k] if flag == "--pause-at" => Some(k.parse().expect("K is a number")),
        _ => None,
    };
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
    let writes = host_builder(provider.name(), &paths, retry, Duration::from_secs(1))
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
        .expect("a host");
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
            match writes.write(&w).await {
                Ok(o) => println!("outcome a{i} {:?}", o.action().state),
                Err(e) => println!("error a{i} {e}"),
            }
        }
    });
    println!("done");
}
