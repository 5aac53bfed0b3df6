//! `sluice plugin run-test` at the command line, as cargo calls it: the test binary's path
//! and then libtest's own arguments, hyphens included, passed on untouched; a file that is
//! not a command component refused by name with exit status 2. (Running a real test binary
//! takes a crate built for wasm32-wasip2: CI does it, `.ci/run`, "a plugin from sluice
//! plugin new", with `cargo test --target wasm32-wasip2` in the generated crate.)

mod support;

use support::{sluice, stderr, write_tmp};

#[test]
fn libtest_s_arguments_after_the_binary_are_not_taken_for_sluice_s_own() {
    let path = write_tmp("run-test-not-wasm.wasm", "#!/bin/sh\n");
    let o = sluice(&[
        "plugin",
        "run-test",
        path.to_str().unwrap(),
        "--nocapture",
        "--exact",
        "tests::a_503_is_overloaded",
        "-q",
        "--help",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a WebAssembly file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn help_after_the_binary_is_the_binary_s_to_answer() {
    let path = write_tmp("run-test-help.wasm", "not wasm");
    let o = sluice(&["plugin", "run-test", path.to_str().unwrap(), "--help"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a WebAssembly file"),
        "{}",
        stderr(&o)
    );
    let o = sluice(&["plugin", "help", "run-test"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(support::stdout(&o).contains("Usage: sluice plugin run-test <WASM> [ARGS]..."));
}

#[test]
fn a_core_module_is_refused_naming_the_target_to_build_for() {
    let path = write_tmp("run-test-core.wasm", "\0asm\u{1}\0\0\0");
    let o = sluice(&["plugin", "run-test", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("is a core WebAssembly module, not a component"),
        "{err}"
    );
    assert!(err.contains("cargo test --target wasm32-wasip2"), "{err}");
}
