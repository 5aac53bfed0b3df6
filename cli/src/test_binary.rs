//! A plugin crate's test binary, run in the plugin sandbox ([`sluice::plugin::sandbox_wasi`]):
//! what `sluice plugin run-test` ([`crate::plugin_run_test`]) does as cargo's runner for
//! `wasm32-wasip2`.
//!
//! `cargo test --target wasm32-wasip2` builds a crate's unit tests into a WASI *command*
//! component (it exports `wasi:cli/run`) and hands it to the target's runner. Running it here
//! rather than in another WebAssembly runtime tests the plugin's code where it will run: the
//! wasmtime the host embeds, the WASI context of a plugin instance (no files, no sockets, no
//! environment, clocks frozen at the Unix epoch, fixed randomness) and the contract's imports
//! (a plugin that logs links as it does in production). A test binary gets only what a test
//! harness needs on top: its arguments (test filters, `--nocapture`, ...) and the process's
//! stdout and stderr. A test that reads the clock or a file sees what its plugin would see.
//!
//! It is run to its end: no call deadline (a test may take long, natively too) and a memory
//! cap far above a plugin's ([`MAX_TEST_MEMORY_BYTES`]), since the harness itself needs room.

use std::path::Path;

use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::{I32Exit, WasiCtx, WasiCtxView, WasiView};

use sluice::input_file::{self, InputFileError};
use sluice::plugin::bindings::sluice::policy0_5_0::{log, types};
use sluice::plugin::bindings::v0_1::sluice::policy::{log as log_v0_1, types as types_v0_1};
use sluice::plugin::bindings::v0_3::sluice::policy::{log as log_v0_3, types as types_v0_3};
use sluice::plugin::bindings::{ProviderPolicy, v0_1, v0_3};
use sluice::plugin::sandbox_wasi;

/// The largest test binary read: 512 MiB. A debug build of a plugin's tests is about 10 MiB.
pub const MAX_TEST_BINARY_BYTES: u64 = 512 << 20;

/// Linear memory a test binary may grow to: 1 GiB, where a plugin gets 16 MiB. A test that
/// needs more is not testing a plugin.
pub const MAX_TEST_MEMORY_BYTES: usize = 1 << 30;

/// How a test binary ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandExit {
    /// It returned from `wasi:cli/run` or called `exit`: its exit status (0 is success; a
    /// failed test run exits non-zero, 1 as wasi-libc reports a failure).
    Exited(i32),
    /// It trapped: a panic under `panic = "abort"` (the default on `wasm32-wasip2`, so a
    /// failing assertion ends the whole run here), an out-of-bounds access, memory denied.
    Trapped(String),
}

impl CommandExit {
    /// The process exit status that stands for this end: the guest's own status (its low
    /// eight bits, as a Unix process's), or 134 for a trap, as for a process that aborted.
    pub fn status(&self) -> u8 {
        match self {
            Self::Exited(code) => u8::try_from(code & 0xff).unwrap_or(1),
            Self::Trapped(_) => 134,
        }
    }
}

/// A test binary that could not be run.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The file could not be read.
    #[error("the test binary {0}")]
    Read(InputFileError),
    /// The file is not WebAssembly at all.
    #[error(
        "{path} is not a WebAssembly file. The runner takes the test binaries of `cargo test --target wasm32-wasip2`"
    )]
    NotWasm {
        /// The file.
        path: String,
    },
    /// The file is a core module, as `wasm32-wasip1` and `wasm32-unknown-unknown` build.
    #[error(
        "{path} is a core WebAssembly module, not a component: build the tests with `cargo test --target wasm32-wasip2`"
    )]
    CoreModule {
        /// The file.
        path: String,
    },
    /// A component without `wasi:cli/run`: a library, such as a plugin's `.wasm`.
    #[error(
        "{path} is a component but not a command: it exports no wasi:cli/run. A plugin's own .wasm is checked with `sluice plugin test PLUGIN.wasm VECTORS.json`"
    )]
    NotCommand {
        /// The file.
        path: String,
    },
    /// The engine refused the component, or the sandbox lacks an import it needs.
    #[error("{path} cannot run in the plugin sandbox: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The engine's complaint.
        message: String,
    },
    /// The engine or the imports could not be set up.
    #[error("cannot start the WebAssembly engine: {0}")]
    Runtime(String),
}

