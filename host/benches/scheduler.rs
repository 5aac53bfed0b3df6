//! Admission decisions per second: one `submit` and the `poll` that admits it (and the
//! `complete` that frees its grant), with 10, 1 000 and 100 000 tenants sharing one provider
//! credential, on a clock advanced by hand. Each iteration submits a batch of 1 000 requests
//! round-robin over the tenants, admits 1 000 and completes them; throughput is per decision.
//!
//! The fair queue is what grows with tenants, so it is measured full: before timing, 100 000
//! requests are queued evenly over the tenants (10 000 each for 10 tenants, one each for
//! 100 000) and the backlog stays at that size, so every tenant is a backlogged flow and
//! every admission chooses among all of them.
//!
//! - `steady`: the rate quotas (requests and tokens per minute) are far above what is sent,
//!   so the bucket checks always pass; the credential's concurrency limit is the batch size,
//!   so each `poll` admits exactly one batch, whatever is queued. This is the scheduler's own
//!   cost, the figure to hold against 500 000 decisions per second on one core.
//! - `saturated`: 600 requests per minute, no concurrency limit; the bucket is the bottleneck,
//!   so every admission is one `next_wake` → `poll` round trip (a scope timer fires, the lane
//!   wakes, admits one request and blocks again).
//!
//! - `steady-deadlines`: `steady` with 1 000 tenants, every request carrying a deadline an
//!   hour away: the cost of the nearest-deadline order (a second heap per class, and the
//!   check, at every turn, whether the nearest deadline must go ahead of the turn). Requests
//!   without a deadline, in the cases above, pay none of it.
//!
//! Requests name their route and tenant: `scheduler-resolve/route+tenant` is the lookup of an
//! existing route (credential and one named scope) and tenant that `Admission::submit` does
//! before each `submit`, and which the decisions above leave out.
//!
//! Heap bytes per scope and per queued request are measured by the `scheduler_memory` bench.
//!
//! Run: `cargo bench -p sluice --bench scheduler`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sluice::admission::{
    Ask, Class, Config, GrantId, Nanos, QueueEvent, Route, Scheduler, TenantId, Usage,
};

/// Requests submitted, admitted and completed per iteration.
const BATCH: usize = 1_000;
/// Requests kept queued, spread evenly over the tenants.
const BACKLOG: usize = 100_000;
const TENANTS: [usize; 3] = [10, 1_000, 100_000];
/// One request of 100 input and 100 output tokens.
const USAGE: Usage = Usage::tokens(100, 100);

/// Rate quotas that never bind (60 billion per minute, paced at 90%: one unit every 2 ns),
/// and a concurrency limit of one batch (`BATCH`).
const STEADY: &str = r#"
[queue]
max_queued = 1000000
max_queued_per_scope = 1000000

[providers.openai.limits]
requests_per_minute = 60000000000
tokens_per_minute = 60000000000
concurrent_requests = 1000
"#;

/// 600 requests per minute bind; the backlog waits hours (100 000 requests at 540 a minute:
/// about three), so the wait bound is the largest the configuration takes, a day.
const SATURATED: &str = r#"
[queue]
max_queued = 1000000
max_queued_per_scope = 1000000
max_wait_ms = 86400000

[providers.openai.limits]
requests_per_minute = 600
tokens_per_minute = 60000000000
"#;

/// A scheduler with `tenants` tenants, all resolved, and the backlog queued.
struct Rig {
    s: Scheduler,
    route: Route,
    tenants: Vec<TenantId>,
    /// The tenant the next submit goes to.
    next: usize,
    /// How far after its submission each request's deadline is, if it has one.
    deadline: Option<Nanos>,
    now: Nanos,
    events: Vec<QueueEvent>,
    grants: Vec<GrantId>,
}

impl Rig {
    fn new(config: &str, tenants: usize, deadline: Option<Nanos>) -> Self {
        let mut s = Scheduler::new(Config::from_toml(config).expect("a valid configuration"))
            .expect("a valid scheduler");
        let route = s.route("openai", "key-1", &[]);
        let tenants = (0..tenants)
            .map(|i| s.tenant(&format!("tenant-{i}")))
            .collect();
        let mut rig = Self {
            s,
            route,
            tenants,
            next: 0,
            deadline,
            now: 0,
            events: Vec::with_capacity(BATCH),
            grants: Vec::with_capacity(BATCH),
        };
        for _ in 0..BACKLOG {
            rig.submit();
        }
        rig
    }

