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
//! The `load-request` group times the same two calls on what the real binary's load
//! (`cli/benches/added_latency`) sends and gets back — its chat completion, and the fake
//! provider's answer to it — so that the sidecar's figures for them compare like with like.
//!
//! `PLUGIN_CALL_BASELINE=path/to/openai.wasm` also times another build of the OpenAI plugin
//! (an earlier commit's, another allocator's) in the `load-request` group, as
//! `baseline-warm`, beside the bundled one in the same run.
//!
//! Run: `cargo bench -p sluice --features internals,bundled --bench plugin_call`

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use sluice::contract::{
    ProviderPolicy, Request, RequestClass, Response, ResponsePart, WireOutcome,
};
use sluice::headers::encode_fields;
use sluice::plugin::{ComponentCache, Contract, Plugin, PluginRuntime, RuntimeConfig};
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_plugin_ietf::Ietf;
use sluice_plugin_openai::OpenAi;

/// The header count the figures are for.
const HEADERS: usize = 20;

const BODY: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

/// The request body of the earlier two-call bench, so the figures compare.
const REQUEST_BODY: &[u8] = br#"{"model":"gpt-4o","max_tokens":100}"#;

/// The chat completion the added-latency load sends (`cli/benches/added_latency/load.rs`).
const LOAD_BODY: &[u8] = br#"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one word."}],"max_tokens":16,"temperature":0}"#;

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

fn host_request(body: &[u8]) -> Request {
    Request::new(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        RequestClass::Read,
        "content-type:application/json\n".into(),
        body.to_vec(),
        1_795_953_600_000,
    )
}

fn guest_request(body: &[u8]) -> sluice_plugin_sdk::Request {
    let mut req = sluice_plugin_sdk::test::request(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        &[("content-type", "application/json")],
        body,
    );
    req.now_ms = 1_795_953_600_000;
    req
}

fn host_case(n: usize) -> (Request, WireOutcome) {
    let resp = Response {
        status: 429,
        headers: headers(n),
        body: BODY.as_bytes().to_vec(),
    };
    (host_request(REQUEST_BODY), WireOutcome::Response(resp))
}

fn guest_case(n: usize) -> (sluice_plugin_sdk::Request, sluice_plugin_sdk::Outcome) {
    let resp = sluice_plugin_sdk::Response {
        status: 429,
        headers: headers(n),
        body: BODY.as_bytes().to_vec(),
    };
    (
        guest_request(REQUEST_BODY),
        sluice_plugin_sdk::Outcome::Response(resp),
    )
}

/// The fake OpenAI-style provider's answer to [`LOAD_BODY`], as the added-latency load's
/// upstream gives it (limits far above the load): asked of a fake on loopback.
fn fake_answer() -> Response {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
            .await
            .expect("the fake provider");
        let r = reqwest::Client::new()
            .post(fake.url("/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(LOAD_BODY)
            .send()
            .await
            .expect("the fake's answer");
        let status = r.status().as_u16();
        let headers = encode_fields(
            r.headers()
                .iter()
                .map(|(n, v)| (n.as_str(), v.to_str().expect("a text header"))),
        )
        .expect("valid headers");
        let body = r.bytes().await.expect("the answer's body").to_vec();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        Response {
            status,
            headers,
            body,
        }
    })
}

