//! Test vectors: recorded provider responses and what a plugin must conclude from them
//! (the format is `docs/PLUGIN-VECTORS.md`). `sluice plugin test` runs them; so does the
//! test suite, for every bundled plugin. Each case costs the plugin what an attempt costs
//! it in production: one `read-response` call (and one `plan-request` call when the case
//! expects a plan).
//!
//! ```no_run
//! use sluice::plugin::{ComponentCache, PluginRuntime, RuntimeConfig};
//! use sluice::vectors;
//!
//! let runtime = PluginRuntime::new(RuntimeConfig::default(), ComponentCache::user_default())?;
//! let plugin = runtime.load_bundled("openai")?;
//! let file = vectors::load(std::path::Path::new("plugins/openai/vectors.json"))?;
//! let report = vectors::run(&plugin, &file);
//! assert_eq!(report.failed(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod check;
mod expect;
mod format;
mod print;

use std::path::{Path, PathBuf};

pub use expect::{Expect, ExpectedObservation, ExpectedPlan, class_name, verdict_name};
pub use format::{DEFAULT_NOW_MS, VectorCase, dimension_name};

use crate::contract::ProviderPolicy;
use crate::input_file::{self, InputFileError};
use crate::printable::printable;

/// A vector file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    /// The file could not be read: missing, unreadable, not a regular file, or larger than
    /// [`MAX_FILE_BYTES`].
    #[error("{0}")]
    Read(InputFileError),
    /// The file is not JSON of the vector format.
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the case and field.
        message: String,
    },
}

/// A parsed vector file.
#[derive(Debug, Clone)]
pub struct VectorFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its cases, in file order.
    pub cases: Vec<VectorCase>,
}

/// The largest vector file read, in bytes: 16 MiB. The bundled files are tens of KiB, and
/// parsing costs several times a file's size in memory, so a file past this is not a
/// vector file someone wrote (nor is `/dev/zero`).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads and validates a vector file: a regular file of at most [`MAX_FILE_BYTES`] (a fifo
/// or a device is refused without waiting on it).
///
/// # Errors
/// [`VectorError::Read`] when the file cannot be read, is not a regular file or is too
/// large; [`VectorError::Malformed`] when it is not valid JSON of the format, naming the
/// case (by index and name) and the field.
pub fn load(path: &Path) -> Result<VectorFile, VectorError> {
    let text = input_file::read_text(path, MAX_FILE_BYTES).map_err(VectorError::Read)?;
    parse(path, &text)
}

/// Parses vector-file text; `path` names it in errors.
///
/// # Errors
/// As [`load`].
pub fn parse(path: &Path, text: &str) -> Result<VectorFile, VectorError> {
    // The message quotes the file (a field name, a case name): escaped, it stays one line.
    let malformed = |message: String| VectorError::Malformed {
        path: path.to_owned(),
        message: printable(&message).into_owned(),
    };
    let root: serde_json::Value =
        serde_json::from_str(text).map_err(|e| malformed(format!("not valid JSON: {e}")))?;
    let cases = root
        .get("cases")
        .and_then(|c| c.as_array())
        .ok_or_else(|| malformed("missing the top-level \"cases\" array".into()))?;
    if let Some(extra) = root
        .as_object()
        .and_then(|o| o.keys().find(|k| *k != "cases"))
    {
        return Err(malformed(format!(
            "unknown top-level field {extra:?} (only \"cases\" is allowed)"
        )));
    }
    let mut out = Vec::with_capacity(cases.len());
    for (i, value) in cases.iter().enumerate() {
        let label = match value.get("name").and_then(|n| n.as_str()) {
            Some(n) => format!("case {i} ({n:?})"),
            None => format!("case {i}"),
        };
        let raw: format::RawCase = serde_path_to_error::deserialize(value)
            .map_err(|e| malformed(format!("{label}: field `{}`: {}", e.path(), e.inner())))?;
        out.push(format::validate(raw).map_err(|m| malformed(format!("{label}: {m}")))?);
    }
    if out.is_empty() {
        return Err(malformed(
            "\"cases\" is empty: a vector file must hold at least one case".into(),
        ));
    }
    Ok(VectorFile {
        path: path.to_owned(),
        cases: out,
    })
}

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// `None` when it passed; else the first difference (or the plugin's failure).
    pub failure: Option<String>,
}

/// The results of one file.
#[derive(Debug, Clone)]
pub struct VectorReport {
    /// The file.
    pub path: PathBuf,
    /// One result per case, in file order.
    pub results: Vec<CaseResult>,
}

impl VectorReport {
    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.failure.is_none()).count()
    }

    /// Cases that failed.
    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }
}

/// Runs every case of `file` against `plugin` (a loaded [`Plugin`](crate::plugin::Plugin), or
/// any [`ProviderPolicy`]), directly (no fallback: a plugin failure fails the case). A plugin
/// never sees a case's credentials: [`Plugin`](crate::plugin::Plugin) redacts them, as for
/// every request.
pub fn run(plugin: &dyn ProviderPolicy, file: &VectorFile) -> VectorReport {
    let results = file
        .cases
        .iter()
        .map(|case| CaseResult {
            name: case.name.clone(),
            failure: run_case(plugin, case),
        })
        .collect();
    VectorReport {
        path: file.path.clone(),
        results,
    }
}

fn run_case(plugin: &dyn ProviderPolicy, case: &VectorCase) -> Option<String> {
    let reading = match plugin.read_response(&case.request, &case.outcome, case.part) {
        Ok(r) => r,
        Err(e) => return Some(e.to_string()),
    };
    let e = &case.expect;
    let diff = check::classification(&reading.classification, e)
        .or_else(|| check::observations(&reading.observations, e))
        .or_else(|| check::usage(&reading.usage, e));
    if diff.is_some() {
        return diff;
    }
    let want = e.plan.as_ref()?;
    match plugin.plan_request(&case.request) {
        Ok(plan) => check::plan(&plan, want),
        Err(e) => Some(e.to_string()),
    }
}
