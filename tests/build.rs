//! Builds the hostile test fixture from source (`plugins/fixtures/hostile`).

fn main() {
    let manifest =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest
        .parent()
        .expect("tests/ lives in the workspace root");
    let built = sluice_plugin_builder::build(workspace, &["sluice-plugin-hostile"]);
    println!(
        "cargo:rustc-env=SLUICE_HOSTILE_WASM={}",
        built[0].wasm.display()
    );
}
