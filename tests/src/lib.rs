//! Shared support for sluice's end-to-end tests: a plugin runtime with a test cache, the
//! test fixtures (the hostile plugin, the plugin built against the frozen contract 0.1.0,
//! the two generations of the relay plugin), request builders, a whole host ([`stack`]),
//! seeded kill -9 runs of a host process ([`crash_run`]) and of a host of a group
//! ([`group_run`]), a counting proxy ([`proxy`]), a real `redis-server` ([`redis_server`]),
//! a schema of the test PostgreSQL ([`postgres`]), the store loss of the damage soak
//! ([`store_loss`]), the usage-correction workload ([`usage_workload`]) and the same on a
//! group of hosts through a Redis restart ([`restart_workload`]), and the certificates of
//! the tests that reach those services over TLS ([`pki`]).

pub mod crash_run;
pub mod damage;
pub mod group_run;
pub mod log_capture;
pub mod pki;
pub mod postgres;
pub mod proxy;
pub mod redis_server;
pub mod restart_workload;
pub mod sigv4_suite;
pub mod stack;
pub mod store_loss;
pub mod usage_workload;
pub mod write_sim;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice::contract::{Request, RequestClass, Response, WireOutcome};
use sluice::headers::encode_fields;
use sluice::plugin::{ComponentCache, Plugin, PluginRuntime, RuntimeConfig};

/// The hostile fixture's component, built by `build.rs`.
pub const HOSTILE_WASM: &str = env!("SLUICE_HOSTILE_WASM");

/// The component of the fixture built against the frozen `sluice:policy@0.1.0`, built by
/// `build.rs`.
pub const LEGACY_WASM: &str = env!("SLUICE_LEGACY_WASM");

/// The component of the fixture built against the frozen `sluice:policy@0.2.0`, built by
/// `build.rs`.
pub const LEGACY_V2_WASM: &str = env!("SLUICE_LEGACY_V2_WASM");

/// The plugin built against the frozen contract 0.3.0 (`plugins/fixtures/v3`).
pub const LEGACY_V3_WASM: &str = env!("SLUICE_LEGACY_V3_WASM");

/// The plugin built against the frozen contract 0.4.0 (`plugins/fixtures/v4`).
pub const LEGACY_V4_WASM: &str = env!("SLUICE_LEGACY_V4_WASM");

/// Generation one of the relay fixture (reads a 418 as a success), built by `build.rs`.
pub const RELAY_ONE_WASM: &str = env!("SLUICE_RELAY_ONE_WASM");

/// Generation two of the relay fixture (reads a 418 as the caller's error), built by
/// `build.rs`.
pub const RELAY_TWO_WASM: &str = env!("SLUICE_RELAY_TWO_WASM");

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace root")
        .to_owned()
}

/// A compiled-component cache shared by the test processes (content-addressed, so sharing
/// is safe), under the target directory.
pub fn test_cache() -> ComponentCache {
    ComponentCache::new(Some(
        workspace().join("target").join("test-component-cache"),
    ))
}

/// The per-call deadline of [`runtime`]. The default (5 ms) is right for an optimized host;
/// an unoptimized test build on a shared two-core machine, with other tests running, can be
/// descheduled for longer than that in the middle of a perfectly good call. Tests of the
/// deadline itself set their own.
pub const TEST_DEADLINE: std::time::Duration = std::time::Duration::from_millis(250);

/// The compiled artifacts in the cache directory `dir` of the component `bytes`: those whose
/// name begins with its SHA-256 (one per engine configuration).
pub fn cached_artifacts(dir: &Path, bytes: &[u8]) -> Vec<PathBuf> {
    let prefix: String = sluice::plugin::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".cwasm"))
        })
        .collect()
}

/// A runtime with the default limits (but [`TEST_DEADLINE`]) and the test cache.
pub fn runtime() -> PluginRuntime {
    runtime_with(RuntimeConfig {
        call_deadline: TEST_DEADLINE,
        ..RuntimeConfig::default()
    })
}

/// A runtime with `config` and the test cache.
///
/// # Panics
/// When the runtime cannot start.
pub fn runtime_with(config: RuntimeConfig) -> PluginRuntime {
    PluginRuntime::new(config, test_cache()).expect("start the plugin runtime")
}

/// The hostile fixture, loaded into `rt`.
///
/// # Panics
/// When it does not load.
pub fn hostile(rt: &PluginRuntime) -> Arc<Plugin> {
    Arc::new(
        rt.load_file(Path::new(HOSTILE_WASM))
            .expect("load the hostile fixture"),
    )
}

/// The fixture built against the frozen contract 0.1.0, loaded into `rt`.
///
/// # Panics
/// When it does not load.
pub fn legacy(rt: &PluginRuntime) -> Plugin {
    rt.load_file(Path::new(LEGACY_WASM))
        .expect("load the 0.1.0 fixture")
}

/// The 0.2.0 fixture, loaded.
///
/// # Panics
/// When it does not load.
pub fn legacy_v2(rt: &PluginRuntime) -> Plugin {
    rt.load_file(Path::new(LEGACY_V2_WASM))
        .expect("load the 0.2.0 fixture")
}

/// The 0.3.0 fixture, loaded by `rt`.
///
/// # Panics
/// When it does not load.
pub fn legacy_v3(rt: &PluginRuntime) -> Plugin {
    rt.load_file(Path::new(LEGACY_V3_WASM))
        .expect("load the 0.3.0 fixture")
}

/// The 0.4.0 fixture, loaded by `rt`.
///
/// # Panics
/// When it does not load.
pub fn legacy_v4(rt: &PluginRuntime) -> Plugin {
    rt.load_file(Path::new(LEGACY_V4_WASM))
        .expect("load the 0.4.0 fixture")
}

/// A request to `url` of `class`.
pub fn request(method: &str, url: &str, class: RequestClass) -> Request {
    Request::new(
        method,
        url,
        class,
        String::new(),
        Vec::new(),
        1_795_953_600_000,
    )
}

/// A response with `status` and headers (no body).
///
/// # Panics
/// When a header is not valid HTTP.
pub fn plain_response(status: u16, headers: &[(&str, &str)]) -> Response {
    Response {
        status,
        headers: encode_fields(headers.iter().copied()).expect("valid test headers"),
        body: Vec::new(),
    }
}

/// A response outcome with `status` and headers.
///
/// # Panics
/// When a header is not valid HTTP.
pub fn response(status: u16, headers: &[(&str, &str)]) -> WireOutcome {
    WireOutcome::Response(plain_response(status, headers))
}

/// The plugin example of `docs/writing-plugins.md`, compiled as a doctest against the SDK so
/// it stays true. (The SDK doctests its own README; this one lives outside it.)
#[cfg(doctest)]
#[doc = include_str!("../../docs/writing-plugins.md")]
struct WritingPluginsExample;

/// The README's embedding example, compiled as a doctest against the library so it stays
/// true (`no_run`: it names a configuration file of the reader's).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeEmbeddingExample;
