//! The SDK builds from the WIT vendored in its own `wit/` (so the crate stands alone outside
//! the repository); the host binds the repository's `wit/`. Both must be the same contract,
//! file for file and byte for byte, or a plugin built with the SDK would export an interface
//! the host does not bind. This test reads files outside the package, so it is not packaged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under `root`, by its path relative to `root`, with its bytes.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {dir:?}: {e}"));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
                let rel = path.strip_prefix(root).expect("under the root").to_owned();
                out.insert(rel, bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn the_vendored_wit_is_the_repository_s_wit_byte_for_byte() {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR"));
    let vendored = files(&sdk.join("wit"));
    let repository = files(&sdk.join("../../wit"));
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&vendored),
        names(&repository),
        "plugins/sdk/wit/ and wit/ hold different files: copy wit/ over plugins/sdk/wit/"
    );
    for (path, bytes) in &repository {
        assert!(
            vendored[path] == *bytes,
            "plugins/sdk/wit/{} differs from wit/{0}: copy wit/ over plugins/sdk/wit/",
            path.display()
        );
    }
    assert!(
        repository.contains_key(Path::new("policy.wit")),
        "the contract itself is among the files compared"
    );
}
