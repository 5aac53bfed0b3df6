//! Test vectors: recorded provider responses and what a plugin must conclude from them
//! (the format is `docs/PLUGIN-VECTORS.md`), with an expectation for every export of the
//! contract. `sluice plugin test` runs them; so does the test suite, for every bundled
//! plugin. Each case costs the plugin what an attempt costs it in production: one
//! `read-response` call (and one `plan-request` call when the case expects a plan); a write
//! case costs what settling a write does (`reconcile`, `read-reconciliation`), and a file's
//! `describe` is checked against what the plugin said when it loaded. Cases are recorded
//! from captured traffic by `sluice-plugin-record` (`sluice plugin test --record`).
//!
#![cfg_attr(feature = "internals", doc = "```no_run")]
#![cfg_attr(not(feature = "internals"), doc = "```ignore")]
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
mod describe;
mod expect;
mod format;
mod print;
mod writes;

use std::path::{Path, PathBuf};

pub use describe::ExpectedDescription;
pub use expect::{Expect, ExpectedObservation, ExpectedPlan, class_name, scope_name, verdict_name};
pub use format::{DEFAULT_NOW_MS, Given, VectorCase, dimension_name};
pub use writes::{ExpectedReconcile, ExpectedReconciliation, WriteCase};

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
    /// What `describe` must answer, when the file checks it.
    pub describe: Option<ExpectedDescription>,
    /// Its cases, in file order.
    pub cases: Vec<VectorCase>,
    /// Its write cases, in file order.
    pub writes: Vec<WriteCase>,
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
        .and_then(|o| o.keys().find(|k| !TOP_LEVEL.contains(&k.as_str())))
    {
        return Err(malformed(format!(
            "unknown top-level field {extra:?} (only \"cases\", \"writes\" and \"describe\" \
             are allowed)"
        )));
    }
    let describe = match root.get("describe") {
        None => None,
        Some(value) => {
            let d: ExpectedDescription = serde_path_to_error::deserialize(value)
                .map_err(|e| malformed(format!("describe: field `{}`: {}", e.path(), e.inner())))?;
            d.validate().map_err(malformed)?;
            Some(d)
        }
    };
    let mut out = Vec::with_capacity(cases.len());
    for (i, value) in cases.iter().enumerate() {
        let label = label("case", i, value);
        let raw: format::RawCase = serde_path_to_error::deserialize(value)
            .map_err(|e| malformed(format!("{label}: field `{}`: {}", e.path(), e.inner())))?;
        out.push(format::validate(raw).map_err(|m| malformed(format!("{label}: {m}")))?);
    }
    let raw_writes = match root.get("writes") {
        None => &[][..],
        Some(w) => w
            .as_array()
            .ok_or_else(|| malformed("\"writes\" is not an array".into()))?,
    };
    let mut writes = Vec::with_capacity(raw_writes.len());
    for (i, value) in raw_writes.iter().enumerate() {
        let label = label("write", i, value);
        let raw: writes::RawWriteCase = serde_path_to_error::deserialize(value)
            .map_err(|e| malformed(format!("{label}: field `{}`: {}", e.path(), e.inner())))?;
        writes.push(writes::validate(raw).map_err(|m| malformed(format!("{label}: {m}")))?);
    }
    if out.is_empty() && writes.is_empty() {
        return Err(malformed(
            "\"cases\" is empty: a vector file must hold at least one case".into(),
        ));
    }
    Ok(VectorFile {
        path: path.to_owned(),
        describe,
        cases: out,
        writes,
    })
}

/// The fields a vector file's top level may have.
const TOP_LEVEL: &[&str] = &["cases", "writes", "describe"];

/// How an error names the `i`th entry of a list: `case 3 ("its name")`.
fn label(kind: &str, i: usize, value: &serde_json::Value) -> String {
    match value.get("name").and_then(|n| n.as_str()) {
        Some(n) => format!("{kind} {i} ({n:?})"),
        None => format!("{kind} {i}"),
    }
}

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// `None` when it passed; else every difference, `; `-separated (or the plugin's
    /// failure).
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
    let describe = file.describe.as_ref().map(|want| CaseResult {
        name: describe::RESULT_NAME.into(),
        failure: want.check(plugin.description()),
    });
    let cases = file.cases.iter().map(|case| CaseResult {
        name: case.name.clone(),
        failure: run_case(plugin, case),
    });
    let writes = file.writes.iter().map(|case| CaseResult {
        name: case.name.clone(),
        failure: writes::run(plugin, case),
    });
    VectorReport {
        path: file.path.clone(),
        results: describe.into_iter().chain(cases).chain(writes).collect(),
    }
}

fn run_case(plugin: &dyn ProviderPolicy, case: &VectorCase) -> Option<String> {
    let e = &case.expect;
    let mut diffs = Vec::new();
    match &case.given {
        Given::Stretch { at, bytes } => match plugin.count_stream(&case.request, *at, bytes) {
            Ok(counted) => check::usage(&counted, e, &mut diffs),
            Err(e) => return Some(e.to_string()),
        },
        Given::Outcome { outcome, part } => {
            let reading = match plugin.read_response(&case.request, outcome, *part) {
                Ok(r) => r,
                Err(e) => return Some(e.to_string()),
            };
            check::classification(&reading.classification, e, &mut diffs);
            check::observations(&reading.observations, e, &mut diffs);
            check::usage(&reading.usage, e, &mut diffs);
        }
    }
    if let Some(want) = e.plan.as_ref() {
        match plugin.plan_request(&case.request) {
            Ok(plan) => check::plan(&plan, want, &mut diffs),
            Err(e) => diffs.push(e.to_string()),
        }
    }
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

#[cfg(test)]
mod tests;
