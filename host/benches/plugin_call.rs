//! The plugin calls of one attempt and of one request, warm, through the OpenAI plugin,
//! beside the same logic compiled natively.
//!
//! - `read-response`: what the host calls once per attempt — the classification, the quota
//!   observations and the usage of an OpenAI 429 with 20 headers (quota headers,
//!   `retry-after`, a JSON error body, filler headers), in one crossing.
//! - `plan-request`: what the host calls once per request before queueing.
//!
//! Each has `native` (the plugin's logic called directly), `plugin-warm` (through the
//! sandboxed component with a warm instance: lowering the inputs, the call, lifting and
//! checking the answer's caps) and `plugin-instance-per-call` (a fresh instance every call).
//! The `ietf` pair does the same with the generic plugin, whose logic is lighter: the gap
//! between its plugin and native figures is mostly the cost of one crossing.
//!
//! Run: `cargo bench -p sluice --bench plugin_call`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sluice::contract::{
    ProviderPolicy, Request, RequestClass, Response, ResponsePart, WireOutcome,
};
use sluice::headers::encode_fields;
use sluice::plugin::{ComponentCache, Contract, Plugin, PluginRuntime, RuntimeConfig};
use sluice_plugin_ietf::Ietf;
use sluice_plugin_openai::OpenAi;

/// The header count the figures are for.
const HEADERS: usize = 20;

const BODY: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

/// The request body of the earlier two-call bench, so the figures compare.
const REQUEST_BODY: &[u8] = br#"{"model":"gpt-4o","max_tokens":100}"#;

/// A 429 with OpenAI's quota headers first, then ordinary headers up to `n`.
fn headers(n: usize) -> String {
    let mut h: Vec<(String, String)> = [
        ("x-ratelimit-limit-requests", "500"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", "120ms"),
        ("x-ratelimit-limit-tokens", "30000"),
        ("retry-after", "1"),
        ("x-ratelimit-remaining-tokens", "29000"),
        ("x-ratelimit-reset-tokens", "2m59.56s"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    h.truncate(n);
    let mut i = 0;
    while h.len() < n {
        h.push((
            format!("x-filler-{i}"),
            format!("value-{i}-abcdefghijklmnop"),
        ));
        i += 1;
    }
    encode_fields(h.iter().map(|(a, b)| (a.as_str(), b.as_str()))).expect("valid headers")
}

fn host_case(n: usize) -> (Request, WireOutcome) {
    let req = Request::new(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        RequestClass::Read,
        "content-type:application/json\n".into(),
        REQUEST_BODY.to_vec(),
        1_795_953_600_000,
    );
    let resp = Response {
        status: 429,
        headers: headers(n),
        body: BODY.as_bytes().to_vec(),
    };
    (req, WireOutcome::Response(resp))
}

fn guest_case(n: usize) -> (sluice_plugin_sdk::Request, sluice_plugin_sdk::Outcome) {
    use sluice_plugin_sdk as g;
    let mut req = g::test::request(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        &[("content-type", "application/json")],
        REQUEST_BODY,
    );
    req.now_ms = 1_795_953_600_000;
    let resp = g::Response {
        status: 429,
        headers: headers(n),
        body: BODY.as_bytes().to_vec(),
    };
    (req, g::Outcome::Response(resp))
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Times `P`'s `read-response` called natively.
fn native_read<P: sluice_plugin_sdk::Plugin>(
    group: &mut Group<'_>,
    name: &str,
    (req, outcome): &(sluice_plugin_sdk::Request, sluice_plugin_sdk::Outcome),
) {
    group.bench_with_input(BenchmarkId::new(name, HEADERS), &HEADERS, |b, _| {
        b.iter(|| {
            P::read_response(
                black_box(req),
                black_box(outcome),
                sluice_plugin_sdk::ResponsePart::Complete,
            )
            .expect("read-response")
        });
    });
}

/// Times `read-response` through a loaded plugin.
fn plugin_read(
    group: &mut Group<'_>,
    name: &str,
    plugin: &Plugin,
    (req, outcome): &(Request, WireOutcome),
) {
    group.bench_with_input(BenchmarkId::new(name, HEADERS), &HEADERS, |b, _| {
        b.iter(|| {
            plugin
                .read_response(black_box(req), black_box(outcome), ResponsePart::Complete)
                .expect("read-response")
        });
    });
}

fn bench(c: &mut Criterion) {
    let warm_rt = PluginRuntime::new(RuntimeConfig::default(), ComponentCache::user_default())
        .expect("runtime");
    let warm = warm_rt.load_bundled("openai").expect("openai plugin");
    let ietf = warm_rt.load_bundled("ietf").expect("ietf plugin");
    let fresh_rt = PluginRuntime::new(
        RuntimeConfig {
            reuse_instances: false,
            ..RuntimeConfig::default()
        },
        ComponentCache::user_default(),
    )
    .expect("runtime");
    let fresh = fresh_rt.load_bundled("openai").expect("openai plugin");

    // The current contract, one crossing per reading (a 0.1.0 plugin would take two).
    assert_eq!(warm.contract(), Contract::V0_3);
    let host = host_case(HEADERS);
    let guest = guest_case(HEADERS);
    // Same answers from both before timing anything.
    let native_reading = <OpenAi as sluice_plugin_sdk::Plugin>::read_response(
        &guest.0,
        &guest.1,
        sluice_plugin_sdk::ResponsePart::Complete,
    )
    .expect("native read-response");
    let plugin_reading = warm
        .read_response(&host.0, &host.1, ResponsePart::Complete)
        .expect("plugin read-response");
    assert_eq!(
        plugin_reading.classification.retry_after_ms,
        native_reading.classification.retry_after_ms
    );
    assert_eq!(
        plugin_reading.observations.len(),
        native_reading.observations.len()
    );
    assert_eq!(plugin_reading.observations.len(), 2);

    let mut group = c.benchmark_group("read-response");
    native_read::<OpenAi>(&mut group, "native", &guest);
    plugin_read(&mut group, "plugin-warm", &warm, &host);
    native_read::<Ietf>(&mut group, "ietf-native", &guest);
    plugin_read(&mut group, "ietf-plugin-warm", &ietf, &host);
    plugin_read(&mut group, "plugin-instance-per-call", &fresh, &host);
    group.finish();

    let mut group = c.benchmark_group("plan-request");
    group.bench_function("native", |b| {
        b.iter(|| {
            <OpenAi as sluice_plugin_sdk::Plugin>::plan_request(black_box(&guest.0))
                .expect("plan-request")
        });
    });
    group.bench_function("plugin-warm", |b| {
        b.iter(|| warm.plan_request(black_box(&host.0)).expect("plan-request"));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
