//! Four host processes (`shared_host`) on one fake provider and one `redis-server`.

use std::time::Duration;

use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, Style};
use sluice_tests::redis_server::RedisServer;

use crate::support::{
    CHAT, Host, PACED_PER_SEC, RPM, blocking, finish, four_hosts, most_in_a_minute, seconds,
    worst_excess,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hosts_on_one_quota_never_over_admit_and_use_at_least_95_percent_of_the_pace() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let redis = RedisServer::start();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(RPM))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let hosts = four_hosts(&redis, &fake, dir.path(), 20_000).await;
    let done = finish(hosts).await;

    let attempts = fake.attempts();
    let times: Vec<f64> = attempts.iter().map(seconds).collect();
    assert_eq!(fake.answered(429), 0, "the provider refused some: {done:?}");
    assert!(most_in_a_minute(&times) <= RPM as usize);
    // Four hosts, sixteen workers, one pace: never more than it, beyond network jitter (a
    // tenth of the pace more over the run would be nine attempts).
    let excess = worst_excess(&times, 1.0 / PACED_PER_SEC);
    assert!(
        excess <= 1.5,
        "{excess:.1} attempts beyond the pace; {done:?}"
    );
    // Utilization, from 2 s after the first attempt to 1 s before the first host stopped.
    let start = times[0] + 2.0;
    let end = times[0] + 17.0;
    let within = times.iter().filter(|t| **t >= start && **t < end).count();
    #[allow(clippy::cast_precision_loss, reason = "a few hundred attempts")]
    let utilization = within as f64 / ((end - start) * PACED_PER_SEC);
    println!(
        "attempts {}, utilization {utilization:.3}, worst excess {excess:.2}; {done:?}",
        times.len()
    );
    assert!(
        utilization >= 0.95,
        "utilization {utilization:.3}; {done:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_run_admits_no_more_than_the_pace() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let mut redis = RedisServer::start();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi).rpm(RPM))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let hosts = four_hosts(&redis, &fake, dir.path(), 16_000).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let before = fake.attempts().len();
    redis.kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = fake.attempts().len() - before;
    redis.restart(); // empty: every quota's state is gone
    let done = finish(hosts).await;

    let times: Vec<f64> = fake.attempts().iter().map(seconds).collect();
    assert_eq!(fake.answered(429), 0, "the provider refused some: {done:?}");
    let excess = worst_excess(&times, 1.0 / PACED_PER_SEC);
    println!(
        "attempts {}, {during} while Redis was down, worst excess {excess:.2}; {done:?}",
        times.len()
    );
    // Hosts that fell back together start their local paces at random phases: at worst one
    // call from each host at once, never a burst beyond that.
    assert!(
        excess <= 3.0,
        "{excess:.1} attempts beyond the pace; {done:?}"
    );
    // The hosts went on, paced locally, while Redis was down.
    assert!(during >= 5, "only {during} attempts in 3 s without Redis");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_hosts_concurrency_slots_come_back_when_its_leases_expire() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let redis = RedisServer::start();
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .expect("fake");
    // The first two calls never get an answer: host A holds both slots until it dies.
    fake.script(CHAT, [Fault::Hang, Fault::Hang]);
    let dir = tempfile::tempdir().expect("dir");
    let limits = "requests_per_minute = 6000; concurrent_requests = 2";
    let fake_url = format!("http://{}", fake.addr());
    let (url, d, f) = (redis.url(), dir.path().to_owned(), fake_url.clone());
    let mut a = blocking(move || {
        let mut a = Host::start_at(&url, 2, "host-a", &f, &d, 2, 60_000, limits);
        a.line("ready");
        a
    })
    .await;
    while fake.attempts().len() < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (url, d) = (redis.url(), dir.path().to_owned());
    let b = blocking(move || {
        let mut b = Host::start_at(&url, 2, "host-b", &fake_url, &d, 2, 30_000, limits);
        b.line("ready");
        b
    })
    .await;
    // Host B waits: both slots are leased by host A, renewed while it lives.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(fake.attempts().len(), 2, "host B went past host A's leases");

    #[allow(clippy::disallowed_methods, reason = "a test's stopwatch")]
    let kill = tokio::time::Instant::now();
    blocking(move || a.kill()).await;
    while fake.attempts().len() < 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            kill.elapsed() < Duration::from_secs(10),
            "the slots never came back"
        );
    }
    let back = kill.elapsed();
    drop(b);
    println!("the slots came back {back:?} after the kill");
    // The leases last 1.5 s and are renewed every 0.5 s: they expire 1–1.5 s after death.
    assert!(
        back >= Duration::from_millis(900),
        "back after {back:?}: before the leases expired"
    );
    assert!(back <= Duration::from_millis(3_000), "back after {back:?}");
}
