//! AWS Signature Version 4: a credential that signs each request rather than adding a fixed
//! header (Amazon Bedrock).
//!
//! The signature covers the request's time, so it is made at send time, for every attempt,
//! resend and status query alike: a call that waited in the queue or a retry delay for longer
//! than AWS's five minutes is not refused as "Signature expired". It is made by the transport
//! on the request exactly as the client sends it (its URL after the host's rewriting, its
//! `Host`, its body), so what is signed is what arrives.
//!
//! The keys — an access key id, its secret and, for temporary credentials, a session token —
//! come from environment variables (AWS's own names by default) or from a file in the AWS
//! shared credentials format (`[profile]` sections of `aws_access_key_id`,
//! `aws_secret_access_key`, `aws_session_token`). A file is read again when it changed, so
//! temporary credentials refreshed by another process are used at the next send.
//!
//! What is signed: `host`, `content-type` and every `x-amz-*` header, the method, the path and
//! query, and the body's SHA-256. Other headers (a trace context, the user agent) are sent
//! unsigned, so a hop that rewrites them cannot break the signature. A caller's own signature
//! (its `authorization`, `x-amz-date`, `x-amz-security-token`, `x-amz-content-sha256`) is
//! dropped before signing: it would be stale, or another account's.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use serde::Deserialize;

use super::CredentialError;
use crate::input_file;
use crate::printable::printable;

/// The headers a caller's own signature is made of: dropped before sluice signs.
pub const CALLER_SIGNATURE_HEADERS: [&str; 4] = [
    "authorization",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
];

/// Where a SigV4 credential's keys come from, and what it signs for
/// (`[providers.NAME.credentials.LABEL.sigv4]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigV4Source {
    /// The AWS region signed for (`us-east-1`).
    pub region: String,
    /// The service signed for. Default: `bedrock`.
    #[serde(default = "bedrock")]
    pub service: String,
    /// A file in the AWS shared credentials format; without it, the keys come from the
    /// environment.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// The file's profile (section). Default: `default`.
    #[serde(default)]
    pub profile: Option<String>,
    /// The variable holding the access key id. Default: `AWS_ACCESS_KEY_ID`.
    #[serde(default)]
    pub access_key_id_env: Option<String>,
    /// The variable holding the secret access key. Default: `AWS_SECRET_ACCESS_KEY`.
    #[serde(default)]
    pub secret_access_key_env: Option<String>,
    /// The variable holding a session token. Default: `AWS_SESSION_TOKEN`, used when set;
    /// a variable named here must be set.
    #[serde(default)]
    pub session_token_env: Option<String>,
}

fn bedrock() -> String {
    "bedrock".to_owned()
}

/// One set of AWS keys. Never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsKeys {
    /// The access key id (`AKIA…`, `ASIA…` for temporary keys).
    pub access_key_id: String,
    /// Its secret.
    pub secret_access_key: String,
    /// The session token of temporary credentials.
    pub session_token: Option<String>,
}

/// Names the key id, never the secret or the token.
impl fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsKeys")
            .field("access_key_id", &self.access_key_id)
            .field("session_token", &self.session_token.is_some())
            .finish_non_exhaustive()
    }
}

impl SigV4Source {
    /// A source for `region`, signing for Bedrock with the keys in AWS's variables.
    pub fn env(region: impl Into<String>) -> Self {
        Self {
            region: region.into(),
            service: bedrock(),
            file: None,
            profile: None,
            access_key_id_env: None,
            secret_access_key_env: None,
            session_token_env: None,
        }
    }

