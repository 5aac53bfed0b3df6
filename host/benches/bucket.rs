//! One bucket check: sluice's GCRA bucket against `governor`'s direct rate limiter on the same
//! quota (600 per minute paced at 90%: one unit every 111 ms, a burst of 61), in the same run,
//! both on a clock advanced by hand.
//!
//! - `admit`: the clock moves one interval per check, so every check is admitted;
//! - `deny`: the clock stands still after the burst, so every check is denied.
//!
//! Run: `cargo bench -p sluice --bench bucket`

use std::hint::black_box;
use std::num::{NonZeroU32, NonZeroU64};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter};
use sluice::admission::Bucket;

fn bench(c: &mut Criterion) {
    let ours = Bucket::new(
        NonZeroU64::new(600).expect("nonzero"),
        Duration::from_secs(60),
        0.9,
    )
    .expect("a valid quota");
    let interval = ours.interval();
    let burst = u32::try_from(ours.capacity()).expect("small burst");
    let quota = Quota::with_period(Duration::from_nanos(interval))
        .expect("nonzero period")
        .allow_burst(NonZeroU32::new(burst).expect("nonzero"));

    let mut group = c.benchmark_group("bucket-check");
    {
        let mut b = ours.clone();
        let mut now = 0;
        group.bench_function("sluice/admit", |bench| {
            bench.iter(|| {
                now += interval;
                black_box(b.check(black_box(now), 1)).expect("paced checks are admitted");
            });
        });
    }
    {
        let clock = FakeRelativeClock::default();
        let limiter = RateLimiter::direct_with_clock(quota, clock.clone());
        let step = Duration::from_nanos(interval);
        group.bench_function("governor/admit", |bench| {
            bench.iter(|| {
                clock.advance(step);
                black_box(limiter.check()).expect("paced checks are admitted");
            });
        });
    }
    {
        let mut b = ours.clone();
        while b.check(0, 1).is_ok() {}
        group.bench_function("sluice/deny", |bench| {
            bench.iter(|| black_box(b.check(black_box(0), 1)).expect_err("saturated"));
        });
    }
    {
        let clock = FakeRelativeClock::default();
        let limiter = RateLimiter::direct_with_clock(quota, clock);
        while limiter.check().is_ok() {}
        group.bench_function("governor/deny", |bench| {
            bench.iter(|| black_box(limiter.check()).expect_err("saturated"));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
