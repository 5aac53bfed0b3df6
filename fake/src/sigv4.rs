//! Checking AWS Signature Version 4 as AWS does, written apart from the signer it checks.
//!
//! A fake that speaks Bedrock ([`crate::Style::Bedrock`]) refuses what AWS refuses: a request
//! without a signature, one signed with another key, for another region or service, one whose
//! signature does not match what arrived (a byte of the body, a signed header, the path or the
//! query changed), and one whose `x-amz-date` is more than five minutes from the fake's clock
//! ("Signature expired"). The canonical request is built from the request as received: the
//! path's dot segments removed and each byte outside the unreserved set percent-encoded (so an
//! encoded `%3A` is encoded again, as services other than S3 expect), the query's pairs
//! decoded, encoded again and sorted, the signed headers' values trimmed and their inner
//! spaces folded.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use hmac::{Hmac, Mac as _};
use sha2::{Digest as _, Sha256};

/// The keys a fake accepts, and what they sign for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsAccount {
    /// The access key id.
    pub access_key_id: String,
    /// Its secret.
    pub secret_access_key: String,
    /// A session token every request must carry (`x-amz-security-token`), for temporary keys.
    pub session_token: Option<String>,
    /// The region signed for.
    pub region: String,
    /// The service signed for.
    pub service: String,
    /// How far a signature's time may be from the fake's clock. AWS allows five minutes.
    pub max_skew: Duration,
}

impl AwsAccount {
    /// Keys for `region`'s Bedrock, with AWS's five minutes of skew.
    pub fn new(access_key_id: &str, secret_access_key: &str, region: &str) -> Self {
        Self {
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            session_token: None,
            region: region.to_owned(),
            service: "bedrock".to_owned(),
            max_skew: Duration::from_secs(300),
        }
    }
}

/// A request as it arrived, for checking.
#[derive(Debug, Clone, Copy)]
pub struct Arrived<'a> {
    /// Its method.
    pub method: &'a str,
    /// Its path and query, as sent (`/model/m%3A0/converse?x=1`).
    pub target: &'a str,
    /// Its headers, names in any case, in the order received.
    pub headers: &'a [(String, String)],
    /// Its body.
    pub body: &'a [u8],
}

/// Why a request is refused, in AWS's words: the error type (`x-amzn-errortype`) and the
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `MissingAuthenticationTokenException`, `UnrecognizedClientException` or
    /// `InvalidSignatureException`.
    pub kind: &'static str,
    /// What AWS says.
    pub message: String,
}

fn refuse(kind: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        kind,
        message: message.into(),
    }
}

const INVALID: &str = "InvalidSignatureException";

impl AwsAccount {
    /// Checks `request`'s signature as of `now`.
    ///
    /// # Errors
    /// The [`Refusal`] AWS would answer with (403).
    pub fn check(&self, request: &Arrived<'_>, now: SystemTime) -> Result<(), Refusal> {
        let header = |name: &str| {
            request
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let Some(authorization) = header("authorization") else {
            return Err(refuse(
                "MissingAuthenticationTokenException",
                "Missing Authentication Token",
            ));
        };
        let auth = parse_authorization(authorization).ok_or_else(|| {
            refuse(
                "IncompleteSignatureException",
                format!("Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters. Authorization={authorization}"),
            )
        })?;
        let scope: Vec<&str> = auth.credential.split('/').collect();
        let [key_id, date, region, service, "aws4_request"] = scope[..] else {
            return Err(refuse(
                INVALID,
                format!(
                    "Credential should be scoped to a valid region, not '{}'.",
                    auth.credential
                ),
            ));
        };
        if key_id != self.access_key_id {
            return Err(refuse(
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            ));
        }
        if region != self.region {
            return Err(refuse(
                INVALID,
                format!(
                    "Credential should be scoped to a valid region. (got {region}, expected {})",
                    self.region
                ),
            ));
        }
        if service != self.service {
            return Err(refuse(
                INVALID,
                format!(
                    "Credential should be scoped to correct service: '{}'.",
                    self.service
                ),
            ));
        }
        if let Some(token) = &self.session_token
            && header("x-amz-security-token") != Some(token.as_str())
        {
            return Err(refuse(
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
            ));
        }
        let Some(amz_date) = header("x-amz-date") else {
            return Err(refuse(
                "IncompleteSignatureException",
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
            ));
        };
        let signed_at = parse_amz_date(amz_date).ok_or_else(|| {
            refuse(
                INVALID,
                format!("Date must be in ISO-8601 'basic format'. Got '{amz_date}'."),
            )
        })?;
        if !amz_date.starts_with(date) {
            return Err(refuse(
                INVALID,
                format!(
                    "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{date}' != '{}'",
                    &amz_date[..8]
                ),
            ));
        }
        let skew = now
            .duration_since(signed_at)
            .or_else(|_| signed_at.duration_since(now))
            .unwrap_or_default();
        if skew > self.max_skew {
            return Err(refuse(
                INVALID,
                format!(
                    "Signature expired: {amz_date} is now earlier than {} ({} - {} min.)",
                    amz(now - self.max_skew),
                    amz(now),
                    self.max_skew.as_secs() / 60
                ),
            ));
        }
        let canonical = canonical_request(request, &auth.signed_headers);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{}\n{}",
            auth.credential.split_once('/').map_or("", |(_, s)| s),
            hex(&Sha256::digest(canonical.as_bytes()))
        );
        let mut key = hmac(format!("AWS4{}", self.secret_access_key).as_bytes(), date);
        for part in [region, service, "aws4_request"] {
            key = hmac(&key, part);
        }
        let expected = hex(&hmac(&key, &to_sign));
        if expected != auth.signature {
            return Err(refuse(
                INVALID,
                format!(
                    "The request signature we calculated does not match the signature you \
                     provided. Check your AWS Secret Access Key and signing method. Consult \
                     the service documentation for details.\n\nThe Canonical String for this \
                     request should have been\n'{canonical}'\n\nThe String-to-Sign should have \
                     been\n'{to_sign}'\n"
                ),
            ));
        }
        Ok(())
    }
}

