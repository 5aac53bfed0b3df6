//! A host process for the shared-quota tests: it shares one provider account's quotas with
//! the other hosts through Redis, and keeps `WORKERS` calls going to the provider for
//! `DURATION_MS`, then prints what it saw and exits.
//!
//! `shared_host <REDIS_URL> <HOSTS> <HOST_ID> <PROVIDER_URL> <STATE_DIR> <WORKERS>
//! <DURATION_MS> <LIMITS_TOML>`
//!
//! `LIMITS_TOML` is the body of `[providers.openai.limits]`, one `key = value` per `;`
//! (`requests_per_minute = 300; concurrent_requests = 2`). Every call is a small chat
//! completion of tenant `acme`. The host prints `ready` once built, then one line at the
//! end: `done <HOST_ID> succeeded=N ended=M`.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice_tests::stack::{builder, transport};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "shared_host <REDIS_URL> <HOSTS> <HOST_ID> <PROVIDER_URL> <STATE_DIR> \
                 <WORKERS> <DURATION_MS> <LIMITS_TOML>";
    let [
        _,
        redis,
        hosts,
        host_id,
        url,
        dir,
        workers,
        duration,
        limits,
    ] = &args[..]
    else {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    };
    let workers: usize = workers.parse().expect("WORKERS is a number");
    let duration = Duration::from_millis(duration.parse().expect("DURATION_MS is a number"));
    let limits = limits.replace(';', "\n");
    let config = format!(
        "[store]\nurl = \"{redis}\"\nhosts = {hosts}\nhost_id = \"{host_id}\"\n\
         lease_ttl_ms = 1500\ntimeout_ms = 200\n\n[providers.openai.limits]\n{limits}\n"
    );
    let retry = RetryConfig {
        backoff_base_ms: 50,
        backoff_cap_ms: 200,
        ..RetryConfig::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async move {
        let sluice = builder("openai", &config, retry, transport(Duration::from_secs(30)))
            .state_dir(Path::new(dir))
            .build()
            .expect("a host");
        println!("ready");
        let _ = std::io::stdout().flush();
        let executor = sluice.executor().clone();
        let succeeded = Arc::new(AtomicU64::new(0));
        let ended = Arc::new(AtomicU64::new(0));
        let chat = format!("{url}/v1/chat/completions");
        for _ in 0..workers {
            let (executor, succeeded, ended, chat) =
                (executor.clone(), succeeded.clone(), ended.clone(), chat.clone());
            tokio::spawn(async move {
                loop {
                    let call = Call::post(
                        "openai",
                        &chat,
                        r#"{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#,
                    )
                    .credential("team-key")
                    .tenant("acme")
                    .class(RequestClass::Read)
                    .header("content-type", "application/json");
                    match executor.execute(&call).await {
                        Outcome::Succeeded { .. } => succeeded.fetch_add(1, Ordering::Relaxed),
                        Outcome::Ended(_) => ended.fetch_add(1, Ordering::Relaxed),
                    };
                }
            });
        }
        tokio::time::sleep(duration).await;
        println!(
            "done {host_id} succeeded={} ended={}",
            succeeded.load(Ordering::Relaxed),
            ended.load(Ordering::Relaxed)
        );
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    });
}
