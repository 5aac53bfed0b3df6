//! AWS's published SigV4 test suite, as shipped with the `aws-sigv4` crate the host signs
//! with: found through `cargo metadata`, read whole, one [`Vector`] per case.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One case of the suite.
#[derive(Debug, Clone)]
pub struct Vector {
    /// Its directory's name (`get-vanilla`).
    pub name: String,
    /// The request to sign: method, path and query as written, headers, body.
    pub request: Written,
    /// The same request signed (its `Authorization`, `X-Amz-Date`, a session token).
    pub signed: Written,
    /// The keys.
    pub access_key_id: String,
    /// The secret.
    pub secret_access_key: String,
    /// A session token, for the cases of temporary keys.
    pub token: Option<String>,
    /// The region signed for.
    pub region: String,
    /// The service signed for.
    pub service: String,
    /// The time signed at.
    pub at: SystemTime,
    /// Whether the path is normalised (dot segments, repeated slashes).
    pub normalize: bool,
    /// Whether the signer adds `x-amz-content-sha256`.
    pub sign_body: bool,
    /// Whether the session token is added after signing, unsigned.
    pub omit_session_token: bool,
}

/// A request as the suite writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Its method.
    pub method: String,
    /// Its path and query.
    pub target: String,
    /// Its headers, as written (a folded value joined by single spaces).
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

impl Written {
    /// The value of the header `name` (the first, in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The suite's `v4` cases, every one that has a context.
///
/// # Panics
/// When the suite cannot be found or read: the test that asks for it fails, saying so.
pub fn vectors() -> Vec<Vector> {
    let dir = suite_dir().join("v4");
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the SigV4 suite at {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for case in entries {
        let context = case.join("context.json");
        let Ok(context) = std::fs::read_to_string(&context) else {
            continue;
        };
        let context: serde_json::Value = serde_json::from_str(&context).unwrap();
        let text = |file: &str| std::fs::read(case.join(file)).unwrap();
        let credentials = &context["credentials"];
        let string = |v: &serde_json::Value| v.as_str().unwrap().to_owned();
        out.push(Vector {
            name: case.file_name().unwrap().to_string_lossy().into_owned(),
            request: written(&text("request.txt")),
            signed: written(&text("header-signed-request.txt")),
            access_key_id: string(&credentials["access_key_id"]),
            secret_access_key: string(&credentials["secret_access_key"]),
            token: credentials["token"].as_str().map(str::to_owned),
            region: string(&context["region"]),
            service: string(&context["service"]),
            at: timestamp(context["timestamp"].as_str().unwrap()),
            normalize: context["normalize"].as_bool().unwrap_or(true),
            sign_body: context["sign_body"].as_bool().unwrap_or(false),
            omit_session_token: context["omit_session_token"].as_bool().unwrap_or(false),
        });
    }
    out
}

/// Where `aws-sigv4`'s package keeps the suite.
fn suite_dir() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new(cargo)
        // This machine's packages only: offline, the packages of other platforms (Windows'
        // console crates) may never have been downloaded here.
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", "host-tuple"])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let package = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "aws-sigv4")
        .expect("the host depends on aws-sigv4");
    let manifest = Path::new(package["manifest_path"].as_str().unwrap());
    manifest.parent().unwrap().join("aws-signing-test-suite")
}

/// A request in the suite's text form.
fn written(bytes: &[u8]) -> Written {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = match text.find("\n\n") {
        Some(at) => (&text[..at], text[at + 2..].as_bytes().to_vec()),
        None => (&text[..], Vec::new()),
    };
    let mut lines = head.lines();
    let first = lines.next().unwrap();
    let method = first.split(' ').next().unwrap().to_owned();
    let target = first[method.len() + 1..first.rfind(" HTTP/").unwrap()].to_owned();
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines {
        if line.starts_with([' ', '\t']) {
            let last = headers.last_mut().unwrap();
            last.1.push(' ');
            last.1.push_str(line.trim());
        } else if let Some((name, value)) = line.split_once(':') {
            headers.push((name.to_owned(), value.to_owned()));
        }
    }
    Written {
        method,
        target,
        headers,
        body,
    }
}

/// `2015-08-30T12:36:00Z` as a time.
fn timestamp(text: &str) -> SystemTime {
    let n = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap())
}
