//! The compiled-component cache as a user meets it: `sluice plugin test` with
//! `XDG_CACHE_HOME` pointed at a directory of the test's own.

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{stderr, stdout};

/// Runs `sluice plugin test openai plugins/openai/vectors.json` with its cache under `cache`,
/// through `sh` with `umask`. The deadline is 250 ms: these tests run an unoptimized build on
/// a busy machine.
fn plugin_test(cache: &Path, umask: &str) -> Output {
    let vectors = format!(
        "{}/../plugins/openai/vectors.json",
        env!("CARGO_MANIFEST_DIR")
    );
    Command::new("sh")
        .args(["-c", &format!("umask {umask} && exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args(["plugin", "test", "openai", &vectors, "--deadline-ms", "250"])
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("run sluice")
}

/// The run passed every case; returns its summary line.
fn assert_all_passed(o: &Output) -> String {
    let out = stdout(o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(o));
    let last = out.lines().last().unwrap_or_default().to_owned();
    assert!(last.ends_with(" passed, 0 failed"), "{out}");
    last
}

fn artifacts(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
                .collect()
        })
        .unwrap_or_default()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Issue 12, item 1: with 64 bytes flipped inside the cached artifact (its header intact),
/// `sluice plugin test openai` segfaulted, aborted, or reported wrong answers.
#[test]
fn a_corrupted_cached_component_is_recompiled_and_answers_stay_right() {
    let tmp = tempfile::tempdir().unwrap();
    let first = plugin_test(tmp.path(), "022");
    let summary = assert_all_passed(&first);
    let dir = tmp.path().join("sluice").join("components");
    let [artifact] = artifacts(&dir).try_into().expect("one cached artifact");

    let mut bytes = std::fs::read(&artifact).unwrap();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0xa5;
    }
    std::fs::write(&artifact, &bytes).unwrap();

    let second = plugin_test(tmp.path(), "022");
    assert_eq!(assert_all_passed(&second), summary);
    let err = stderr(&second);
    assert!(
        err.contains("corrupted") && err.contains(&artifact.display().to_string()),
        "the corruption is reported, naming the file: {err}"
    );
    assert_ne!(
        std::fs::read(&artifact).unwrap(),
        bytes,
        "the artifact is replaced"
    );

    let third = plugin_test(tmp.path(), "022");
    assert_eq!(assert_all_passed(&third), summary);
    assert_eq!(stderr(&third), "", "the replaced artifact loads cleanly");
}

#[test]
fn the_cache_is_private_whatever_the_umask() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    assert_all_passed(&plugin_test(&cache, "000"));
    let dir = cache.join("sluice").join("components");
    for d in [&cache, &cache.join("sluice"), &dir] {
        assert_eq!(mode_of(d), 0o700, "{}", d.display());
    }
    let [artifact] = artifacts(&dir).try_into().expect("one cached artifact");
    assert_eq!(mode_of(&artifact), 0o600);
}

#[test]
fn a_cache_directory_others_can_write_is_not_used_and_the_warning_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sluice").join("components");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = plugin_test(tmp.path(), "022");
    assert_all_passed(&o);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("chmod go-w {}", dir.display())),
        "{err}"
    );
    assert!(artifacts(&dir).is_empty(), "nothing is cached there");
}
