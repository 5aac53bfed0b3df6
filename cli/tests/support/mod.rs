//! What the CLI tests share: running the real `sluice` binary, as a user runs it, and
//! reading what it printed.

#![allow(dead_code, reason = "each test crate uses the part it needs")]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `sluice` with `args` and a component cache of the tests' own. `plugin test` and
/// `plugin inspect` get a 250 ms deadline per plugin call unless `args` set one: the 5 ms
/// default is for optimized builds, and these tests run an unoptimized one on a busy machine,
/// where a good call can be descheduled for longer than 5 ms.
pub fn sluice(args: &[&str]) -> Output {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-cache");
    let mut args = args.to_vec();
    let calls_plugins =
        args.len() >= 2 && args[0] == "plugin" && matches!(args[1], "test" | "inspect");
    if calls_plugins && !args.contains(&"--deadline-ms") {
        args.extend(["--deadline-ms", "250"]);
    }
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("run sluice")
}

/// What the run printed on standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What the run printed on standard error.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes `text` to the file `name` in the tests' temporary directory; returns its path.
pub fn write_tmp(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, text).expect("write a test file");
    path
}
