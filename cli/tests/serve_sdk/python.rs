//! The Python the SDK scripts run in: `$SLUICE_SDK_PYTHON`, else the workspace's
//! `target/sdk-venv`, made (or remade, when `tests/python/requirements.txt` changed) by
//! `tests/python/make-venv.sh` — once per test binary, whichever test asks first.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// The workspace's root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate is in the workspace")
        .to_path_buf()
}

/// The scripts' directory.
fn scripts() -> PathBuf {
    workspace().join("tests/python")
}

/// The interpreter with the pinned SDKs installed, or why none could be made.
fn made() -> &'static Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Some(p) = std::env::var_os("SLUICE_SDK_PYTHON") {
            return Ok(PathBuf::from(p));
        }
        let venv = workspace().join("target/sdk-venv");
        let made = Command::new("bash")
            .arg(scripts().join("make-venv.sh"))
            .arg(&venv)
            .output()
            .map_err(|e| format!("bash could not run tests/python/make-venv.sh: {e}"))?;
        if !made.status.success() {
            return Err(format!(
                "the SDK tests need Python 3 with the pinned openai and anthropic SDKs, and \
                 tests/python/make-venv.sh could not make {}:\n{}\n(or point SLUICE_SDK_PYTHON \
                 at an interpreter that has tests/python/requirements.txt installed)",
                venv.display(),
                String::from_utf8_lossy(&made.stderr)
            ));
        }
        Ok(venv.join("bin/python"))
    })
}

/// Whether a test of the SDKs must stop here: no interpreter could be made (see
/// `sluice_fake_provider::services`).
///
/// # Panics
/// When none could be made and `SLUICE_REQUIRE_SERVICES` is set.
pub fn unavailable() -> bool {
    let why = made().as_ref().err().map_or("", String::as_str);
    sluice_fake_provider::services::missing("the Python SDKs", made().is_ok(), why)
}

/// The interpreter with the pinned SDKs installed.
///
/// # Panics
/// When none could be made (a test asks [`unavailable`] first).
pub fn interpreter() -> &'static Path {
    match made() {
        Ok(p) => p,
        Err(why) => panic!("{why}"),
    }
}

/// The command that runs `script` with `args` against the sidecar at `url` as the agent
/// holding `token`.
fn command(script: &str, args: &[&str], url: &str, token: &str) -> Command {
    let mut c = Command::new(interpreter());
    c.arg(scripts().join(script))
        .args(args)
        .env("SLUICE_URL", url)
        .env("SLUICE_TOKEN", token);
    isolated(&mut c);
    c
}

/// `c` with nothing of the machine's that could steer an SDK elsewhere (its base URL
/// variables, proxies), its output captured.
fn isolated(c: &mut Command) -> &mut Command {
    c.env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("all_proxy")
        .env("NO_PROXY", "*")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
}

/// Runs the Python source `code` to its end, in the environment the scripts run in; what it
/// printed.
pub fn run_source(code: &str) -> Output {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("snippet.py");
    std::fs::write(&file, code).expect("write the snippet");
    let mut c = Command::new(interpreter());
    c.arg(&file).env_remove("OPENAI_API_KEY");
    isolated(&mut c)
        .output()
        .expect("run the Python interpreter")
}

/// Runs `script` to its end; the JSON line it printed.
pub fn run(script: &str, args: &[&str], url: &str, token: &str) -> Value {
    let out = command(script, args, url, token)
        .output()
        .expect("run the Python interpreter");
    seen(script, &out)
}

/// Starts `script`; [`finish`] reads what it saw.
pub fn start(script: &str, args: &[&str], url: &str, token: &str) -> Child {
    command(script, args, url, token)
        .spawn()
        .expect("start the Python interpreter")
}

/// Waits for a script [`start`]ed; the JSON line it printed.
pub fn finish(script: &str, child: Child) -> Value {
    let out = child.wait_with_output().expect("wait for the script");
    seen(script, &out)
}

fn seen(script: &str, out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout.lines().last().unwrap_or("");
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{script} printed no JSON line ({e}):\n{stdout}\n{stderr}"))
}
