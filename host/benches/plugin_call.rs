//! One `classify` + `parse-quota` through the OpenAI plugin, against the same logic compiled
//! natively, for responses with 5, 20 and 50 headers; with a warm instance and with a fresh
//! instance per call. The `ietf` pair does the same with the generic plugin, whose logic is
//! lighter: the gap between its plugin and native figures is mostly the cost of crossing
//! into the sandbox.
//!
//! Run: `cargo bench -p sluice --bench plugin_call`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sluice::plugin::{ComponentCache, Plugin, PluginRuntime, RuntimeConfig};
use sluice::policy::{Outcome, Request, RequestClass, Response, encode_fields};
use sluice_plugin_ietf::Ietf;
use sluice_plugin_openai::OpenAi;

const BODY: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

/// A 429 with OpenAI's quota headers first, then ordinary headers up to `n`.
fn headers(n: usize) -> Vec<(String, String)> {
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
    h
}

fn block(pairs: &[(String, String)]) -> String {
    encode_fields(pairs.iter().map(|(a, b)| (a.as_str(), b.as_str()))).expect("valid headers")
}

fn host_case(n: usize) -> (Request, Outcome) {
    let req = Request {
        method: "POST".into(),
        url: "https://api.openai.com/v1/chat/completions".into(),
        class: RequestClass::Read,
        headers: "content-type:application/json\n".into(),
        body: br#"{"model":"gpt-4o","max_tokens":100}"#.to_vec(),
        now_ms: 1_795_953_600_000,
    };
    let resp = Response {
        status: 429,
        headers: block(&headers(n)),
        body: BODY.as_bytes().to_vec(),
    };
    (req, Outcome::Response(resp))
}

fn guest_case(n: usize) -> (sluice_plugin_sdk::Request, sluice_plugin_sdk::Response) {
    use sluice_plugin_sdk as g;
    let req = g::Request {
        method: "POST".into(),
        url: "https://api.openai.com/v1/chat/completions".into(),
        class: g::RequestClass::Read,
        headers: "content-type:application/json\n".into(),
        body: br#"{"model":"gpt-4o","max_tokens":100}"#.to_vec(),
        now_ms: 1_795_953_600_000,
    };
    let resp = g::Response {
        status: 429,
        headers: block(&headers(n)),
        body: BODY.as_bytes().to_vec(),
    };
    (req, resp)
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Times `P`'s logic called natively.
fn native<P: sluice_plugin_sdk::Plugin>(
    group: &mut Group<'_>,
    name: &str,
    n: usize,
    (req, resp): (&sluice_plugin_sdk::Request, &sluice_plugin_sdk::Response),
) {
    let out = sluice_plugin_sdk::Outcome::Response(resp.clone());
    group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
        b.iter(|| {
            let c = P::classify(black_box(req), black_box(&out)).expect("classify");
            let q = P::parse_quota(black_box(req), black_box(resp)).expect("parse-quota");
            black_box((c, q))
        });
    });
}

/// Times the same through a loaded plugin.
fn plugin(
    group: &mut Group<'_>,
    name: &str,
    n: usize,
    plugin: &Plugin,
    (req, outcome, resp): (&Request, &Outcome, &Response),
) {
    group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
        b.iter(|| {
            let c = plugin
                .classify(black_box(req), black_box(outcome))
                .expect("classify");
            let q = plugin
                .parse_quota(black_box(req), black_box(resp))
                .expect("parse-quota");
            black_box((c, q))
        });
    });
}

fn bench(c: &mut Criterion) {
    let warm_rt = PluginRuntime::new(RuntimeConfig::default(), ComponentCache::user_default())
        .expect("runtime");
    let warm = warm_rt.load_bundled("openai").expect("openai plugin");
    let fresh_rt = PluginRuntime::new(
        RuntimeConfig {
            reuse_instances: false,
            ..RuntimeConfig::default()
        },
        ComponentCache::user_default(),
    )
    .expect("runtime");
    let fresh = fresh_rt.load_bundled("openai").expect("openai plugin");
    let ietf = warm_rt.load_bundled("ietf").expect("ietf plugin");

    let mut group = c.benchmark_group("classify+parse-quota");
    for n in [5usize, 20, 50] {
        let (req, outcome) = host_case(n);
        let Outcome::Response(resp) = &outcome else {
            unreachable!()
        };
        // Same answers from both before timing anything.
        let (greq, gresp) = guest_case(n);
        let native_verdict = <OpenAi as sluice_plugin_sdk::Plugin>::classify(
            &greq,
            &sluice_plugin_sdk::Outcome::Response(gresp.clone()),
        )
        .expect("native classify")
        .retry_after_ms;
        assert_eq!(
            warm.classify(&req, &outcome)
                .expect("plugin classify")
                .retry_after_ms,
            native_verdict
        );

        let guest = (&greq, &gresp);
        let host = (&req, &outcome, resp);
        native::<OpenAi>(&mut group, "native", n, guest);
        plugin(&mut group, "plugin-warm", n, &warm, host);
        native::<Ietf>(&mut group, "ietf-native", n, guest);
        plugin(&mut group, "ietf-plugin-warm", n, &ietf, host);
        plugin(&mut group, "plugin-instance-per-call", n, &fresh, host);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
