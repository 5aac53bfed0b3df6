//! Embeds the plugin SDK's package (the files its `Cargo.toml` includes: the manifest, the
//! README, `src/` and the vendored WIT) in the binary, and the package of the contract's
//! vocabulary it depends on (`plugins/contract`: its manifest and `src/`), for `sluice plugin
//! new` to write into a new plugin crate, which then depends on the SDK by version with no
//! checkout to point at.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The package at `dir`: its loose files (`top`) and everything under `dirs`, each watched
/// for changes.
fn package(dir: &Path, top: &[&str], dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for name in top {
        println!("cargo:rerun-if-changed={}", dir.join(name).display());
        out.push(dir.join(name));
    }
    for name in dirs {
        println!("cargo:rerun-if-changed={}", dir.join(name).display());
        files(&dir.join(name), &mut out);
    }
    out
}

/// `pub const NAME: &[(&str, &[u8])]`, documented by `doc`: each file of the package at
/// `dir`, by its path in it, with its bytes.
fn embed(code: &mut String, name: &str, doc: &str, dir: &Path, files: Vec<PathBuf>) {
    writeln!(code, "/// {doc}\npub const {name}: &[(&str, &[u8])] = &[").expect("write");
    for file in files {
        let rel = file.strip_prefix(dir).expect("a file of the package");
        let rel = rel.to_str().expect("a UTF-8 path").replace('\\', "/");
        writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            file.to_str().expect("a UTF-8 path")
        )
        .expect("write to a string");
    }
    code.push_str("];\n");
}

/// The package `plugins/<name>` beside the command.
fn beside(manifest_dir: &std::ffi::OsStr, name: &str) -> PathBuf {
    Path::new(manifest_dir)
        .join("../plugins")
        .join(name)
        .canonicalize()
        .unwrap_or_else(|e| panic!("plugins/{name} beside the command: {e}"))
}

fn main() {
    // Read when the script runs, not when it is compiled: a target directory shared by two
    // checkouts keeps one compiled script for both.
    let manifest_dir =
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let sdk = beside(&manifest_dir, "sdk");
    let manifest = std::fs::read_to_string(sdk.join("Cargo.toml")).expect("the SDK's manifest");
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"'))
        .expect("the SDK's manifest names its version");
    let mut code = format!(
        "/// The SDK's version, from its manifest.\npub const SDK_VERSION: &str = {version:?};\n"
    );
    let files = package(&sdk, &["Cargo.toml", "README.md"], &["src", "wit"]);
    embed(
        &mut code,
        "SDK_FILES",
        "The SDK's package: each file's path in it, and its bytes.",
        &sdk,
        files,
    );
    let contract = beside(&manifest_dir, "contract");
    let files = package(&contract, &["Cargo.toml"], &["src"]);
    embed(
        &mut code,
        "CONTRACT_FILES",
        "The package of the contract's vocabulary the SDK depends on: each file's path in it, \
         and its bytes.",
        &contract,
        files,
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("sdk_files.rs");
    std::fs::write(out, code).expect("write sdk_files.rs");
}
