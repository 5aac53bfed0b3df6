//! Heap bytes the admission scheduler keeps: per idle scope, per route, per tenant and per
//! queued request, counted by a global allocator that wraps the system's.
//!
//! - *idle scope*: a credential's own scope of a provider configured with requests and
//!   tokens per minute and a concurrency limit, created by `scope_id` and never used;
//! - *route*: `route` for a new credential: its scope and the lane of requests that charge it;
//! - *tenant*: `tenant` for a new name, in a tier without quotas;
//! - *queued request*: requests submitted over 1 000 tenants, not yet admitted;
//! - *in-flight grant*: requests submitted over 1 000 tenants and admitted, not yet completed.
//!
//! The figure is the live heap after the calls minus before, divided by the count. Tables grow
//! by doubling, so the average depends on where the count falls between two growths: each
//! figure is given for 100 000 and for 200 000, with the difference between the two divided
//! by 100 000 (the cost of the second hundred thousand).
//!
//! Run: `cargo bench -p sluice --features internals --bench scheduler_memory` (without `--bench`, as `cargo test
//! --benches` runs it, a brief check at small counts)

use std::hint::black_box;
use std::mem::size_of;
use std::sync::Arc;

use sluice::admission::{Ask, Class, Config, QueueEvent, Scheduler, Scope, ScopeKey, Usage};

#[path = "support/counting.rs"]
mod counting;

use counting::live;

/// The provider's credential scope has three limits, none of which binds here; the queue
/// holds 200 000 requests.
const CONFIG: &str = r#"
[queue]
max_queued = 1000000
max_queued_per_scope = 1000000

[providers.openai.limits]
requests_per_minute = 60000000000
tokens_per_minute = 60000000000
concurrent_requests = 1000000
"#;

/// The counts each figure is measured at; a few, run without `--bench` (a brief check that
/// the bench still runs, as CI does).
fn counts() -> [usize; 2] {
    if std::env::args().any(|a| a == "--bench") {
        [100_000, 200_000]
    } else {
        [1_000, 2_000]
    }
}
/// The tenants queued and admitted requests are spread over.
const TENANTS: usize = 1_000;

fn scheduler() -> Scheduler {
    Scheduler::new(Config::from_toml(CONFIG).expect("a valid configuration"))
        .expect("a valid scheduler")
}

/// Live heap bytes that `count` calls of `add` keep, on a fresh scheduler.
fn grown(
    count: usize,
    prepare: impl Fn(&mut Scheduler),
    add: impl Fn(&mut Scheduler, usize),
) -> usize {
    let mut s = scheduler();
    prepare(&mut s);
    let before = live();
    for i in 0..count {
        add(&mut s, i);
    }
    let bytes = live() - before;
    black_box(&s);
    bytes
}

fn report(what: &str, prepare: impl Fn(&mut Scheduler), add: impl Fn(&mut Scheduler, usize)) {
    let [a, b] = counts().map(|n| (n, grown(n, &prepare, &add)));
    let per = |(n, bytes): (usize, usize)| bytes as f64 / n as f64;
    let delta = (b.1 as f64 - a.1 as f64) / (b.0 - a.0) as f64;
    println!(
        "{what:<16} {:>8.1} B each at {:>7}, {:>8.1} B each at {:>7}, {:>8.1} B each from {} to {}",
        per(a),
        a.0,
        per(b),
        b.0,
        delta,
        a.0,
        b.0
    );
}

fn main() {
    let provider: Arc<str> = "openai".into();
    report(
        "idle scope",
        |_| {},
        |s, i| {
            s.scope_id(&ScopeKey::Provider {
                provider: provider.clone(),
                credential: format!("key-{i}").into(),
                name: None,
            });
        },
    );
    report(
        "route",
        |_| {},
        |s, i| {
            s.route("openai", &format!("key-{i}"), &[]);
        },
    );
    report(
        "tenant",
        |_| {},
        |s, i| {
            s.tenant(&format!("tenant-{i}"));
        },
    );
    // The route and every tenant exist before counting: only requests and grants are added.
    let resolved = |s: &mut Scheduler| {
        s.route("openai", "key-1", &[]);
        for t in 0..TENANTS {
            s.tenant(&format!("tenant-{t}"));
        }
    };
    let queued = |s: &mut Scheduler, i: usize| {
        let route = s.route("openai", "key-1", &[]);
        let tenant = s.tenant(&format!("tenant-{}", i % TENANTS));
        let ask = Ask {
            route,
            tenant,
            class: Class::Standard,
            usage: Usage::tokens(100, 100),
            deadline: None,
            task: None,
        };
        s.submit(0, ask).expect("queued");
    };
    report("queued request", resolved, queued);
    report("in-flight grant", resolved, |s, i| {
        queued(s, i);
        let mut events = Vec::new();
        s.poll(0, &mut events);
        assert!(
            matches!(events[..], [QueueEvent::Admitted { .. }]),
            "admitted at once"
        );
    });
    println!(
        "size_of: Scope {} B, ScopeKey {} B, Usage {} B",
        size_of::<Scope>(),
        size_of::<ScopeKey>(),
        size_of::<Usage>()
    );
}