/// The added-latency load's request and the fake's answer to it, for the host and for the
/// plugin's logic called natively.
fn load_case() -> (
    (Request, WireOutcome),
    (sluice_plugin_sdk::Request, sluice_plugin_sdk::Outcome),
) {
    let answer = fake_answer();
    let guest = sluice_plugin_sdk::Response {
        status: answer.status,
        headers: answer.headers.clone(),
        body: answer.body.clone(),
    };
    (
        (host_request(LOAD_BODY), WireOutcome::Response(answer)),
        (
            guest_request(LOAD_BODY),
            sluice_plugin_sdk::Outcome::Response(guest),
        ),
    )
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
    assert_eq!(warm.contract(), Contract::V0_5);
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
    plan_native(&mut group, "native", &guest.0);
    group.bench_function("plugin-warm", |b| {
        b.iter(|| warm.plan_request(black_box(&host.0)).expect("plan-request"));
    });
    group.finish();

    // The real binary's load: its chat completion, planned, and the fake's 200 to it, read.
    let (load_host, load_guest) = load_case();
    let reading = warm
        .read_response(&load_host.0, &load_host.1, ResponsePart::Complete)
        .expect("the load's read-response");
    assert!(
        !reading.usage.is_empty(),
        "the fake's answer reports its usage"
    );
    let mut group = c.benchmark_group("load-request");
    plan_native(&mut group, "plan-request/native", &load_guest.0);
    group.bench_function("read-response/native", |b| {
        b.iter(|| {
            <OpenAi as sluice_plugin_sdk::Plugin>::read_response(
                black_box(&load_guest.0),
                black_box(&load_guest.1),
                sluice_plugin_sdk::ResponsePart::Complete,
            )
            .expect("read-response")
        });
    });
    let mut flush = Flush::new();
    warm_load(&mut group, "plugin-warm", &warm, &load_host, &mut flush);
    // Another build of the OpenAI plugin, timed beside the bundled one in the same run.
    if let Some(path) = std::env::var_os("PLUGIN_CALL_BASELINE") {
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("PLUGIN_CALL_BASELINE {}: {e}", path.to_string_lossy()));
        let baseline = warm_rt
            .load(&path.to_string_lossy(), &bytes)
            .expect("PLUGIN_CALL_BASELINE is an OpenAI plugin component");
        warm_load(
            &mut group,
            "baseline-warm",
            &baseline,
            &load_host,
            &mut flush,
        );
    }
    group.finish();
}

/// Times `plan-request` and `read-response` of the load's request through `plugin` as
/// `{call}/{label}`: in a hot loop, and after the caches were flushed before each call.
fn warm_load(
    group: &mut Group<'_>,
    label: &str,
    plugin: &Plugin,
    (req, outcome): &(Request, WireOutcome),
    flush: &mut Flush,
) {
    group.bench_function(format!("plan-request/{label}"), |b| {
        b.iter(|| plugin.plan_request(black_box(req)).expect("plan-request"));
    });
    group.bench_function(format!("read-response/{label}"), |b| {
        b.iter(|| {
            plugin
                .read_response(black_box(req), black_box(outcome), ResponsePart::Complete)
                .expect("read-response")
        });
    });
    // In the server a call does not find the caches as the last call left them: the
    // connection's parsing, the kernel's socket work and the other requests run in between.
    // The same calls, each after the caches' data was flushed (not timed).
    group.bench_function(format!("plan-request/{label}, caches flushed"), |b| {
        b.iter_batched(
            || flush.run(),
            |()| plugin.plan_request(black_box(req)).expect("plan-request"),
            BatchSize::PerIteration,
        );
    });
    group.bench_function(format!("read-response/{label}, caches flushed"), |b| {
        b.iter_batched(
            || flush.run(),
            |()| {
                plugin
                    .read_response(black_box(req), black_box(outcome), ResponsePart::Complete)
                    .expect("read-response")
            },
            BatchSize::PerIteration,
        );
    });
}

/// Writes and reads a buffer larger than a core's own caches (L1 and L2 together are about
/// 1 MiB on these machines), so what a call touches next is fetched again from the shared
/// cache or from memory.
struct Flush(Vec<u64>);

impl Flush {
    const BYTES: usize = 8 << 20;

    fn new() -> Self {
        Self(vec![0; Self::BYTES / 8])
    }

    fn run(&mut self) {
        // One word per 64-byte line is enough to take the line.
        let mut sum = 0u64;
        for word in self.0.iter_mut().step_by(8) {
            *word = word.wrapping_add(1);
            sum = sum.wrapping_add(*word);
        }
        black_box(sum);
    }
}

/// Times the OpenAI plugin's `plan-request` of `guest` called natively, as `name`.
fn plan_native(group: &mut Group<'_>, name: &str, guest: &sluice_plugin_sdk::Request) {
    group.bench_function(name, |b| {
        b.iter(|| {
            <OpenAi as sluice_plugin_sdk::Plugin>::plan_request(black_box(guest))
                .expect("plan-request")
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
