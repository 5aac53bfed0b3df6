//! Which of a request's headers carry credentials ([`sluice::headers::is_credential`]),
//! asked of every header of every request more than once: the names the official OpenAI
//! Python SDK sends with a chat completion, checked by sluice's one-pass scan and, in the
//! same run, by the plain way (each credential word compared at every position of the name).
//!
//! Run: `cargo bench -p sluice --features internals --bench credential_headers`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use sluice::headers::{CREDENTIAL_HEADERS, is_credential};

/// The header names of a chat completion as the OpenAI Python SDK sends it.
const SDK_HEADERS: &[&str] = &[
    "host",
    "accept-encoding",
    "connection",
    "accept",
    "content-type",
    "user-agent",
    "x-stainless-lang",
    "x-stainless-package-version",
    "x-stainless-os",
    "x-stainless-arch",
    "x-stainless-runtime",
    "x-stainless-runtime-version",
    "authorization",
    "x-stainless-async",
    "x-stainless-retry-count",
    "x-stainless-read-timeout",
    "content-length",
];

/// The words [`is_credential`] looks for, as its documentation lists them.
const WORDS: &[&str] = &["token", "secret", "password", "apikey", "api-key", "x-auth"];

/// A way to tell a credential header by its name.
type Check = fn(&str) -> bool;

/// The plain way: the known names, then each word compared at every position.
fn compared_everywhere(name: &str) -> bool {
    CREDENTIAL_HEADERS
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name))
        || WORDS.iter().any(|w| {
            name.as_bytes()
                .windows(w.len())
                .any(|part| part.eq_ignore_ascii_case(w.as_bytes()))
        })
}

fn bench(c: &mut Criterion) {
    for name in SDK_HEADERS {
        assert_eq!(is_credential(name), compared_everywhere(name), "{name}");
    }
    let mut group = c.benchmark_group("an-sdk-request's-17-headers");
    let checks: [(&str, Check); 2] = [
        ("one-pass", is_credential),
        ("compared-everywhere", compared_everywhere),
    ];
    for (name, check) in checks {
        group.bench_function(name, |b| {
            b.iter(|| SDK_HEADERS.iter().filter(|n| check(black_box(n))).count());
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
