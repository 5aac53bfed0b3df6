//! The metrics one governed call records, under the recorder the sidecar serves
//! (Prometheus, installed globally): looked up by the macros with owned labels at each call,
//! as the host did, against kept handles ([`sluice::observe::Handles`]), in the same run.
//!
//! One iteration is one call's series: admitted (provider, credential, tenant), the
//! admission wait (provider), the attempt (provider, status class), the end (provider,
//! outcome), and the two plugin calls (plugin, function); 50 tenants take turns, as agents
//! of a sidecar would.
//!
//! Run: `cargo bench -p sluice --features internals --bench metric_handles`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use metrics::{Counter, Histogram};
use sluice::observe::{self, Handles};

const PROVIDER: &str = "openai";
const CREDENTIAL: &str = "team-key";

fn bench(c: &mut Criterion) {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder of this process");
    // As the sidecar does: histogram samples drained into their buckets every few seconds
    // (here every 100 ms), so that they do not pile up over the run.
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            recorder.run_upkeep();
        }
    });
    let tenants: Vec<String> = (0..50).map(|i| format!("tenant-{i}")).collect();
    // A call's provider, as the call holds it.
    let provider = PROVIDER.to_owned();
    let mut group = c.benchmark_group("one-call's-metrics");

    let mut turn = 0;
    group.bench_function("macros", |b| {
        b.iter(|| {
            turn = (turn + 1) % tenants.len();
            let (provider, tenant) = (black_box(&provider), &tenants[turn]);
            metrics::counter!(
                observe::CALLS_ADMITTED,
                "provider" => provider.clone(),
                "credential" => CREDENTIAL.to_owned(),
                "tenant" => tenant.clone(),
            )
            .increment(1);
            metrics::histogram!(observe::ADMISSION_WAIT, "provider" => provider.clone())
                .record(0.0);
            metrics::counter!(observe::ATTEMPTS, "provider" => provider.clone(), "status" => "2xx")
                .increment(1);
            for function in ["plan-request", "read-response"] {
                metrics::histogram!(
                    observe::PLUGIN_CALL,
                    "plugin" => provider.clone(),
                    "function" => function,
                )
                .record(0.000_01);
            }
            metrics::counter!(
                observe::CALLS_ENDED,
                "provider" => provider.clone(),
                "outcome" => "succeeded",
            )
            .increment(1);
        });
    });

    let admitted = Handles::<Counter, 3>::new(
        observe::CALLS_ADMITTED,
        ["provider", "credential", "tenant"],
    );
    let waited = Handles::<Histogram, 1>::new(observe::ADMISSION_WAIT, ["provider"]);
    let attempts = Handles::<Counter, 2>::new(observe::ATTEMPTS, ["provider", "status"]);
    let plugin = Handles::<Histogram, 2>::new(observe::PLUGIN_CALL, ["plugin", "function"]);
    let ended = Handles::<Counter, 2>::new(observe::CALLS_ENDED, ["provider", "outcome"]);
    group.bench_function("kept-handles", |b| {
        b.iter(|| {
            turn = (turn + 1) % tenants.len();
            let (provider, tenant) = (black_box(&provider), &tenants[turn]);
            admitted.get([provider, CREDENTIAL, tenant]).increment(1);
            waited.get([provider]).record(0.0);
            attempts.get([provider, "2xx"]).increment(1);
            for function in ["plan-request", "read-response"] {
                plugin.get([provider, function]).record(0.000_01);
            }
            ended.get([provider, "succeeded"]).increment(1);
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