    fn submit(&mut self) {
        let tenant = self.tenants[self.next];
        self.next = (self.next + 1) % self.tenants.len();
        let ask = Ask {
            route: self.route,
            tenant,
            class: Class::Standard,
            usage: USAGE,
            deadline: self.deadline.map(|d| self.now + d),
            task: None,
        };
        black_box(self.s.submit(self.now, ask)).expect("queued");
    }

    /// Polls at the current instant and completes what it admitted; returns how many.
    fn poll_and_complete(&mut self) -> usize {
        self.events.clear();
        self.s.poll(self.now, &mut self.events);
        self.grants.clear();
        self.grants.extend(self.events.iter().map(|e| match e {
            QueueEvent::Admitted { grant, .. } => *grant,
            QueueEvent::Expired { .. } => panic!("no deadline passes during a run"),
        }));
        for &g in &self.grants {
            self.s.complete(self.now, g, None);
        }
        self.grants.len()
    }

    /// One batch in `steady`: the concurrency limit lets exactly one batch through.
    fn steady(&mut self) {
        for _ in 0..BATCH {
            self.submit();
        }
        // A millisecond refills far more than a batch takes from the rate quotas.
        self.now += 1_000_000;
        let admitted = self.poll_and_complete();
        assert_eq!(admitted, BATCH, "the concurrency limit admits one batch");
    }

    /// One batch in `saturated`: the clock jumps from wake to wake until a batch is admitted.
    fn saturated(&mut self) {
        for _ in 0..BATCH {
            self.submit();
        }
        let mut admitted = self.poll_and_complete();
        while admitted < BATCH {
            let wake = self.s.next_wake().expect("a blocked lane arms a timer");
            self.now = self.now.max(wake);
            admitted += self.poll_and_complete();
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduler");
    group.throughput(Throughput::Elements(BATCH as u64));
    for tenants in TENANTS {
        let mut rig = Rig::new(STEADY, tenants, None);
        group.bench_with_input(BenchmarkId::new("steady", tenants), &tenants, |b, _| {
            b.iter(|| rig.steady());
        });
        assert_eq!(rig.s.queued() as usize, BACKLOG, "the backlog stays put");
    }
    let hour = 3_600_000_000_000;
    let mut rig = Rig::new(STEADY, 1_000, Some(hour));
    group.bench_with_input(
        BenchmarkId::new("steady-deadlines", 1_000),
        &1_000,
        |b, _| {
            b.iter(|| rig.steady());
        },
    );
    assert_eq!(rig.s.queued() as usize, BACKLOG, "the backlog stays put");
    for tenants in TENANTS {
        let mut rig = Rig::new(SATURATED, tenants, None);
        // Spend the burst first, so that every timed admission waits for the bucket.
        rig.saturated();
        group.bench_with_input(BenchmarkId::new("saturated", tenants), &tenants, |b, _| {
            b.iter(|| rig.saturated());
        });
        assert_eq!(rig.s.queued() as usize, BACKLOG, "one admission per wake");
    }
    group.finish();

    // What `Admission::submit` does before `submit`, for every request: resolve the route and
    // the tenant by name. Both exist already, so these are lookups.
    let mut group = c.benchmark_group("scheduler-resolve");
    group.throughput(Throughput::Elements(1));
    let mut s = Scheduler::new(Config::from_toml(STEADY).expect("a valid configuration"))
        .expect("a valid scheduler");
    let names: Vec<String> = (0..1_000).map(|i| format!("tenant-{i}")).collect();
    for name in &names {
        s.tenant(name);
    }
    s.route("openai", "key-1", &["gpt-4o"]);
    let mut i = 0;
    group.bench_function("route+tenant", |b| {
        b.iter(|| {
            i = (i + 1) % names.len();
            black_box(s.route(black_box("openai"), black_box("key-1"), &["gpt-4o"]));
            black_box(s.tenant(black_box(&names[i])));
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
