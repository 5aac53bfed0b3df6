//! `sluice plugin new` at the command line: the files of a crate that stands outside any
//! workspace, and refusals that name what was wrong and write nothing. (CI builds and tests
//! the generated crate for real: `.ci/run`, "a plugin from sluice plugin new".)

mod support;

use support::{sluice, stderr, stdout};

#[test]
fn a_new_plugin_crate_has_its_manifest_runner_skeleton_vectors_and_readme() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("acme");
    let o = sluice(&[
        "plugin",
        "new",
        "acme-policy",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("sluice plugin test target/wasm32-wasip2/release/acme_policy.wasm"),
        "{}",
        stdout(&o)
    );
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    let manifest = read("Cargo.toml");
    for line in [
        "name = \"acme-policy\"",
        "crate-type = [\"cdylib\"]",
        "[package.metadata.component]",
        "\nsluice-plugin-sdk = \"0.",
        "[patch.crates-io]\nsluice-plugin-sdk = { path = \"vendor/sluice-plugin-sdk\" }",
        "\n[workspace]\nexclude = [\"vendor\"]\n",
    ] {
        assert!(
            manifest.contains(line),
            "Cargo.toml lacks {line:?}:\n{manifest}"
        );
    }
    // The SDK's package, carried by the binary: no path leads back to a checkout.
    assert!(read("vendor/sluice-plugin-sdk/Cargo.toml").contains("name = \"sluice-plugin-sdk\""));
    assert!(
        read("vendor/sluice-plugin-sdk/wit/policy.wit").contains("package sluice:policy@0.5.0")
    );
    assert!(!manifest.contains(env!("CARGO_MANIFEST_DIR")), "{manifest}");
    let lib = read("src/lib.rs");
    assert!(lib.contains("impl Plugin for AcmePolicy"), "{lib}");
    assert!(lib.contains("export_plugin!(AcmePolicy)"), "{lib}");
    assert!(lib.contains("use sluice_plugin_sdk::test::{request, response};"));
    assert!(!lib.contains("{{"), "a placeholder left unfilled:\n{lib}");
    let vectors: serde_json::Value = serde_json::from_str(&read("vectors.json")).unwrap();
    assert!(vectors["cases"].as_array().is_some_and(|c| c.len() >= 3));
    assert!(read("README.md").contains("acme_policy.wasm"));
    let config = read(".cargo/config.toml");
    assert!(
        config
            .contains("[target.wasm32-wasip2]\nrunner = [\"sluice\", \"plugin\", \"run-test\"]\n"),
        "{config}"
    );
}

#[test]
fn a_directory_with_files_in_it_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
    let o = sluice(&[
        "plugin",
        "new",
        "acme",
        "--dir",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("is not empty"), "{err}");
    assert!(
        err.contains(tmp.path().to_str().unwrap()),
        "names the directory: {err}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing written");
}

#[test]
fn a_bad_crate_name_is_refused_by_name_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("x");
    let o = sluice(&["plugin", "new", "my plugin", "--dir", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("\"my plugin\"") && err.contains("' ' is not allowed"),
        "{err}"
    );
    assert!(!dir.exists());
}
