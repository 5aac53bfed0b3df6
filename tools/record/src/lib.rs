//! Recording vector cases from captured traffic: what `sluice plugin test --record` runs (the
//! command's own, kept out of the library every embedder links). A HAR file
//! or a `curl -i` dump is read, the plugin reads each captured exchange as the host would,
//! and a case is written per exchange with the expectations filled with what the plugin
//! answered — every field, every `_exact` flag. The author reviews those expectations: a
//! recorded case pins today's behaviour, right or wrong, and a wrong answer recorded is a
//! wrong answer kept.
//!
//! What is written never holds a credential: the request headers the host treats as
//! credentials ([`sluice::headers::is_credential`]), the response's `Set-Cookie`, and the
//! headers that name the account (`OpenAI-Organization`, `OpenAI-Project`,
//! `anthropic-organization-id`) are written with the value `[redacted]` — the value a plugin
//! sees of a credential in production anyway, so a recorded case replays as it was read.
//!
//! Cases are added to the end of the file's `cases`, its other text untouched; a file that
//! does not exist is created. A case whose name the file already holds is refused, and then
//! nothing is written.

mod case;
mod curl;
mod har;
mod insert;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use sluice::contract::{ProviderPolicy, RequestClass, ResponsePart};
use sluice::input_file::{self, InputFileError};
use sluice::printable::printable;
use sluice::vectors::{Given, VectorError, VectorFile, VectorReport};

/// The largest capture read, in bytes: 64 MiB, room for a HAR file of a whole session.
pub const MAX_CAPTURE_BYTES: u64 = 64 << 20;

/// One request and the response it got, as a capture holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Where in the file it was found (`entry 3`, `the last response`).
    pub origin: String,
    /// The request's method.
    pub method: String,
    /// The request's absolute URL.
    pub url: String,
    /// The request's headers, in order.
    pub request_headers: Vec<(String, String)>,
    /// The request's body, as text.
    pub request_body: String,
    /// The response's status.
    pub status: u16,
    /// The response's headers, in order.
    pub response_headers: Vec<(String, String)>,
    /// The response's body, as text.
    pub response_body: String,
    /// When the exchange took place (ms since the epoch), when the capture says: the case's
    /// `now`, so the dates in its headers read as they did.
    pub now_ms: Option<i64>,
}

/// What to record and how to name it.
#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    /// HAR: only entries whose URL starts with one of these (every entry when empty). A
    /// `curl -i` dump: the request's URL (at most one).
    pub request_urls: Vec<String>,
    /// A `curl -i` dump: the request's method (default: the one `-v` lines show, else GET).
    pub request_method: Option<String>,
    /// The request class written (default `read`).
    pub request_class: Option<RequestClass>,
    /// The case's name (default `METHOD /path answered STATUS`); several cases recorded at
    /// once get ` #2`, ` #3`, ... after it.
    pub name: Option<String>,
}

/// Why nothing was recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The capture could not be read.
    #[error("{0}")]
    Read(InputFileError),
    /// The capture is not a HAR file or a `curl -i` dump, or cannot be a case.
    #[error("{}: {message}", path.display())]
    Capture {
        /// The capture.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The plugin gave no reading of a captured response.
    #[error("{}: {origin}: the plugin gave no reading: {message}", path.display())]
    Plugin {
        /// The capture.
        path: PathBuf,
        /// Which exchange.
        origin: String,
        /// The plugin's failure.
        message: String,
    },
    /// The vector file to add to is malformed.
    #[error("{0}")]
    Vectors(VectorError),
    /// The vector file already holds a case of that name.
    #[error(
        "{}: already holds a case named {name}: nothing written (name the new one with --name)",
        path.display()
    )]
    NameTaken {
        /// The vector file.
        path: PathBuf,
        /// The name, escaped.
        name: String,
    },
    /// The vector file's `cases` array could not be found in its text.
    #[error("{}: the top-level \"cases\" array could not be found in the text", path.display())]
    NoCases {
        /// The vector file.
        path: PathBuf,
    },
}

/// The result of a recording: the vector file's new text, and the recorded cases.
#[derive(Debug)]
pub struct Recording {
    /// The names of the cases recorded, in order.
    pub names: Vec<String>,
    /// The whole vector file with the new cases.
    pub text: String,
    /// The file's new text run against the plugin: every recorded case passes.
    pub report: VectorReport,
    /// What the author should know: a plan the plugin declined, so not expected.
    pub notes: Vec<String>,
}

