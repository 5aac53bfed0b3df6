//! The official SDKs of one language, run as agents run them: a script of the workspace's
//! `tests/<language>/` against the sidecar, with nothing of the machine's that could steer an
//! SDK elsewhere, printing one JSON line for the test to read. What runs the scripts (an
//! interpreter with the pinned SDKs) is made once per test binary, whichever test asks first.
//! `python.rs` and `node.rs` are the two languages.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// The SDKs of one language, and how to run their scripts.
pub struct Sdks {
    /// What a skip or a failure names as missing: `Python 3 with the Python SDKs`.
    what: &'static str,
    /// The scripts' directory, in the workspace: `tests/python`.
    dir: &'static str,
    /// The scripts' file name ending, without its dot: `py`.
    extension: &'static str,
    /// Makes what runs the scripts, or says why it could not (and what to do).
    make: fn() -> Result<Runner, String>,
    made: OnceLock<Result<Runner, String>>,
}

/// What runs a script: a program (an interpreter) and what it needs in its environment.
pub struct Runner {
    pub program: PathBuf,
    pub env: Vec<(&'static str, OsString)>,
}

impl Sdks {
    /// The SDKs called `what`, whose scripts `dir/NAME.extension` are run by what `make`
    /// makes.
    pub const fn new(
        what: &'static str,
        dir: &'static str,
        extension: &'static str,
        make: fn() -> Result<Runner, String>,
    ) -> Self {
        Self {
            what,
            dir,
            extension,
            make,
            made: OnceLock::new(),
        }
    }

    fn made(&self) -> &Result<Runner, String> {
        self.made.get_or_init(self.make)
    }

    /// Whether a test of these SDKs must stop here: nothing could be made to run them (see
    /// `sluice_fake_provider::services`).
    ///
    /// # Panics
    /// When nothing could be made and `SLUICE_REQUIRE_SERVICES` is set.
    pub fn unavailable(&self) -> bool {
        let made = self.made();
        let why = made.as_ref().err().map_or("", String::as_str);
        sluice_fake_provider::services::missing(self.what, made.is_ok(), why)
    }

    /// What runs the scripts.
    ///
    /// # Panics
    /// When nothing could be made (a test asks [`Self::unavailable`] first).
    pub fn runner(&self) -> &Runner {
        match self.made() {
            Ok(r) => r,
            Err(why) => panic!("{why}"),
        }
    }

    /// The script `name` (its file name without the ending), in the workspace.
    fn script(&self, name: &str) -> PathBuf {
        workspace()
            .join(self.dir)
            .join(format!("{name}.{}", self.extension))
    }

    /// The command that runs the script `name` with `args` against the sidecar at `url` as
    /// the agent holding `token`.
    fn command(&self, name: &str, args: &[&str], url: &str, token: &str) -> Command {
        let mut c = self.runner().command();
        c.arg(self.script(name))
            .args(args)
            .env("SLUICE_URL", url)
            .env("SLUICE_TOKEN", token);
        c
    }

    /// Runs the script `name` to its end; the JSON line it printed.
    pub fn run(&self, name: &str, args: &[&str], url: &str, token: &str) -> Value {
        let out = self
            .command(name, args, url, token)
            .output()
            .unwrap_or_else(|e| panic!("{}: run {name}: {e}", self.what));
        seen(name, &out)
    }

    /// Starts the script `name`; [`Self::finish`] reads what it saw.
    pub fn start(&self, name: &str, args: &[&str], url: &str, token: &str) -> Child {
        self.command(name, args, url, token)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: start {name}: {e}", self.what))
    }

    /// Waits for the script `name`, [`Self::start`]ed; the JSON line it printed.
    pub fn finish(&self, name: &str, child: Child) -> Value {
        let out = child.wait_with_output().expect("wait for the script");
        seen(name, &out)
    }
}

impl Runner {
    /// The program, with its environment, isolated (see [`isolated`]).
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        isolated(&mut c);
        c
    }
}

/// The workspace's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate is in the workspace")
        .to_path_buf()
}

/// The path `$var` names, when it is set. Else the directory `target/<dir>` of the workspace
/// as `bash <script> <directory>` made it (`script`, a path in the workspace, makes an
/// interpreter's environment there, or leaves it as it is when it is up to date), and the
/// path `found` in it; or, when the script failed, `why` it could not be made (told the
/// directory and what the script printed on its standard error).
pub fn given_or_made(
    var: &str,
    dir: &str,
    script: &str,
    found: impl FnOnce(PathBuf) -> PathBuf,
    why: impl FnOnce(&Path, &str) -> String,
) -> Result<PathBuf, String> {
    if let Some(given) = std::env::var_os(var) {
        return Ok(PathBuf::from(given));
    }
    let dir = workspace().join("target").join(dir);
    let made = Command::new("bash")
        .arg(workspace().join(script))
        .arg(&dir)
        .output()
        .map_err(|e| format!("bash could not run {script}: {e}"))?;
    if !made.status.success() {
        return Err(why(&dir, String::from_utf8_lossy(&made.stderr).trim_end()));
    }
    Ok(found(dir))
}

/// `c` with nothing of the machine's that could steer an SDK elsewhere (its base URL
/// variables, proxies) or add a credential of its own, its output captured.
fn isolated(c: &mut Command) -> &mut Command {
    c.env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("ANTHROPIC_AUTH_TOKEN")
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

/// The JSON line the script `name` printed last, once it succeeded.
fn seen(name: &str, out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let line = stdout.lines().last().unwrap_or("");
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{name} printed no JSON line ({e}):\n{stdout}\n{stderr}"))
}
