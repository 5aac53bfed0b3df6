//! What the fuzz targets share: structured inputs built from fuzz data (header names and
//! values in the shapes providers send, so the fuzzer reaches the readers' deep paths
//! quickly), the bridge from the plugin SDK's types to the host's (both are generated from
//! one WIT contract, case for case), and a scratch directory for the targets that read files.
#![allow(missing_docs)]

pub mod audit;
pub mod bridge;
pub mod drive;
pub mod input;

use std::path::PathBuf;
use std::sync::OnceLock;

/// The wall clock the readers are given when a target does not vary it:
/// 2026-11-29T12:00:00Z.
pub const NOW_MS: i64 = 1_795_953_600_000;

/// A directory of this process's own for targets that hand files to the code under test: in
/// `/dev/shm` when there is one (a sync there costs nothing, and the audit log syncs every
/// append), else the system's temporary directory.
pub fn scratch_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let shm = PathBuf::from("/dev/shm");
        let base = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("sluice-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz scratch directory");
        dir
    })
}
