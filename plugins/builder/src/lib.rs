//! Builds plugin crates of this workspace for `wasm32-wasip2` from a build script, so that a
//! plain `cargo build` or `cargo test` at the root is all anyone runs. No `.wasm` file is
//! ever committed.
//!
//! The nested `cargo build` uses its own target directory (`target/plugins`), so it never
//! waits on the lock the outer build holds, and it is incremental across runs and shared by
//! every profile of the outer build.
#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The WebAssembly target plugins are built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Environment the outer cargo sets for build scripts that must not leak into the nested
/// build (flags meant for the host target, the clippy wrapper, a forced target).
const SCRUBBED_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WRAPPER",
    "CARGO_BUILD_TARGET",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_PRIMARY_PACKAGE",
];

/// One built plugin.
#[derive(Debug, Clone)]
pub struct Built {
    /// The crate's package name (`sluice-plugin-openai`).
    pub package: String,
    /// The component file.
    pub wasm: PathBuf,
}

/// Builds `packages` (members of the workspace at `workspace`) for [`TARGET`] in release mode
/// and returns their component files, in the order given. Prints `cargo:rerun-if-changed`
/// for the plugin sources and the WIT contract.
///
/// # Panics
/// When the target is missing and cannot be installed, or the build fails: a build script
/// has no better way to stop, and the message says what to run.
pub fn build(workspace: &Path, packages: &[&str]) -> Vec<Built> {
    for watched in ["plugins", "wit", "Cargo.lock"] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }
    ensure_target();
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace.join("target"), PathBuf::from)
        .join("plugins");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--target")
        .arg(TARGET)
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
        // The workspace's release profile optimises the host across crates; a plugin built
        // so ran no faster (docs/benchmarks/added-latency.md, "The call arena"), so plugins
        // keep the defaults.
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        // wasmtime runs wasm SIMD; with it, byte searches (memchr) read 16 bytes at a time.
        .env(
            "CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS",
            "-Ctarget-feature=+simd128",
        );
    for p in packages {
        cmd.arg("-p").arg(p);
    }
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build the plugins: {e}"));
    assert!(
        status.success(),
        "building the plugins {packages:?} for {TARGET} failed (see the errors above); \
         to reproduce: cargo build --release --target {TARGET} -p {}",
        packages.join(" -p ")
    );
    packages
        .iter()
        .map(|p| {
            let wasm = target_dir
                .join(TARGET)
                .join("release")
                .join(format!("{}.wasm", p.replace('-', "_")));
            assert!(
                wasm.exists(),
                "the build of {p} produced no {}",
                wasm.display()
            );
            Built {
                package: (*p).to_owned(),
                wasm,
            }
        })
        .collect()
}

/// Makes sure the `wasm32-wasip2` standard library is installed: installs it with rustup
/// when possible, else stops with the exact command to run.
fn ensure_target() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = |root: &Option<PathBuf>| {
        root.as_ref()
            .is_some_and(|r| r.join("lib/rustlib").join(TARGET).exists())
    };
    if installed(&sysroot) {
        return;
    }
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        added && installed(&sysroot),
        "the Rust target {TARGET} is missing and could not be installed; run: \
         rustup target add {TARGET}"
    );
}
