//! `sluice plugin new`: a plugin crate, outside any workspace, that builds, tests and passes
//! its vectors as written.
//!
//! The crate depends on the SDK by version. The SDK is not published yet, so the crate's
//! `[patch.crates-io]` takes it from `vendor/sluice-plugin-sdk`, where the SDK's package —
//! carried in this binary — is written (or from `--sdk PATH`, for work on the SDK itself):
//! the crate builds with no checkout of sluice. Nothing is written unless the name is a
//! usable crate name and the directory is new or empty, so a mistake never leaves half a
//! crate over someone's files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use crate::plugin_template::{FILES, Fill};

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The crate's name: lower-case ASCII letters, digits, `-` and `_`, starting with a
    /// letter (the component is named after it, `-` written `_`).
    name: String,
    /// The directory to create the crate in (new, or empty); default `./NAME`.
    #[arg(long, value_name = "PATH")]
    dir: Option<PathBuf>,
    /// A sluice-plugin-sdk crate to take the SDK from instead of the copy this binary carries
    /// (for work on the SDK itself): the new crate's patch points at it.
    #[arg(long, value_name = "PATH")]
    sdk: Option<PathBuf>,
}

/// Longest crate name taken (crates.io's limit).
const MAX_NAME_LEN: usize = 64;

/// Rust's keywords, strict and reserved: a library cannot be named one.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Names cargo or the generated code cannot use: the standard crates, the SDK itself, cargo's
/// own directory names and names Windows reserves.
const RESERVED: &[&str] = &[
    "std",
    "core",
    "alloc",
    "proc_macro",
    "test",
    "sluice_plugin_sdk",
    "deps",
    "examples",
    "build",
    "incremental",
    "con",
    "prn",
    "aux",
    "nul",
    "com1",
    "lpt1",
];

/// Type names the generated `src/lib.rs` imports from the SDK: a plugin type of the same
/// name gets `Policy` appended.
const SDK_TYPES: &[&str] = &[
    "Classification",
    "Cost",
    "Description",
    "Dimension",
    "Observation",
    "Outcome",
    "Plugin",
    "PolicyError",
    "Priority",
    "PriorityClass",
    "Request",
    "Response",
    "ResponsePart",
    "Verdict",
];

pub fn run(args: &NewArgs) -> anyhow::Result<ExitCode> {
    check_name(&args.name)?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    check_dir(&dir)?;
    let (sdk_path, sdk_version) = match args.sdk.as_deref() {
        Some(sdk) => sdk_path(sdk)?,
        None => (VENDORED_SDK.to_owned(), SDK_VERSION.to_owned()),
    };
    let lib = args.name.replace('-', "_");
    let type_name = type_name(&args.name);
    let fill = Fill {
        name: &args.name,
        type_name: &type_name,
        lib: &lib,
        sdk_version: &sdk_version,
        sdk_path: &sdk_path,
    };
    if args.sdk.is_none() {
        for (file, bytes) in SDK_FILES {
            write(&dir.join("vendor/sluice-plugin-sdk").join(file), bytes)?;
        }
        // Beside it, where the SDK's manifest finds it (`path = "../contract"`).
        for (file, bytes) in CONTRACT_FILES {
            write(&dir.join("vendor/contract").join(file), bytes)?;
        }
    }
    for file in FILES {
        write(&dir.join(file.path), fill.apply(file.template).as_bytes())?;
    }
    let shown = dir.display();
    println!("created the plugin crate {} in {shown}", args.name);
    println!("next:");
    println!("  cd {shown}");
    println!("  cargo test");
    println!("  cargo test --target wasm32-wasip2");
    println!("  cargo build --target wasm32-wasip2 --release");
    println!("  sluice plugin test target/wasm32-wasip2/release/{lib}.wasm vectors.json");
    Ok(ExitCode::SUCCESS)
}

/// Refuses a name cargo would refuse, or one the generated code could not use, saying why.
fn check_name(name: &str) -> anyhow::Result<()> {
    let what = format!("cannot name a plugin crate {name:?}");
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        bail!("{what}: a name has 1 to {MAX_NAME_LEN} characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        bail!("{what}: a name starts with a lower-case ASCII letter");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        bail!("{what}: {c:?} is not allowed (lower-case ASCII letters, digits, '-' and '_' are)");
    }
    let lib = name.replace('-', "_");
    if KEYWORDS.contains(&lib.as_str()) {
        bail!("{what}: it is a Rust keyword");
    }
    if RESERVED.contains(&lib.as_str()) {
        bail!("{what}: the name is reserved (a standard crate, the SDK, or a cargo directory)");
    }
    Ok(())
}

/// The plugin's type: the name in upper camel case (`acme-policy` is `AcmePolicy`), with
/// `Policy` appended when it would shadow an SDK type (`plugin` is `PluginPolicy`).
fn type_name(name: &str) -> String {
    let mut t: String = name
        .split(['-', '_'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    if SDK_TYPES.contains(&t.as_str()) {
        t.push_str("Policy");
    }
    t
}

/// The crate goes into a new directory or an empty one, never over existing files.
fn check_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("read {}", dir.display())),
        Ok(m) if !m.is_dir() => bail!(
            "{} exists and is not a directory: name a new or empty directory with --dir",
            dir.display()
        ),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir)
                .with_context(|| format!("read the directory {}", dir.display()))?;
            if entries.next().is_some() {
                bail!(
                    "the directory {} is not empty: name a new or empty directory with --dir",
                    dir.display()
                );
            }
            Ok(())
        }
    }
}