/// Runs the command component at `path` with `args` (what follows the program name: cargo
/// passes test filters and libtest's flags) until it ends; its output goes to this process's
/// stdout and stderr.
///
/// # Errors
/// [`CommandError`] when the file cannot be read, is not a command component, or needs an
/// import the sandbox does not provide. How the guest ended, trap included, is the
/// [`CommandExit`].
pub fn run_test_binary(path: &Path, args: &[String]) -> Result<CommandExit, CommandError> {
    let bytes = input_file::read(path, MAX_TEST_BINARY_BYTES).map_err(CommandError::Read)?;
    let shown = path.display().to_string();
    check_component(&shown, &bytes)?;

    let mut config = Config::new();
    config.wasm_component_model(true);
    let engine = Engine::new(&config).map_err(|e| CommandError::Runtime(format!("{e:#}")))?;
    let invalid = |e: wasmtime::Error| CommandError::Invalid {
        path: shown.clone(),
        message: format!("{e:#}"),
    };
    let component = Component::new(&engine, &bytes).map_err(invalid)?;
    if !exports_run(&engine, &component) {
        return Err(CommandError::NotCommand { path: shown });
    }
    let linker = linker(&engine)?;

    let mut wasi = sandbox_wasi();
    wasi.inherit_stdout()
        .inherit_stderr()
        .arg(&shown)
        .args(args);
    let state = TestState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limits: StoreLimitsBuilder::new()
            .memory_size(MAX_TEST_MEMORY_BYTES)
            .build(),
    };
    let mut store = Store::new(&engine, state);
    store.limiter(|s| &mut s.limits);
    let command = Command::instantiate(&mut store, &component, &linker).map_err(invalid)?;
    Ok(match command.wasi_cli_run().call_run(&mut store) {
        Ok(Ok(())) => CommandExit::Exited(0),
        Ok(Err(())) => CommandExit::Exited(1),
        Err(e) => match e.downcast_ref::<I32Exit>() {
            Some(exit) => CommandExit::Exited(exit.0),
            None => CommandExit::Trapped(format!("{e:?}")),
        },
    })
}

/// Tells a component from a core module and from anything else, by the binary's preamble:
/// the engine's own error for a core module does not say what to build instead.
fn check_component(path: &str, bytes: &[u8]) -> Result<(), CommandError> {
    const MAGIC: &[u8; 4] = b"\0asm";
    const CORE: [u8; 4] = [1, 0, 0, 0];
    match (bytes.get(..4), bytes.get(4..8)) {
        (Some(magic), Some(version)) if magic == MAGIC => {
            if version == CORE {
                Err(CommandError::CoreModule {
                    path: path.to_owned(),
                })
            } else {
                Ok(())
            }
        }
        _ => Err(CommandError::NotWasm {
            path: path.to_owned(),
        }),
    }
}

/// Whether the component exports some `wasi:cli/run@0.2.*`.
fn exports_run(engine: &Engine, component: &Component) -> bool {
    component
        .component_type()
        .exports(engine)
        .any(|(name, _)| name.starts_with("wasi:cli/run@0.2."))
}

