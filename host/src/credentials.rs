//! Credentials: the one place a request's secret headers come from.
//!
//! A [`Call`](crate::execute::Call) names its credential by *label* (`team-key`), never by
//! value: the executor asks its [`Credentials`] for the headers of that label at send time,
//! for every attempt, resend and status query alike. So a secret is never written anywhere
//! (not in a call, not in the journal, not in the audit log), never shown to a plugin, and a
//! restarted host resends with the credentials it has now.
//!
//! The configuration file names where each label's secret lives ([`CredentialSource`]): an
//! environment variable (read once, at the first send that needs it) or a file (checked at
//! each send and read again when it changed, so a rotated file takes effect without a
//! restart). [`Keyring`] is the [`Credentials`] built from those sources.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::input_file;
use crate::printable::printable;

mod kept;
mod sigv4;

pub use sigv4::{AwsKeys, CALLER_SIGNATURE_HEADERS, SigV4Source, Signer, signature};

/// The largest credential file read, in bytes: a token is tens of bytes, a JWT a few KiB.
pub const MAX_CREDENTIAL_FILE_BYTES: u64 = 16 * 1024;

/// Credential headers for a provider's credential label: asked for at send time, never
/// stored, so a restarted host resends with the credentials it has now.
pub trait Credentials: Send + Sync {
    /// The headers that carry `credential` of `provider`; none when there is no such label.
    fn headers(&self, provider: &str, credential: &str) -> Vec<(String, String)>;

    /// The same headers, as the executor asks for them at each send: a source that keeps
    /// them (a [`Keyring`]) lends what it keeps, without a copy. The default gives what
    /// [`Credentials::headers`] gives.
    fn send_headers(&self, provider: &str, credential: &str) -> CredentialHeaders {
        CredentialHeaders::Made(self.headers(provider, credential))
    }

    /// Whether `provider` has a credential labelled `credential`: `Some(false)` stops a
    /// call before it is sent without its key. `None` (the default): not known here, and
    /// the call goes with whatever [`Credentials::headers`] gives.
    fn knows(&self, provider: &str, credential: &str) -> Option<bool> {
        let _ = (provider, credential);
        None
    }
}

/// Credential headers for one send ([`Credentials::send_headers`]).
pub enum CredentialHeaders {
    /// Made for this send.
    Made(Vec<(String, String)>),
    /// Kept by the source, lent.
    Kept(Arc<[(String, String)]>),
    /// None: the transport signs the request as it is sent (SigV4), with the signature's
    /// headers.
    Signed(Signer),
}

impl CredentialHeaders {
    /// No credential headers.
    pub const NONE: Self = Self::Made(Vec::new());

    /// The signer, when the request is signed at send time.
    pub fn signer(&self) -> Option<&Signer> {
        match self {
            Self::Signed(signer) => Some(signer),
            _ => None,
        }
    }
}

impl std::ops::Deref for CredentialHeaders {
    type Target = [(String, String)];

    fn deref(&self) -> &Self::Target {
        match self {
            Self::Made(headers) => headers,
            Self::Kept(headers) => headers,
            Self::Signed(_) => &[],
        }
    }
}

/// Never shows the secrets.
impl fmt::Debug for CredentialHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CredentialHeaders({} headers)", self.len())
    }
}

/// Shows that credentials are there, never what they hold.
impl fmt::Debug for dyn Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials")
    }
}

impl<F> Credentials for F
where
    F: Fn(&str, &str) -> Vec<(String, String)> + Send + Sync,
{
    fn headers(&self, provider: &str, credential: &str) -> Vec<(String, String)> {
        self(provider, credential)
    }
}

/// No credentials: every request goes out without secret headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCredentials;