/// The three parts of `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`.
struct Authorization<'a> {
    credential: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn parse_authorization(value: &str) -> Option<Authorization<'_>> {
    let rest = value.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',').map(str::trim) {
        let (name, value) = part.split_once('=')?;
        match name {
            "Credential" => credential = Some(value),
            "SignedHeaders" => signed = Some(value),
            "Signature" => signature = Some(value),
            _ => return None,
        }
    }
    Some(Authorization {
        credential: credential?,
        signed_headers: signed?.split(';').collect(),
        signature: signature?,
    })
}

/// The canonical request of `request`, signing `signed` headers.
pub fn canonical_request(request: &Arrived<'_>, signed: &[&str]) -> String {
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((request.target, ""));
    let mut out = String::new();
    out.push_str(request.method);
    out.push('\n');
    out.push_str(&encode(&normalized(path), false));
    out.push('\n');
    out.push_str(&canonical_query(query));
    out.push('\n');
    for name in signed {
        let values: Vec<String> = request
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        let _ = writeln!(out, "{}:{}", name.to_ascii_lowercase(), values.join(","));
    }
    out.push('\n');
    out.push_str(&signed.join(";"));
    out.push('\n');
    out.push_str(&hex(&Sha256::digest(request.body)));
    out
}

/// `path` with its `.` and `..` segments resolved and runs of `/` made one.
fn normalized(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = format!("/{}", segments.join("/"));
    if path.ends_with('/') && out.len() > 1 {
        out.push('/');
    }
    out
}

/// The query's pairs, decoded, encoded again, and sorted.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (encode(&decode(k), true), encode(&decode(v), true))
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Every byte outside `A-Z a-z 0-9 - _ . ~` (and `/`, unless `slash` too) as `%XX`.
fn encode(text: &str, slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || (b == b'/' && !slash) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(0));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// `20150830T123600Z` as a time.
fn parse_amz_date(text: &str) -> Option<SystemTime> {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let at = time::PrimitiveDateTime::parse(text, &format).ok()?;
    Some(at.assume_utc().into())
}

/// A time as `x-amz-date` writes it.
pub fn amz(at: SystemTime) -> String {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::OffsetDateTime::from(at)
        .format(&format)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_queries_are_made_canonical_as_aws_does() {
        assert_eq!(normalized("/a/./b/../c//d/"), "/a/c/d/");
        assert_eq!(normalized("/"), "/");
        assert_eq!(
            encode("/model/m%3A0/converse", false),
            "/model/m%253A0/converse"
        );
        assert_eq!(canonical_query("b=2&a=%7e&a=1"), "a=1&a=~&b=2");
    }
}
