//! A host process for the crash tests: it resumes what its journal holds, then performs a
//! task's writes against a provider, printing every step of every write. With
//! `--pause-at K` it stops dead at its K-th step, so the test can `kill -9` it there.
//!
//! `crash_host <PROVIDER_URL> <STATE_DIR> <TASK> <ACTIONS> <CLASS> [--pause-at K]`

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sluice::policy::RequestClass;
use sluice::retry::{RetryConfig, class_named};
use sluice_tests::stack::{Paths, host, write};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "crash_host <PROVIDER_URL> <STATE_DIR> <TASK> <ACTIONS> <CLASS> [--pause-at K]";
    let [_, url, dir, task, actions, class, rest @ ..] = &args[..] else {
        eprintln!("usage: {usage}");
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
    let writes = host("stripe", &paths, retry, Duration::from_secs(1)).on_step(move |step| {
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
            let w = write(
                "stripe",
                task,
                &format!("a{i}"),
                url,
                class,
                &format!("amount={}", 100 + i),
            );
            match writes.write(&w).await {
                Ok(o) => println!("outcome a{i} {:?}", o.action().state),
                Err(e) => println!("error a{i} {e}"),
            }
        }
    });
    println!("done");
}