impl Credentials for NoCredentials {
    fn headers(&self, _provider: &str, _credential: &str) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Where one credential's secret is read from, and how it is sent.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSource {
    /// The environment variable that holds the secret; read at the first send that finds
    /// it, then kept.
    #[serde(default)]
    pub env: Option<String>,
    /// The file that holds the secret (surrounding whitespace is trimmed); checked at each
    /// send, and read again when it changed.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// The header that carries it. Default: `authorization`.
    #[serde(default = "authorization")]
    pub header: String,
    /// What precedes the secret in the header's value. Default: `Bearer` for
    /// `authorization`, nothing for any other header.
    #[serde(default)]
    pub scheme: Option<String>,
    /// Where calls made with it go, instead of the provider's `base_url` (another region,
    /// another account's endpoint, an Azure OpenAI resource).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The path calls made with it go to, in place of theirs: `{path}` stands for the
    /// call's path after its first segment (`/v1/chat/completions` → `chat/completions`),
    /// and the call's query is added to the template's (an Azure OpenAI deployment:
    /// `/openai/deployments/gpt-4o/{path}?api-version=2024-10-21`).
    #[serde(default)]
    pub path: Option<String>,
    /// Requests are signed with AWS Signature Version 4 instead of carrying a header
    /// (Amazon Bedrock): the keys' source, the region and the service.
    #[serde(default)]
    pub sigv4: Option<SigV4Source>,
}

fn authorization() -> String {
    "authorization".to_owned()
}

/// Names where the secret comes from, never the secret.
impl fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CredentialSource")
            .field("env", &self.env)
            .field("file", &self.file)
            .field("header", &self.header)
            .field("scheme", &self.scheme)
            .field("base_url", &self.base_url)
            .field("path", &self.path)
            .field("sigv4", &self.sigv4)
            .finish()
    }
}

/// Why a credential cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The source names neither an environment variable nor a file, or both.
    #[error("give exactly one of `env` (an environment variable) or `file` (a path)")]
    NoSource,
    /// The header name is not a valid HTTP header name.
    #[error("`header` {0} is not an HTTP header name")]
    BadHeader(String),
    /// The environment variable is not set, or empty.
    #[error("the environment variable {0} is not set (or is empty): export it before starting")]
    MissingEnv(String),
    /// The environment variable does not hold UTF-8 text.
    #[error("the environment variable {0} is not UTF-8 text")]
    NotUnicode(String),
    /// The file cannot be read.
    #[error("the credential file {0}")]
    File(input_file::InputFileError),
    /// The file is empty.
    #[error("the credential file {0} is empty")]
    EmptyFile(String),
    /// The secret holds a character no header value may hold (a line break, a control).
    #[error("the secret from {0} holds a line break or a control character")]
    BadValue(String),
    /// A SigV4 credential's settings or keys are wrong.
    #[error("{0}")]
    Aws(String),
}

impl CredentialSource {
    /// The source of `env`, sent as `authorization: Bearer <secret>`.
    pub fn env(name: impl Into<String>) -> Self {
        Self {
            env: Some(name.into()),
            file: None,
            header: authorization(),
            scheme: None,
            base_url: None,
            path: None,
            sigv4: None,
        }
    }

    /// The source of the file `path`, sent as `authorization: Bearer <secret>`.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self {
            env: None,
            file: Some(path.into()),
            header: authorization(),
            scheme: None,
            base_url: None,
            path: None,
            sigv4: None,
        }
    }

    /// Sent in `header` instead, with `scheme` before the secret (`None`: the header's
    /// default).
    pub fn in_header(mut self, header: impl Into<String>, scheme: Option<&str>) -> Self {
        self.header = header.into();
        self.scheme = scheme.map(str::to_owned);
        self
    }

    /// Checks the source's shape, and that its secret can be read now.
    ///
    /// # Errors
    /// [`CredentialError`] saying what to fix.
    pub fn check(&self) -> Result<(), CredentialError> {
        match &self.sigv4 {
            Some(sigv4) => {
                if self.env.is_some() || self.file.is_some() || self.scheme.is_some() {
                    return Err(CredentialError::Aws(
                        "a SigV4 credential signs each request and takes its keys from \
                         `sigv4`: remove `env`, `file` and `scheme`"
                            .to_owned(),
                    ));
                }
                sigv4.check()
            }
            None => self.header_value().map(|_| ()),
        }
    }

    /// A SigV4 credential, signing for `region` with `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and (when set) `AWS_SESSION_TOKEN`.
    pub fn sigv4(source: SigV4Source) -> Self {
        Self {
            env: None,
            file: None,
            header: authorization(),
            scheme: None,
            base_url: None,
            path: None,
            sigv4: Some(source),
        }
    }

    /// Whether the secret's file can be read by users other than its owner (a secret in an
    /// environment variable, or on a system without Unix permissions, is not). Not refused —
    /// mounted secrets are often `0644` — but worth a `chmod 600`.
    pub fn readable_by_others(&self) -> bool {
        #[cfg(unix)]
        if let Some(path) = self
            .file
            .as_ref()
            .or(self.sigv4.as_ref().and_then(|s| s.file.as_ref()))
            && let Ok(meta) = std::fs::metadata(path)
        {
            use std::os::unix::fs::PermissionsExt as _;
            return meta.permissions().mode() & 0o044 != 0;
        }
        false
    }

    /// The header and its value, read now.
    ///
    /// # Errors
    /// [`CredentialError`] saying what to fix.
    pub fn header_value(&self) -> Result<(String, String), CredentialError> {
        if self.sigv4.is_some() {
            return Err(CredentialError::Aws(
                "a SigV4 credential has no header: it signs each request".to_owned(),
            ));
        }
        let valid_name = !self.header.is_empty()
            && self
                .header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid_name {
            return Err(CredentialError::BadHeader(
                printable(&self.header).into_owned(),
            ));
        }
        let secret = match (&self.env, &self.file) {
            (Some(var), None) => read_env(var)?,
            (None, Some(path)) => read_file(path)?,
            _ => return Err(CredentialError::NoSource),
        };
        if secret.chars().any(char::is_control) {
            // Named only when it is refused: this runs at every send.
            let origin = match (&self.env, &self.file) {
                (Some(var), _) => format!("${var}"),
                (_, Some(path)) => path.display().to_string(),
                _ => String::new(),
            };
            return Err(CredentialError::BadValue(printable(&origin).into_owned()));
        }
        let header = self.header.to_ascii_lowercase();
        let scheme = match &self.scheme {
            Some(s) => s.trim(),
            None if header == "authorization" => "Bearer",
            None => "",
        };
        let value = if scheme.is_empty() {
            secret
        } else {
            format!("{scheme} {secret}")
        };
        Ok((header, value))
    }
}

