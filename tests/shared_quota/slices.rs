//! Slices of a shared quota: four hosts admit from slices they take of it, and the group
//! never admits more than the store's pace allows from the moment the quota was new.
//!
//! A seeded simulation: each seed draws each host's callers, their pauses and their calls'
//! token estimates and actual use (below the estimate, or above it), and runs the hosts
//! against one `redis-server`. Every admission's time is kept; the k-th admission of the
//! group must come no sooner than the paced schedule allows for k units (requests), from
//! an empty burst. The same run counts the store's round trips, which must be far fewer
//! than the admissions. A last run puts eight callers on one host and one on each other:
//! at the pace's edge the busy hosts take equal turns, so no host's share grows because it
//! was given more.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice::admission::shared::{Gate, SharedConfig};
use sluice::admission::usage::Usage;
use sluice::admission::{Acquire, Admission, Config};
use sluice::clock::{Clock, SystemClock};
use sluice_tests::redis_server::{RedisServer, without_redis};

/// 120 000 requests a minute at the default margin of 0.9: 1 800 a second.
const LIMITS: &str = "[providers.openai.limits]\nrequests_per_minute = 120000\n\
                      tokens_per_minute = 600000000\n";
const PACED_PER_SECOND: f64 = 1_800.0;
const HOSTS: u32 = 4;

/// The two tests here measure against the clock, with many callers each: run side by side
/// in one process (as `cargo test` runs a binary's tests) they would take each other's CPU,
/// and a single caller starved of CPU asks for less than its turn. One runs at a time.
static ONE_AT_A_TIME: std::sync::LazyLock<tokio::sync::Mutex<()>> =
    std::sync::LazyLock::new(|| tokio::sync::Mutex::new(()));

fn host(url: &str, prefix: &str, id: u32) -> Admission {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut store = SharedConfig::new(url, NonZeroU32::new(HOSTS).expect("4"));
    store.key_prefix = prefix.into();
    let gate = Gate::new(store, format!("host-{id}"), clock.clone(), None).expect("a gate");
    let config = Config::from_toml(LIMITS).expect("a configuration");
    Admission::with_gate(config, clock, gate).expect("admission")
}

#[allow(
    clippy::disallowed_methods,
    reason = "admission times against the paced schedule"
)]
fn now() -> Instant {
    Instant::now()
}

/// One seed's run: the admission times (s from the start), the store's script calls and
/// each host's admissions. `callers`: each host's callers, sending without pause (else
/// drawn from the seed, as are their pauses).
async fn run(
    redis: &RedisServer,
    seed: u64,
    length: Duration,
    callers: Option<[usize; 4]>,
) -> (Vec<f64>, u64, Vec<usize>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let prefix = format!("slices-{seed}");
    let hosts: Vec<Admission> = (0..HOSTS).map(|h| host(&redis.url(), &prefix, h)).collect();
    let times = Arc::new(Mutex::new(Vec::new()));
    let each: Arc<Vec<AtomicUsize>> = Arc::new((0..HOSTS).map(|_| AtomicUsize::new(0)).collect());
    let calls_before = redis.script_calls();
    let start = now();
    let mut tasks = Vec::new();
    for (h, admission) in hosts.iter().enumerate() {
        // Some hosts busy, some nearly idle.
        let n = callers.map_or_else(|| rng.usize(1..=8), |c| c[h]);
        for _ in 0..n {
            let (admission, times, each) = (admission.clone(), times.clone(), each.clone());
            let pause_us = if callers.is_some() || rng.bool() {
                0
            } else {
                rng.u64(0..3_000)
            };
            let mut rng = fastrand::Rng::with_seed(rng.u64(..));
            tasks.push(tokio::spawn(async move {
                while start.elapsed() < length {
                    let estimate = rng.u64(10..2_000);
                    let usage = Usage {
                        requests: 1,
                        input_tokens: estimate,
                        ..Usage::default()
                    };
                    let permit = admission
                        .acquire(Acquire::new("openai", "team-key").usage(usage))
                        .await
                        .expect("admitted");
                    times
                        .lock()
                        .expect("times")
                        .push(start.elapsed().as_secs_f64());
                    each[h].fetch_add(1, Ordering::Relaxed);
                    // Used less than estimated, or (one call in five) more.
                    let used = if rng.u8(0..5) == 0 {
                        estimate + rng.u64(0..500)
                    } else {
                        rng.u64(0..=estimate)
                    };
                    permit.complete(Some(Usage {
                        requests: 1,
                        input_tokens: used,
                        ..Usage::default()
                    }));
                    if pause_us > 0 {
                        tokio::time::sleep(Duration::from_micros(pause_us)).await;
                    }
                }
            }));
        }
    }
    for t in tasks {
        t.await.expect("a caller");
    }
    let mut times = times.lock().expect("times").clone();
    times.sort_by(f64::total_cmp);
    let each = each.iter().map(|n| n.load(Ordering::Relaxed)).collect();
    (times, redis.script_calls() - calls_before, each)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_admitting_from_slices_never_pass_the_shared_pace() {
    if without_redis() {
        return;
    }
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = RedisServer::start();
    let length = Duration::from_secs(5);
    for seed in [1, 2, 3] {
        let (times, scripts, _) = run(&redis, seed, length, None).await;
        let n = times.len();
        // The k-th admission (from 1) needs k − 1 intervals of the pace since the quota
        // was new (an empty burst at the first ask, which comes after `start`).
        let worst = times
            .iter()
            .enumerate()
            .map(|(k, t)| {
                #[allow(clippy::cast_precision_loss, reason = "a count of admissions")]
                let allowed = t * PACED_PER_SECOND + 1.0;
                #[allow(clippy::cast_precision_loss, reason = "a count of admissions")]
                let excess = (k + 1) as f64 - allowed;
                excess
            })
            .fold(f64::MIN, f64::max);
        #[allow(clippy::cast_precision_loss, reason = "a count of admissions")]
        let used = n as f64 / (length.as_secs_f64() * PACED_PER_SECOND);
        println!(
            "seed {seed}: {n} admitted in {length:?} ({:.1}% of the pace), {scripts} store \
             calls, worst excess over the schedule {worst:.2}",
            used * 100.0
        );
        assert!(
            worst <= 0.0,
            "seed {seed}: {worst} admissions over the pace"
        );
        // Busy hosts use their slices: far fewer store calls than admissions.
        assert!(
            scripts * 3 < u64::try_from(n).expect("a count"),
            "seed {seed}: {scripts} for {n}"
        );
        assert!(used > 0.7, "seed {seed}: {used}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_hosts_take_equal_turns_at_the_pace_s_edge() {
    if without_redis() {
        return;
    }
    let _alone = ONE_AT_A_TIME.lock().await;
    let redis = RedisServer::start();
    let (times, _, each) = run(&redis, 9, Duration::from_secs(5), Some([8, 1, 1, 1])).await;
    #[allow(clippy::cast_precision_loss, reason = "counts of admissions")]
    let shares: Vec<f64> = each
        .iter()
        .map(|n| *n as f64 / times.len() as f64)
        .collect();
    println!("each host's share, eight callers on the first, one on each other: {shares:.2?}");
    // Equal turns would give each a quarter; the host with eight callers may go first
    // more often, never take the others' turns.
    assert!(shares[0] < 0.4, "{shares:?}");
    assert!(shares[1..].iter().all(|s| *s > 0.15), "{shares:?}");
}
