//! The compiled-component cache: each component is compiled once, kept across runs, and an
//! artifact is loaded only when it is intact and only this user could have written it. An
//! artifact is native code the host runs unsandboxed; a corrupted one used to crash the host
//! or change a plugin's answers.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use sluice::contract::{ProviderPolicy, RequestClass, ResponsePart, Verdict};
use sluice::plugin::{CacheOutcome, ComponentCache, Plugin, PluginRuntime, RuntimeConfig};
use sluice_tests::{TEST_DEADLINE, request, response};

/// A runtime caching in `dir`.
fn runtime_in(dir: &Path) -> PluginRuntime {
    let config = RuntimeConfig {
        call_deadline: TEST_DEADLINE,
        ..RuntimeConfig::default()
    };
    PluginRuntime::new(config, ComponentCache::new(Some(dir.to_owned()))).unwrap()
}

/// The `ietf` plugin, loaded by a fresh runtime caching in `dir`.
fn load_ietf(dir: &Path) -> Plugin {
    runtime_in(dir).load_bundled("ietf").unwrap()
}

/// The one artifact in `dir`.
fn artifact(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The plugin still answers as the `ietf` plugin does: a 503 is `overloaded`.
fn assert_answers_right(p: &Plugin) {
    let req = request("GET", "https://x.test/", RequestClass::Read);
    let reading = p
        .read_response(&req, &response(503, &[]), ResponsePart::Complete)
        .unwrap();
    assert_eq!(reading.classification.verdict, Verdict::Overloaded);
}

#[test]
fn a_runtime_compiles_each_component_once() {
    let rt = PluginRuntime::new(RuntimeConfig::default(), ComponentCache::new(None)).unwrap();
    assert_eq!(
        rt.load_bundled("github").unwrap().cache_outcome(),
        CacheOutcome::Compiled
    );
    assert_eq!(
        rt.load_bundled("github").unwrap().cache_outcome(),
        CacheOutcome::Hit
    );
}

#[test]
fn compiled_components_are_cached_across_runtimes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Compiled);
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Hit);

    // A file that is not an artifact at all is ignored and replaced.
    std::fs::write(artifact(&dir), b"corrupt").unwrap();
    let third = load_ietf(&dir);
    assert_eq!(third.cache_outcome(), CacheOutcome::Compiled);
    assert_answers_right(&third);
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Hit);
}

/// Issue 12, item 1: 64 flipped bytes in the middle of an artifact, its header intact, made
/// the host segfault, abort, or answer wrongly.
#[test]
fn an_artifact_with_flipped_bytes_is_recompiled_and_replaced_never_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Compiled);
    let path = artifact(&dir);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0xa5;
    }
    std::fs::write(&path, &bytes).unwrap();

    let reloaded = load_ietf(&dir);
    assert_eq!(reloaded.cache_outcome(), CacheOutcome::Compiled);
    assert_answers_right(&reloaded);
    assert_ne!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the artifact is replaced"
    );
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Hit);
}

#[test]
fn a_truncated_artifact_is_recompiled() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    load_ietf(&dir);
    let path = artifact(&dir);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let reloaded = load_ietf(&dir);
    assert_eq!(reloaded.cache_outcome(), CacheOutcome::Compiled);
    assert_answers_right(&reloaded);
}

#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let p = load_ietf(&dir);
    assert_eq!(p.cache_outcome(), CacheOutcome::Compiled);
    assert_answers_right(&p);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing is written to it"
    );
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Compiled);
    // Once only the user can write it, it is used again.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    load_ietf(&dir);
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Hit);
}

#[test]
fn an_artifact_others_can_write_is_replaced_not_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    load_ietf(&dir);
    let path = artifact(&dir);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Compiled);
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(load_ietf(&dir).cache_outcome(), CacheOutcome::Hit);
}

#[test]
fn the_cache_directory_is_created_private_and_artifacts_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sluice").join("components");
    load_ietf(&dir);
    assert_eq!(mode_of(&dir), 0o700);
    assert_eq!(mode_of(dir.parent().unwrap()), 0o700);
    assert_eq!(mode_of(&artifact(&dir)), 0o600);
}

/// The artifacts in `dir` whose name begins with the SHA-256 of `bundled`'s component.
fn artifacts_of(dir: &Path, bundled: &str) -> Vec<PathBuf> {
    sluice_tests::cached_artifacts(dir, sluice::plugin::bundled::get(bundled).unwrap())
}

/// Issue 26: stripe's artifact copied over openai's name was loaded as openai's plugin. An
/// artifact is loaded only for the component it was compiled from.
#[test]
fn another_plugin_s_artifact_under_this_plugin_s_name_is_recompiled_never_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    let rt = || runtime_in(&dir);
    assert_eq!(
        rt().load_bundled("ietf").unwrap().cache_outcome(),
        CacheOutcome::Compiled
    );
    assert_eq!(
        rt().load_bundled("github").unwrap().cache_outcome(),
        CacheOutcome::Compiled
    );
    let (ietf, github) = (artifacts_of(&dir, "ietf"), artifacts_of(&dir, "github"));
    assert_eq!((ietf.len(), github.len()), (1, 1));
    std::fs::copy(&github[0], &ietf[0]).unwrap();

    let loaded = rt().load_bundled("ietf").unwrap();
    assert_eq!(loaded.cache_outcome(), CacheOutcome::Compiled);
    assert_eq!(loaded.description().name, "ietf", "never github's code");
    assert_answers_right(&loaded);
    assert_ne!(
        std::fs::read(&ietf[0]).unwrap(),
        std::fs::read(&github[0]).unwrap(),
        "replaced by ietf's own"
    );
    assert_eq!(
        rt().load_bundled("ietf").unwrap().cache_outcome(),
        CacheOutcome::Hit
    );
}

/// The verdict a plugin gives a 418: the relay fixture's two versions differ there.
fn reads_418(p: &Plugin) -> Verdict {
    let req = request("GET", "https://x.test/teapot", RequestClass::Read);
    p.read_response(&req, &response(418, &[]), ResponsePart::Complete)
        .unwrap()
        .classification
        .verdict
}

/// The artifact of version one of a plugin copied over version two's is recompiled: a
/// new version never runs the old one's code.
#[test]
fn an_older_version_s_artifact_under_the_new_version_s_name_is_recompiled() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("components");
    let (one, two) = (
        std::fs::read(sluice_tests::RELAY_ONE_WASM).unwrap(),
        std::fs::read(sluice_tests::RELAY_TWO_WASM).unwrap(),
    );
    let load = |bytes: &[u8]| runtime_in(&dir).load("relay.wasm", bytes).unwrap();
    let (v1, v2) = (load(&one), load(&two));
    assert_ne!(
        reads_418(&v1),
        reads_418(&v2),
        "the versions differ on a 418"
    );
    let artifact_of = |bytes: &[u8]| {
        let found = sluice_tests::cached_artifacts(&dir, bytes);
        assert_eq!(found.len(), 1, "{found:?}");
        found.into_iter().next().unwrap()
    };
    std::fs::copy(artifact_of(&one), artifact_of(&two)).unwrap();
    let reloaded = load(&two);
    assert_eq!(reloaded.cache_outcome(), CacheOutcome::Compiled);
    assert_eq!(reads_418(&reloaded), reads_418(&v2), "version two's code");
}