fn read_env(var: &str) -> Result<String, CredentialError> {
    match std::env::var(var) {
        // Kept as read when it needs no trimming, as it nearly always does not.
        Ok(v) if v.trim().len() == v.len() && !v.is_empty() => Ok(v),
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        Ok(_) | Err(std::env::VarError::NotPresent) => {
            Err(CredentialError::MissingEnv(printable(var).into_owned()))
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(CredentialError::NotUnicode(printable(var).into_owned()))
        }
    }
}

fn read_file(path: &Path) -> Result<String, CredentialError> {
    let text =
        input_file::read_text(path, MAX_CREDENTIAL_FILE_BYTES).map_err(CredentialError::File)?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(CredentialError::EmptyFile(
            printable(&path.display().to_string()).into_owned(),
        ));
    }
    Ok(secret.to_owned())
}

/// The credentials a configuration names: per provider, per label, a [`CredentialSource`]
/// added at each send (a file's header kept in memory while the file is unchanged, an
/// environment variable's once read).
#[derive(Debug, Clone, Default)]
pub struct Keyring {
    sources: BTreeMap<String, BTreeMap<String, Source>>,
}

/// One label's source, and what was last read from its file.
#[derive(Debug, Clone)]
struct Source {
    source: CredentialSource,
    kept: Arc<kept::Kept>,
    keys: Arc<kept::Kept<Arc<AwsKeys>>>,
}

impl Keyring {
    /// An empty keyring.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `source` as `provider`'s credential `label`.
    pub fn insert(&mut self, provider: &str, label: &str, source: CredentialSource) {
        let source = Source {
            source,
            kept: Arc::default(),
            keys: Arc::default(),
        };
        self.sources
            .entry(provider.to_owned())
            .or_default()
            .insert(label.to_owned(), source);
    }

    /// Whether `provider` has the credential `label`.
    pub fn has(&self, provider: &str, label: &str) -> bool {
        self.get(provider, label).is_some()
    }

    /// Whether any credential is configured for `provider`.
    pub fn has_provider(&self, provider: &str) -> bool {
        self.sources.get(provider).is_some_and(|l| !l.is_empty())
    }

    fn get(&self, provider: &str, label: &str) -> Option<&Source> {
        self.sources.get(provider)?.get(label)
    }
}

impl Credentials for Keyring {
    /// A provider with no credentials configured takes calls without any (a local
    /// gateway, a test server); one with credentials knows exactly its labels.
    fn knows(&self, provider: &str, credential: &str) -> Option<bool> {
        self.has_provider(provider)
            .then(|| self.has(provider, credential))
    }