    /// Checks the region and service names, and that the keys can be read now.
    ///
    /// # Errors
    /// [`CredentialError`] saying what to fix.
    pub fn check(&self) -> Result<(), CredentialError> {
        for (key, value) in [("region", &self.region), ("service", &self.service)] {
            let valid = !value.is_empty()
                && value
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !valid {
                return Err(CredentialError::Aws(format!(
                    "`sigv4.{key}` {} is not an AWS {key} name (lower-case letters, digits \
                     and `-`, as `us-east-1`)",
                    printable(value)
                )));
            }
        }
        if self.file.is_none() && self.profile.is_some() {
            return Err(CredentialError::Aws(
                "`sigv4.profile` names a section of `sigv4.file`: give the file too".to_owned(),
            ));
        }
        if self.file.is_some()
            && (self.access_key_id_env.is_some()
                || self.secret_access_key_env.is_some()
                || self.session_token_env.is_some())
        {
            return Err(CredentialError::Aws(
                "give the keys either in `sigv4.file` or in environment variables \
                 (`sigv4.*_env`), not both"
                    .to_owned(),
            ));
        }
        self.keys().map(|_| ())
    }

    /// The keys, read now.
    ///
    /// # Errors
    /// [`CredentialError`] naming the variable, the file or the profile at fault.
    pub fn keys(&self) -> Result<AwsKeys, CredentialError> {
        match &self.file {
            Some(path) => self.keys_from_file(path),
            None => self.keys_from_env(),
        }
    }

    fn keys_from_env(&self) -> Result<AwsKeys, CredentialError> {
        let named = |v: &Option<String>, default: &str| v.clone().unwrap_or(default.to_owned());
        let access_key_id = super::read_env(&named(&self.access_key_id_env, "AWS_ACCESS_KEY_ID"))?;
        let secret_access_key =
            super::read_env(&named(&self.secret_access_key_env, "AWS_SECRET_ACCESS_KEY"))?;
        let session_token = match &self.session_token_env {
            Some(var) => Some(super::read_env(var)?),
            None => super::read_env("AWS_SESSION_TOKEN").ok(),
        };
        checked(AwsKeys {
            access_key_id,
            secret_access_key,
            session_token,
        })
    }

    fn keys_from_file(&self, path: &Path) -> Result<AwsKeys, CredentialError> {
        let text = input_file::read_text(path, super::MAX_CREDENTIAL_FILE_BYTES)
            .map_err(CredentialError::File)?;
        let profile = self.profile.as_deref().unwrap_or("default");
        let shown = || printable(&path.display().to_string()).into_owned();
        let Some(section) = profile_section(&text, profile) else {
            return Err(CredentialError::Aws(format!(
                "the AWS credentials file {} has no profile [{}]",
                shown(),
                printable(profile)
            )));
        };
        let field = |name: &str| {
            section
                .iter()
                .rev()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| (*v).to_owned())
                .filter(|v| !v.is_empty())
        };
        let needed = |name: &str| {
            field(name).ok_or_else(|| {
                CredentialError::Aws(format!(
                    "the profile [{}] of the AWS credentials file {} has no `{name}`",
                    printable(profile),
                    shown()
                ))
            })
        };
        checked(AwsKeys {
            access_key_id: needed("aws_access_key_id")?,
            secret_access_key: needed("aws_secret_access_key")?,
            session_token: field("aws_session_token"),
        })
    }
}

/// Refuses keys no header could carry.
fn checked(keys: AwsKeys) -> Result<AwsKeys, CredentialError> {
    let parts = [
        Some(&keys.access_key_id),
        Some(&keys.secret_access_key),
        keys.session_token.as_ref(),
    ];
    if parts
        .into_iter()
        .flatten()
        .any(|p| p.chars().any(char::is_control))
    {
        return Err(CredentialError::Aws(
            "an AWS key holds a line break or a control character".to_owned(),
        ));
    }
    Ok(keys)
}

