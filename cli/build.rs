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

fn main() {
    // Read when the script runs, not when it is compiled: a target directory shared by two
    // checkouts keeps one compiled script for both.
    let manifest_dir =
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let sdk = Path::new(&manifest_dir).join("../plugins/sdk");
    let sdk = sdk
        .canonicalize()
        .expect("the SDK beside the command: plugins/sdk");
    let mut package = vec![sdk.join("Cargo.toml"), sdk.join("README.md")];
    for dir in ["src", "wit"] {
        println!("cargo:rerun-if-changed={}", sdk.join(dir).display());
        files(&sdk.join(dir), &mut package);
    }
    println!(
        "cargo:rerun-if-changed={}",
        sdk.join("Cargo.toml").display()
    );
    println!("cargo:rerun-if-changed={}", sdk.join("README.md").display());
    let manifest = std::fs::read_to_string(sdk.join("Cargo.toml")).expect("the SDK's manifest");
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"'))
        .expect("the SDK's manifest names its version");
    let mut code = format!(
        "/// The SDK's version, from its manifest.\n\
         pub const SDK_VERSION: &str = {version:?};\n\
         /// The SDK's package: each file's path in it, and its bytes.\n\
         pub const SDK_FILES: &[(&str, &[u8])] = &[\n"
    );
    for file in package {
        let rel = file.strip_prefix(&sdk).expect("a file of the SDK");
        let rel = rel.to_str().expect("a UTF-8 path").replace('\\', "/");
        writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            file.to_str().expect("a UTF-8 path")
        )
        .expect("write to a string");
    }
    code.push_str("];\n");
    let contract = Path::new(&manifest_dir).join("../plugins/contract");
    let contract = contract
        .canonicalize()
        .expect("the contract's vocabulary beside the command: plugins/contract");
    let mut package = vec![contract.join("Cargo.toml")];
    println!(
        "cargo:rerun-if-changed={}",
        contract.join("Cargo.toml").display()
    );
    println!("cargo:rerun-if-changed={}", contract.join("src").display());
    files(&contract.join("src"), &mut package);
    code.push_str(
        "/// The package of the contract's vocabulary the SDK depends on: each file's path in \
         it, and its bytes.\npub const CONTRACT_FILES: &[(&str, &[u8])] = &[\n",
    );
    for file in package {
        let rel = file
            .strip_prefix(&contract)
            .expect("a file of the contract");
        let rel = rel.to_str().expect("a UTF-8 path").replace('\\', "/");
        writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            file.to_str().expect("a UTF-8 path")
        )
        .expect("write to a string");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("sdk_files.rs");
    std::fs::write(out, code).expect("write sdk_files.rs");
}