/// WASI 0.2 and the contract's imports (the current version, 0.3.0 and 0.1.0): a test binary
/// of a plugin links
/// what the plugin itself links.
fn linker(engine: &Engine) -> Result<Linker<TestState>, CommandError> {
    let runtime = |what: &str, e: wasmtime::Error| CommandError::Runtime(format!("{what}: {e}"));
    let mut linker = Linker::<TestState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| runtime("WASI imports", e))?;
    ProviderPolicy::add_to_linker::<_, HasSelf<TestState>>(&mut linker, |s| s)
        .map_err(|e| runtime("sluice imports", e))?;
    v0_3::ProviderPolicy::add_to_linker::<_, HasSelf<TestState>>(&mut linker, |s| s)
        .map_err(|e| runtime("sluice 0.3.0 imports", e))?;
    v0_1::ProviderPolicy::add_to_linker::<_, HasSelf<TestState>>(&mut linker, |s| s)
        .map_err(|e| runtime("sluice 0.1.0 imports", e))?;
    Ok(linker)
}

/// The store of a test run: the sandbox's WASI context with arguments and output, and the
/// memory cap.
struct TestState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for TestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for TestState {}

impl types_v0_1::Host for TestState {}

impl types_v0_3::Host for TestState {}

/// A plugin's log message under test goes to stderr, where the test's own output goes.
impl log::Host for TestState {
    fn log(&mut self, level: log::Level, message: String) {
        eprintln!("[plugin {level:?}] {message}");
    }
}

impl log_v0_1::Host for TestState {
    fn log(&mut self, level: log_v0_1::Level, message: String) {
        eprintln!("[plugin {level:?}] {message}");
    }
}

impl log_v0_3::Host for TestState {
    fn log(&mut self, level: log_v0_3::Level, message: String) {
        eprintln!("[plugin {level:?}] {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_bytes(bytes: &[u8]) -> Result<CommandExit, CommandError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.wasm");
        std::fs::write(&path, bytes).unwrap();
        run_test_binary(&path, &[])
    }

    #[test]
    fn a_file_that_is_not_webassembly_is_named_as_such() {
        let e = run_bytes(b"#!/bin/sh\necho hi\n").unwrap_err();
        assert!(matches!(e, CommandError::NotWasm { .. }), "{e}");
        assert!(e.to_string().contains("not a WebAssembly file"), "{e}");
    }

    #[test]
    fn a_core_module_is_refused_with_the_target_to_build_for() {
        // The smallest core module: the preamble alone.
        let e = run_bytes(b"\0asm\x01\0\0\0").unwrap_err();
        assert!(matches!(e, CommandError::CoreModule { .. }), "{e}");
        assert!(e.to_string().contains("--target wasm32-wasip2"), "{e}");
    }

    #[test]
    fn a_component_without_wasi_cli_run_is_not_a_command() {
        // The smallest component: the preamble alone; it exports nothing.
        let e = run_bytes(b"\0asm\x0d\0\x01\0").unwrap_err();
        assert!(matches!(e, CommandError::NotCommand { .. }), "{e}");
        assert!(e.to_string().contains("sluice plugin test"), "{e}");
    }

    #[test]
    fn a_plugin_component_is_not_a_command() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ietf.wasm");
        std::fs::write(&path, sluice::plugin::bundled::get("ietf").unwrap()).unwrap();
        let e = run_test_binary(&path, &[]).unwrap_err();
        assert!(matches!(e, CommandError::NotCommand { .. }), "{e}");
    }

    #[test]
    fn a_missing_file_is_a_read_error_naming_it() {
        let e = run_test_binary(Path::new("/nonexistent/t.wasm"), &[]).unwrap_err();
        assert!(matches!(e, CommandError::Read(_)), "{e}");
        assert!(e.to_string().contains("/nonexistent/t.wasm"), "{e}");
    }

    #[test]
    fn an_exit_status_keeps_its_low_byte_and_a_trap_is_an_abort() {
        assert_eq!(CommandExit::Exited(0).status(), 0);
        assert_eq!(CommandExit::Exited(101).status(), 101);
        assert_eq!(CommandExit::Exited(256 + 3).status(), 3);
        assert_eq!(CommandExit::Trapped("unreachable".into()).status(), 134);
    }
}
