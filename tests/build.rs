//! Builds the test fixtures from source: the hostile plugin (`plugins/fixtures/hostile`),
//! the plugins built against the frozen contracts 0.1.0, 0.2.0, 0.3.0 and 0.4.0
//! (`plugins/fixtures/v1`, `v2`, `v3`, `v4`), and the two
//! generations of the relay plugin that the reload tests swap (`plugins/fixtures/relay`).

fn main() {
    let manifest =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest
        .parent()
        .expect("tests/ lives in the workspace root");
    let built = sluice_plugin_builder::build(
        workspace,
        &[
            "sluice-plugin-hostile",
            "sluice-plugin-legacy",
            "sluice-plugin-relay-one",
            "sluice-plugin-relay-two",
            "sluice-plugin-legacy-v2",
            "sluice-plugin-legacy-v3",
            "sluice-plugin-legacy-v4",
        ],
    );
    println!(
        "cargo:rustc-env=SLUICE_HOSTILE_WASM={}",
        built[0].wasm.display()
    );
    println!(
        "cargo:rustc-env=SLUICE_LEGACY_WASM={}",
        built[1].wasm.display()
    );
    println!(
        "cargo:rustc-env=SLUICE_RELAY_ONE_WASM={}",
        built[2].wasm.display()
    );
    println!(
        "cargo:rustc-env=SLUICE_RELAY_TWO_WASM={}",
        built[3].wasm.display()
    );
    println!(
        "cargo:rustc-env=SLUICE_LEGACY_V2_WASM={}",
        built[4].wasm.display()
    );
    println!(
        "cargo:rustc-env=SLUICE_LEGACY_V3_WASM={}",
        built[5].wasm.display()
    );
    println!(
        "cargo:rustc-env=SLUICE_LEGACY_V4_WASM={}",
        built[6].wasm.display()
    );
}
