//! Which key signed a log, in a form a person can compare and pin.
//!
//! A signature proves only that the log was signed by the key it was checked with. Whoever
//! can replace the log can replace the public key file beside it too, and rebuild the whole
//! log — chain, checkpoints and witness — under a key of their own. What tells that apart is
//! the key itself: the verifier prints its [`Fingerprint`], and an auditor who noted it once
//! (from `sluice audit keygen`, or a first run) pins it with `--expect-key`.

use std::fmt;
use std::str::FromStr;

use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};

use super::record::{from_hex, to_hex};

/// SHA-256 of a public key's 32 bytes; shown as `sha256:` and 64 hex digits.
///
/// ```
/// use sluice::{AuditKey, Fingerprint};
///
/// let key = AuditKey::from_bytes(&[7; 32]);
/// let shown = key.fingerprint().to_string();
/// assert!(shown.starts_with("sha256:") && shown.len() == 7 + 64);
/// assert_eq!(shown.parse::<Fingerprint>().unwrap(), key.fingerprint());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of `key`.
    pub fn of(key: &VerifyingKey) -> Self {
        Self(Sha256::digest(key.as_bytes()).into())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", to_hex(&self.0))
    }
}

/// A fingerprint that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a key fingerprint: give `sha256:` and 64 hex digits, as `sluice audit \
     verify` and `sluice audit keygen` print it"
)]
pub struct BadFingerprint(pub String);

impl FromStr for Fingerprint {
    type Err = BadFingerprint;

    /// Parses `sha256:<64 hex>` (or the 64 hex digits alone), in either case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let hex = text
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case("sha256:"))
            .map_or(text, |_| &text[7..]);
        from_hex::<32>(hex)
            .map(Self)
            .ok_or_else(|| BadFingerprint(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_is_sha256_of_the_key_and_parses_back_in_any_case() {
        let key = super::super::AuditKey::from_bytes(&[7; 32]).verifying_key();
        let fp = Fingerprint::of(&key);
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        assert_eq!(fp.to_string(), format!("sha256:{}", to_hex(&digest)));
        assert_eq!(fp.to_string().to_uppercase().parse::<Fingerprint>(), Ok(fp));
        assert_eq!(to_hex(&digest).parse::<Fingerprint>(), Ok(fp));
        for bad in ["", "sha256:", "sha256:abc", "md5:00", &"g".repeat(64)] {
            assert!(bad.parse::<Fingerprint>().is_err(), "{bad}");
        }
    }
}
