//! Use through a Redis restart: four hosts keep an Anthropic-style account's output-token
//! limit busy while Redis is killed and comes back empty. They pace locally while it is
//! away (with each charge still corrected to its usage), take the store's pace again as soon
//! as it answers, and the provider refuses nothing.

use std::time::Duration;

use sluice_tests::restart_workload::{GroupRun, WINDOW, through_a_group};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hosts_use_the_limit_through_a_redis_restart_without_429s() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let restart_at = Duration::from_secs(10);
    let f = through_a_group(GroupRun {
        duration: Duration::from_secs(40),
        restart: Some((restart_at, Duration::from_secs(3))),
        ..GroupRun::default()
    })
    .await;
    println!("{f:?}; windows {}", f.windows_shown());
    assert_eq!(f.limited, 0, "the provider refused some: {f:?}");
    assert!(f.utilization <= 1.0, "never above the limit: {f:?}");
    // The 20 s from Redis's loss: a call waiting on local pacing asks again within 250 ms,
    // so the hosts go on at the store's pace once it answers, having lost about the time
    // Redis was away and one request's pace (measured: 70% of the limit over these 20 s).
    // A local wait of many seconds, kept after the store came back, left about 45–55%.
    let i = usize::try_from(restart_at.as_secs() / WINDOW.as_secs()).expect("a small index");
    let through = (f.windows[i] + f.windows[i + 1]) / 2.0;
    assert!(through >= 0.6, "{through}: {f:?}");
    // Over the run: a fresh store's first calls wait for its pace too (an empty burst).
    assert!(f.utilization >= 0.7, "{f:?}");
}