/// The `key = value` lines of `profile`'s section of an AWS shared credentials (or config)
/// file: `[name]`, or `[profile name]` as the config file writes it. `None`: no such section.
fn profile_section<'t>(text: &'t str, profile: &str) -> Option<Vec<(&'t str, &'t str)>> {
    let mut found: Option<Vec<(&str, &str)>> = None;
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim();
            let name = name.strip_prefix("profile ").map_or(name, str::trim);
            inside = name == profile;
            if inside {
                found.get_or_insert_with(Vec::new);
            }
            continue;
        }
        if inside
            && let Some((key, value)) = line.split_once('=')
            && let Some(section) = found.as_mut()
        {
            section.push((key.trim(), value.trim()));
        }
    }
    found
}

/// A SigV4 credential's signer for one send: its keys, as read for it, and what they sign
/// for.
#[derive(Clone)]
pub struct Signer {
    keys: Arc<AwsKeys>,
    region: Arc<str>,
    service: Arc<str>,
}

/// Names what it signs for, never the keys.
impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("region", &self.region)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer with `keys`, for `region` and `service`.
    pub fn new(keys: Arc<AwsKeys>, region: &str, service: &str) -> Self {
        Self {
            keys,
            region: region.into(),
            service: service.into(),
        }
    }

    /// Signs `request` (whose body is `body`) as of `at`: drops a caller's signature, and
    /// sets `authorization`, `x-amz-date` and, for temporary keys, `x-amz-security-token`.
    /// `host`, `content-type` and the `x-amz-*` headers are signed.
    ///
    /// # Errors
    /// Why the request cannot be signed (a URL without a host, a header that is not text).
    pub fn sign<B>(
        &self,
        request: &mut http::Request<B>,
        body: &[u8],
        at: SystemTime,
    ) -> Result<(), String> {
        for name in CALLER_SIGNATURE_HEADERS {
            request.headers_mut().remove(name);
        }
        let signed: Vec<(&str, &str)> = request
            .headers()
            .iter()
            .filter(|(name, _)| {
                let name = name.as_str();
                name == "host" || name == "content-type" || name.starts_with("x-amz-")
            })
            .map(|(name, value)| {
                let value = value
                    .to_str()
                    .map_err(|_| format!("the header `{name}` is not text and cannot be signed"))?;
                Ok((name.as_str(), value))
            })
            .collect::<Result<_, String>>()?;
        let uri = request.uri().to_string();
        let made = signature(
            &self.keys,
            (&self.region, &self.service),
            at,
            (request.method().as_str(), &uri),
            signed,
            body,
        )?;
        let headers = request.headers_mut();
        for (name, value, sensitive) in made {
            let mut value = http::HeaderValue::from_str(&value)
                .map_err(|_| format!("the signature's header `{name}` cannot be sent"))?;
            value.set_sensitive(sensitive);
            headers.insert(name, value);
        }
        Ok(())
    }
}

