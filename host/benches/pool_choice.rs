//! The cost of choosing a pool's member for a call: `Scheduler::choose` for pools of 2, 10
//! and 100 members, beside `Scheduler::route` (the lookup a call with one credential makes
//! instead), on a clock advanced by hand.
//!
//! Each member has its own limits (a second's pace apart), a model scope the call charges,
//! and some of its quota used, so every choice weighs every member's quotas, holds and
//! concurrency: the choice the executor makes before each attempt of a pool's read. The
//! members' routes are made once and kept (the first choice makes them), as in a host.
//!
//! Run: `cargo bench -p sluice --features internals --bench pool_choice`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sluice::admission::{Ask, Class, Config, PoolAsk, QueueEvent, Scheduler, Usage};

const SIZES: [usize; 3] = [2, 10, 100];
const USAGE: Usage = Usage::tokens(1_000, 200);

/// A provider with a pool `all` of `members` credentials, each with its own limits.
fn config(members: usize) -> Config {
    let mut text = String::from(
        "[providers.openai.limits]\nrequests_per_minute = 600\ntokens_per_minute = 200000\n\
         [providers.openai.models.gpt-4o]\ntokens_per_minute = 150000\n",
    );
    let labels: Vec<String> = (0..members).map(|i| format!("\"k{i}\"")).collect();
    for i in 0..members {
        text.push_str(&format!(
            "[providers.openai.credentials.k{i}.limits]\nrequests_per_minute = {}\n\
             tokens_per_minute = {}\nconcurrent_requests = 50\n",
            600 + 60 * i,
            200_000 + 1_000 * i
        ));
    }
    text.push_str(&format!(
        "[providers.openai.pools.all]\nmembers = [{}]\n",
        labels.join(", ")
    ));
    Config::from_toml(&text).expect("the bench's configuration")
}

/// A scheduler whose every member has taken a few calls at time 0.
fn scheduler(members: usize) -> Scheduler {
    let mut s = Scheduler::new(config(members)).expect("a scheduler");
    let tenant = s.tenant("acme");
    let mut events = Vec::new();
    for i in 0..members {
        let route = s.route("openai", &format!("k{i}"), &["model:gpt-4o"]);
        for _ in 0..(i % 4) {
            let ask = Ask {
                route,
                tenant,
                class: Class::Standard,
                usage: USAGE,
                deadline: None,
                task: None,
            };
            s.submit(0, ask).expect("queued");
        }
    }
    s.poll(0, &mut events);
    for e in events {
        if let QueueEvent::Admitted { grant, .. } = e {
            s.complete(0, grant, None);
        }
    }
    s
}

fn choose(c: &mut Criterion) {
    let mut group = c.benchmark_group("pool-choice");
    for members in SIZES {
        let mut s = scheduler(members);
        let tenant = s.tenant("acme");
        let names = ["model:gpt-4o"];
        let mut now = 1_000_000_000;
        group.bench_with_input(BenchmarkId::new("choose", members), &members, |b, _| {
            b.iter(|| {
                now += 1_000;
                let ask = PoolAsk {
                    provider: "openai",
                    pool: "all",
                    names: &names,
                    tenant,
                    usage: &USAGE,
                    avoid: &[],
                };
                black_box(s.choose(black_box(now), &ask))
            });
        });
    }
    let mut s = scheduler(2);
    group.bench_function("route/one-credential", |b| {
        b.iter(|| black_box(s.route("openai", black_box("k1"), &["model:gpt-4o"])));
    });
    group.finish();
}

criterion_group!(benches, choose);
criterion_main!(benches);