/// Reads the capture at `capture`, has `plugin` read each exchange, and returns the vector
/// file `out` (its current text, when it exists, or a new one; a new one when `out` is
/// `None`) with a case per exchange. Nothing is written: see [`save`].
///
/// # Errors
/// A [`RecordError`] naming the file and what is wrong.
pub fn record(
    plugin: &dyn ProviderPolicy,
    capture: &Path,
    out: Option<&Path>,
    opts: &RecordOptions,
) -> Result<Recording, RecordError> {
    let bad = |message: String| RecordError::Capture {
        path: capture.to_owned(),
        message: printable(&message).into_owned(),
    };
    let text = input_file::read_text(capture, MAX_CAPTURE_BYTES).map_err(RecordError::Read)?;
    let captures = read(&text, opts).map_err(bad)?;
    let label = out.unwrap_or(Path::new("recorded.json"));
    let existing = match out.map(Path::try_exists) {
        Some(Ok(true)) => {
            let text = input_file::read_text(label, sluice::vectors::MAX_FILE_BYTES)
                .map_err(|e| RecordError::Vectors(VectorError::Read(e)))?;
            let file = sluice::vectors::parse(label, &text).map_err(RecordError::Vectors)?;
            Some((text, file))
        }
        _ => None,
    };
    let mut taken: HashSet<String> = existing.iter().flat_map(|(_, f)| file_names(f)).collect();
    let class = class_name(opts.request_class.unwrap_or(RequestClass::Read));
    let (mut lines, mut names, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    let mut used_here = HashSet::new();
    for (i, c) in captures.iter().enumerate() {
        let base = opts.name.clone().unwrap_or_else(|| default_name(c));
        let base = match i {
            0 => base,
            _ if opts.name.is_none() && !used_here.contains(&base) => base,
            _ => format!("{base} #{}", i + 1),
        };
        used_here.insert(base.clone());
        for mut case in case::cases(c, &base, class) {
            if !taken.insert(case.name.clone()) {
                return Err(RecordError::NameTaken {
                    path: label.to_owned(),
                    name: printable(&format!("{:?}", case.name)).into_owned(),
                });
            }
            let json = serde_json::to_string(&case).map_err(|e| bad(e.to_string()))?;
            let one = sluice::vectors::parse(capture, &format!("{{\"cases\":[{json}]}}"))
                .map_err(|e| bad(format!("{}: {e}", c.origin)))?;
            let vc = &one.cases[0];
            // A recorded exchange is an answer to read, never a stretch of a stream to count.
            let Given::Outcome { outcome, part } = &vc.given else {
                return Err(bad(format!("{}: not an answer to read", c.origin)));
            };
            let part = *part;
            let reading = plugin
                .read_response(&vc.request, outcome, part)
                .map_err(|e| RecordError::Plugin {
                    path: capture.to_owned(),
                    origin: c.origin.clone(),
                    message: printable(&e.to_string()).into_owned(),
                })?;
            let plan = match part {
                ResponsePart::StreamEnd => None,
                _ => plugin
                    .plan_request(&vc.request)
                    .map_err(|e| notes.push(format!("{}: no plan expected: {e}", case.name)))
                    .ok(),
            };
            case.expect = case::expectation(&reading, plan.as_ref(), part);
            lines.push(serde_json::to_string(&case).map_err(|e| bad(e.to_string()))?);
            names.push(case.name);
        }
    }
    let text = match &existing {
        Some((text, _)) => insert::append(text, &lines).ok_or_else(|| RecordError::NoCases {
            path: label.to_owned(),
        })?,
        None => insert::new_file(&lines),
    };
    let file = sluice::vectors::parse(label, &text).map_err(RecordError::Vectors)?;
    let report = sluice::vectors::run(plugin, &file);
    Ok(Recording {
        names,
        text,
        report,
        notes,
    })
}

/// Writes a recording's text to `out`: to a file beside it first, then renamed over it, so
/// a reader never sees half a file.
///
/// # Errors
/// The I/O error of writing or renaming.
pub fn save(out: &Path, recording: &Recording) -> std::io::Result<()> {
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".recording");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, &recording.text)?;
    std::fs::rename(&tmp, out).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The exchanges of a capture's text: a HAR file when it is a JSON object, else a `curl -i`
/// dump.
fn read(text: &str, opts: &RecordOptions) -> Result<Vec<Capture>, String> {
    if text.trim_start().starts_with('{') {
        if opts.request_method.is_some() {
            return Err("--request-method is for a curl dump: a HAR entry names its method".into());
        }
        return har::parse(text, &opts.request_urls);
    }
    if opts.request_urls.len() > 1 {
        return Err("a curl dump holds one exchange: give at most one --request-url".into());
    }
    let url = opts.request_urls.first().map(String::as_str);
    curl::parse(text, url, opts.request_method.as_deref()).map(|c| vec![c])
}

/// `POST /v1/chat/completions answered 429`.
fn default_name(c: &Capture) -> String {
    let path = c.url.split_once("://").map_or(c.url.as_str(), |(_, r)| {
        r.find('/').map_or("/", |i| &r[i..])
    });
    let path = path.split(['?', '#']).next().unwrap_or("/");
    format!(
        "{} {path} answered {}",
        c.method.to_ascii_uppercase(),
        c.status
    )
}

fn file_names(f: &VectorFile) -> impl Iterator<Item = String> + '_ {
    f.cases
        .iter()
        .map(|c| c.name.clone())
        .chain(f.writes.iter().map(|w| w.name.clone()))
}

fn class_name(c: RequestClass) -> &'static str {
    match c {
        RequestClass::Read => "read",
        RequestClass::IdempotentWrite => "idempotent-write",
        RequestClass::UncertainWrite => "uncertain-write",
    }
}
