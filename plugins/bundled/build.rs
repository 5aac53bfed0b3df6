//! Builds the bundled provider plugins from source (see `plugins/builder`) and embeds them,
//! so a host (and `sluice plugin test openai ...`) works from the binary alone.

use std::fmt::Write as _;
use std::path::PathBuf;

/// The bundled plugins: (name users type, package).
const BUNDLED: &[(&str, &str)] = &[
    ("openai", "sluice-plugin-openai"),
    ("anthropic", "sluice-plugin-anthropic"),
    ("github", "sluice-plugin-github"),
    ("stripe", "sluice-plugin-stripe"),
    ("ietf", "sluice-plugin-ietf"),
    ("gemini", "sluice-plugin-gemini"),
    ("bedrock", "sluice-plugin-bedrock"),
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest
        .ancestors()
        .nth(2)
        .expect("plugins/bundled lives two levels under the workspace root");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let packages: Vec<&str> = BUNDLED.iter().map(|(_, p)| *p).collect();
    let built = sluice_plugin_builder::build(workspace, &packages);

    let mut src = String::from(
        "/// The plugins built into this binary: (name, component bytes, its test vectors).\n\
         pub const BUNDLED: &[(&str, &[u8], &str)] = &[\n",
    );
    for ((name, _), b) in BUNDLED.iter().zip(&built) {
        let copy = out.join(format!("{name}.wasm"));
        std::fs::copy(&b.wasm, &copy).expect("copy the built plugin into OUT_DIR");
        let vectors = workspace.join("plugins").join(name).join("vectors.json");
        assert!(
            vectors.exists(),
            "plugin {name} has no vectors.json: every plugin ships its test vectors"
        );
        writeln!(
            src,
            "    ({name:?}, include_bytes!({:?}), include_str!({:?})),",
            copy.display().to_string(),
            vectors.display().to_string()
        )
        .expect("write to a String");
    }
    src.push_str("];\n");
    std::fs::write(out.join("bundled.rs"), src).expect("write bundled.rs");
}
