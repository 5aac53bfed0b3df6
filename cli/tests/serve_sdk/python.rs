//! The Python the SDK scripts of `tests/python/` run in: `$SLUICE_SDK_PYTHON`, else the
//! workspace's `target/sdk-venv`, made (or remade, when `tests/python/requirements.txt`
//! changed) by `tests/python/make-venv.sh`.

use std::process::Output;

use crate::scripts::{Runner, Sdks, given_or_made};

/// The official openai and anthropic Python packages, pinned in
/// `tests/python/requirements.txt`.
pub static PYTHON: Sdks = Sdks::new(
    "Python 3 with the Python SDKs",
    "tests/python",
    "py",
    interpreter,
);

/// The interpreter with the pinned SDKs installed, or why none could be made.
fn interpreter() -> Result<Runner, String> {
    let program = given_or_made(
        "SLUICE_SDK_PYTHON",
        "sdk-venv",
        "tests/python/make-venv.sh",
        |venv| venv.join("bin/python"),
        |venv, said| {
            format!(
                "the SDK tests need Python 3 with the pinned openai and anthropic SDKs, and \
                 tests/python/make-venv.sh could not make {}:\n{said}\n(or point \
                 SLUICE_SDK_PYTHON at an interpreter that has tests/python/requirements.txt \
                 installed)",
                venv.display()
            )
        },
    )?;
    Ok(Runner {
        program,
        env: Vec::new(),
    })
}

/// Runs the Python source `code` to its end, in the environment the scripts run in; what it
/// printed.
pub fn run_source(code: &str) -> Output {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("snippet.py");
    std::fs::write(&file, code).expect("write the snippet");
    PYTHON
        .runner()
        .command()
        .arg(&file)
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run the Python interpreter")
}