    fn headers(&self, provider: &str, credential: &str) -> Vec<(String, String)> {
        self.send_headers(provider, credential).to_vec()
    }

    fn send_headers(&self, provider: &str, credential: &str) -> CredentialHeaders {
        let Some(Source { source, kept, keys }) = self.get(provider, credential) else {
            return CredentialHeaders::Made(Vec::new());
        };
        let header = match (&source.sigv4, &source.file) {
            (Some(sigv4), _) => {
                let read = || sigv4.keys().map(Arc::new);
                let keys = match &sigv4.file {
                    Some(path) => keys.kept_from_file(path, read),
                    None => keys.kept_from_env(read),
                };
                keys.map(|keys| {
                    CredentialHeaders::Signed(Signer::new(keys, &sigv4.region, &sigv4.service))
                })
            }
            (None, Some(path)) => kept.header(source, path).map(CredentialHeaders::Kept),
            (None, None) => kept.env_header(source).map(CredentialHeaders::Kept),
        };
        match header {
            Ok(header) => header,
            Err(e) => {
                tracing::warn!(
                    provider = %printable(provider),
                    credential = %printable(credential),
                    "the credential cannot be read, the request goes without it: {e}"
                );
                CredentialHeaders::Made(Vec::new())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_secret_is_trimmed_and_sent_as_a_bearer_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "  sk-test-1\n").unwrap();
        let source = CredentialSource::file(&path);
        assert_eq!(
            source.header_value().unwrap(),
            ("authorization".into(), "Bearer sk-test-1".into())
        );
        let raw = CredentialSource::file(&path).in_header("X-Api-Key", None);
        assert_eq!(
            raw.header_value().unwrap(),
            ("x-api-key".into(), "sk-test-1".into())
        );
    }

    #[test]
    fn a_rotated_file_is_read_again_at_the_next_send() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "old").unwrap();
        let mut keyring = Keyring::new();
        keyring.insert("openai", "team", CredentialSource::file(&path));
        assert_eq!(keyring.headers("openai", "team")[0].1, "Bearer old");
        std::fs::write(&path, "new").unwrap();
        assert_eq!(keyring.headers("openai", "team")[0].1, "Bearer new");
        assert!(keyring.headers("openai", "other").is_empty());
        assert_eq!(keyring.knows("openai", "team"), Some(true));
        assert_eq!(
            keyring.knows("openai", "other"),
            Some(false),
            "stopped before sending"
        );
        assert_eq!(
            keyring.knows("gateway", "any"),
            None,
            "a provider without credentials"
        );
    }

    #[test]
    fn a_missing_variable_an_empty_file_and_a_line_break_are_named() {
        let missing = CredentialSource::env("SLUICE_TEST_SURELY_UNSET_VARIABLE");
        let e = missing.check().unwrap_err().to_string();
        assert!(e.contains("SLUICE_TEST_SURELY_UNSET_VARIABLE"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let e = CredentialSource::file(&empty).check().unwrap_err();
        assert!(matches!(e, CredentialError::EmptyFile(_)), "{e}");
        let split = dir.path().join("split");
        std::fs::write(&split, "a\nb").unwrap();
        let e = CredentialSource::file(&split).check().unwrap_err();
        assert!(matches!(e, CredentialError::BadValue(_)), "{e}");
        let both = CredentialSource {
            env: Some("X".into()),
            ..CredentialSource::file(&split)
        };
        assert!(matches!(both.check(), Err(CredentialError::NoSource)));
        let header = CredentialSource::file(&empty).in_header("bad header", None);
        assert!(matches!(header.check(), Err(CredentialError::BadHeader(_))));
    }

    #[test]
    #[cfg(unix)]
    fn a_secret_file_others_can_read_is_told_apart() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "sk").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(!CredentialSource::file(&path).readable_by_others());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(CredentialSource::file(&path).readable_by_others());
        assert!(!CredentialSource::env("X").readable_by_others());
    }

    #[test]
    fn the_debug_form_names_the_source_never_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "sk-live-secret").unwrap();
        let mut keyring = Keyring::new();
        keyring.insert("openai", "team", CredentialSource::file(&path));
        let shown = format!("{keyring:?}");
        assert!(!shown.contains("sk-live-secret"), "{shown}");
        assert!(shown.contains("key"), "{shown}");
    }
}