// The SDK's package and version, and the package of the contract's vocabulary it depends on,
// as `build.rs` found them beside this command (`SDK_FILES`, `SDK_VERSION`, `CONTRACT_FILES`).
include!(concat!(env!("OUT_DIR"), "/sdk_files.rs"));

/// Where the new crate's patch finds the SDK it carries, as a TOML string.
const VENDORED_SDK: &str = "\"vendor/sluice-plugin-sdk\"";

/// Writes `bytes` to `path`, making its directory.
fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("create the directory {}", parent.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("write {}", path.display()))
}

/// `--sdk PATH`: the absolute path of a sluice-plugin-sdk crate as a TOML string, and its
/// version (the dependency must name it, or the patch to that crate goes unused).
fn sdk_path(sdk: &Path) -> anyhow::Result<(String, String)> {
    let manifest = std::fs::read_to_string(sdk.join("Cargo.toml")).unwrap_or_default();
    if !manifest.contains("name = \"sluice-plugin-sdk\"") {
        bail!(
            "{} is not the sluice-plugin-sdk crate (no such Cargo.toml)",
            sdk.display()
        );
    }
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \"")?.strip_suffix('"'))
        .with_context(|| format!("{}/Cargo.toml names no version", sdk.display()))?
        .to_owned();
    let sdk = std::fs::canonicalize(sdk)
        .with_context(|| format!("resolve the SDK's path {}", sdk.display()))?;
    let path = sdk
        .to_str()
        .with_context(|| format!("the SDK's path {} is not UTF-8", sdk.display()))?;
    // A JSON string is a valid TOML basic string: the same escapes for quotes, backslashes
    // and control characters.
    Ok((
        serde_json::to_string(path).context("quote the SDK's path")?,
        version,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_crate_name_is_refused_saying_why() {
        let why = |name: &str| check_name(name).unwrap_err().to_string();
        assert!(why("").contains("1 to 64 characters"));
        assert!(why("9lives").contains("starts with a lower-case"));
        assert!(why("Acme").contains("starts with a lower-case"));
        assert!(why("acme plugin").contains("' ' is not allowed"));
        assert!(why("acme.plugin").contains("'.' is not allowed"));
        assert!(why("fn").contains("Rust keyword"));
        assert!(why("test").contains("reserved"));
        assert!(why("sluice-plugin-sdk").contains("reserved"));
        assert!(why(&"a".repeat(65)).contains("1 to 64"));
        for good in ["acme", "acme-policy", "acme_2"] {
            check_name(good).unwrap();
        }
    }

    #[test]
    fn the_type_is_the_name_in_camel_case_unless_it_shadows_an_sdk_type() {
        assert_eq!(type_name("acme-policy"), "AcmePolicy");
        assert_eq!(type_name("acme_v2"), "AcmeV2");
        assert_eq!(type_name("plugin"), "PluginPolicy");
        assert_eq!(type_name("response"), "ResponsePolicy");
    }

    #[test]
    fn an_existing_non_empty_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        check_dir(&tmp.path().join("new")).unwrap();
        check_dir(tmp.path()).unwrap();
        std::fs::write(tmp.path().join("notes.txt"), "mine").unwrap();
        let err = check_dir(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("is not empty"), "{err}");
        let err = check_dir(&tmp.path().join("notes.txt"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn the_carried_sdk_is_the_checkout_s_package_and_sdk_names_a_crate_by_absolute_path() {
        let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/sdk");
        for (file, bytes) in SDK_FILES {
            assert_eq!(
                std::fs::read(checkout.join(file)).unwrap(),
                *bytes,
                "{file} differs from the checkout's"
            );
        }
        for wanted in ["Cargo.toml", "README.md", "src/lib.rs", "wit/policy.wit"] {
            assert!(SDK_FILES.iter().any(|(f, _)| *f == wanted), "{wanted}");
        }
        assert!(!SDK_FILES.iter().any(|(f, _)| f.starts_with("tests/")));
        // The contract's vocabulary goes where the SDK's manifest looks for it.
        let contract = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/contract");
        for (file, bytes) in CONTRACT_FILES {
            assert_eq!(
                std::fs::read(contract.join(file)).unwrap(),
                *bytes,
                "{file}"
            );
        }
        assert!(CONTRACT_FILES.iter().any(|(f, _)| *f == "src/lib.rs"));
        let sdk_manifest = std::fs::read_to_string(checkout.join("Cargo.toml")).unwrap();
        assert!(
            sdk_manifest.contains("sluice-contract = { path = \"../contract\""),
            "the SDK finds the vocabulary beside it, where `plugin new` writes it"
        );
        assert!(SDK_VERSION.starts_with("0."), "{SDK_VERSION}");
        let (path, version) = sdk_path(&checkout).unwrap();
        let canonical = std::fs::canonicalize(&checkout).unwrap();
        assert_eq!(path, format!("{:?}", canonical.to_str().unwrap()));
        assert_eq!(version, SDK_VERSION);
        let err = sdk_path(Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not the sluice-plugin-sdk crate"), "{err}");
    }
}