/// The headers that sign a request of `method` to `uri` (absolute, as sent) with exactly the
/// `headers` given and `body`, as of `at`, for `(region, service)`: each name, its value, and
/// whether it is a secret.
///
/// # Errors
/// Why it cannot be signed.
pub fn signature(
    keys: &AwsKeys,
    (region, service): (&str, &str),
    at: SystemTime,
    (method, uri): (&str, &str),
    headers: Vec<(&str, &str)>,
    body: &[u8],
) -> Result<Vec<(&'static str, String, bool)>, String> {
    let identity = aws_credential_types::Credentials::new(
        &keys.access_key_id,
        &keys.secret_access_key,
        keys.session_token.clone(),
        None,
        "sluice",
    )
    .into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(at)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("cannot sign: {e}"))?
        .into();
    let signable =
        SignableRequest::new(method, uri, headers.into_iter(), SignableBody::Bytes(body))
            .map_err(|e| format!("cannot sign a request to {uri}: {e}"))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| format!("cannot sign a request to {uri}: {e}"))?
        .into_parts();
    let (headers, _) = instructions.into_parts();
    Ok(headers
        .into_iter()
        .map(|h| {
            // Kept out of HTTP/2's header table with the token, as a credential header is.
            let sensitive = h.sensitive() || h.name() == "authorization";
            (h.name(), h.value().to_owned(), sensitive)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> AwsKeys {
        AwsKeys {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)
    }

    #[test]
    fn the_published_vanilla_request_signs_as_published() {
        // `get-vanilla` of AWS's SigV4 test suite (2015-08-30T12:36:00Z).
        let made = signature(
            &keys(),
            ("us-east-1", "service"),
            at(1_440_938_160),
            ("GET", "https://example.amazonaws.com/"),
            vec![("host", "example.amazonaws.com")],
            b"",
        )
        .unwrap();
        let auth = made.iter().find(|(n, ..)| *n == "authorization").unwrap();
        assert_eq!(
            auth.1,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        assert!(auth.2, "the signature is a secret header");
    }

    #[test]
    fn a_callers_signature_is_replaced_and_only_stable_headers_are_signed() {
        let mut request = http::Request::post(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m%3A0/converse",
        )
        .header("authorization", "AWS4-HMAC-SHA256 stale")
        .header("x-amz-date", "20000101T000000Z")
        .header("x-amz-security-token", "old")
        .header("content-type", "application/json")
        .header(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )
        .body(())
        .unwrap();
        let signer = Signer::new(
            Arc::new(AwsKeys {
                session_token: Some("token-1".into()),
                ..keys()
            }),
            "us-east-1",
            "bedrock",
        );
        signer.sign(&mut request, b"{}", at(1_800_000_000)).unwrap();
        let h = request.headers();
        assert_eq!(h.get_all("authorization").iter().count(), 1);
        let auth = h["authorization"].to_str().unwrap();
        assert!(
            auth.contains("/us-east-1/bedrock/aws4_request")
                && auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
            "{auth}"
        );
        assert!(h["authorization"].is_sensitive());
        assert_eq!(h["x-amz-date"], "20270115T080000Z");
        assert_eq!(h["x-amz-security-token"], "token-1");
        assert!(
            h.contains_key("traceparent"),
            "other headers are sent, unsigned"
        );
    }

    #[test]
    fn keys_come_from_a_profile_of_a_shared_credentials_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials");
        std::fs::write(
            &path,
            "# keys\n[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = s1\n\n\
             [profile bedrock]\naws_access_key_id=ASIATEMP\naws_secret_access_key=s2\n\
             aws_session_token = tok\n",
        )
        .unwrap();
        let source = SigV4Source {
            file: Some(path.clone()),
            ..SigV4Source::env("eu-west-1")
        };
        let keys = source.keys().unwrap();
        assert_eq!(keys.access_key_id, "AKIADEFAULT");
        assert_eq!(keys.session_token, None);
        let temp = SigV4Source {
            profile: Some("bedrock".into()),
            ..source.clone()
        };
        let keys = temp.keys().unwrap();
        assert_eq!(
            (keys.access_key_id.as_str(), keys.session_token.as_deref()),
            ("ASIATEMP", Some("tok"))
        );
        assert!(
            !format!("{keys:?}").contains("s2"),
            "the secret is never shown"
        );
        let missing = SigV4Source {
            profile: Some("prod".into()),
            ..source
        };
        let e = missing.check().unwrap_err().to_string();
        assert!(e.contains("[prod]") && e.contains("credentials"), "{e}");
    }

    #[test]
    fn a_bad_region_and_missing_keys_are_named() {
        let e = SigV4Source::env("US East").check().unwrap_err().to_string();
        assert!(e.contains("sigv4.region") && e.contains("US East"), "{e}");
        let source = SigV4Source {
            access_key_id_env: Some("SLUICE_TEST_SURELY_UNSET_AWS_KEY".into()),
            ..SigV4Source::env("us-east-1")
        };
        let e = source.check().unwrap_err().to_string();
        assert!(e.contains("SLUICE_TEST_SURELY_UNSET_AWS_KEY"), "{e}");
    }
}
