//! Idempotency keys derived from an action's identity.
//!
//! A write's key is what lets a provider that honours keys (Stripe) recognise a resend as the
//! same request. A key drawn at random lives only in the journal: lose the journal — a wiped
//! state directory, a database made again — and the resubmitted action gets a new key, which
//! the provider takes as a new payment. So a host with a [`KeySecret`] derives each key from
//! the action's identity instead: HMAC-SHA-256 under the secret of the task (which, through
//! the sidecar, names the tenant) and the action's name, each length-prefixed. Any resend of
//! the action after any loss of local records carries the same key; nobody without the
//! secret can compute or guess another action's key. Actions journaled before keep the key
//! they were recorded with.

use std::path::Path;

use hmac::Mac as _;

use crate::hex::to_hex;

/// The secret keys are derived under. Its `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct KeySecret([u8; 32]);

impl std::fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeySecret(..)")
    }
}

/// The shortest secret a key file may hold, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// A key file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the idempotency key secret ([journal] key_secret_file) {why}")]
pub struct KeySecretError {
    /// The file, what is wrong with it, and what to do.
    pub why: String,
}

impl KeySecret {
    /// The secret with these bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The secret a file holds: at least [`MIN_SECRET_BYTES`] bytes (surrounding whitespace
    /// trimmed), hashed to 32.
    ///
    /// # Errors
    /// [`KeySecretError`] naming the file: unreadable, or too short.
    pub fn from_file(path: &Path) -> Result<Self, KeySecretError> {
        // The read error names the file itself.
        let bytes = crate::input_file::read(path, 64 * 1024)
            .map_err(|e| KeySecretError { why: e.to_string() })?;
        let trimmed = bytes.trim_ascii();
        if trimmed.len() < MIN_SECRET_BYTES {
            return Err(KeySecretError {
                why: format!(
                    "{}: it holds {} bytes; a secret needs at least {MIN_SECRET_BYTES} (make one \
                     with `head -c 32 /dev/urandom | base64 > FILE`, and give every host of the \
                     group the same file)",
                    path.display(),
                    trimmed.len()
                ),
            });
        }
        Ok(Self(<sha2::Sha256 as sha2::Digest>::digest(trimmed).into()))
    }

    /// The idempotency key of action `action` of `task`.
    pub fn key(&self, task: &str, action: &str) -> String {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        for part in [task, action] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part.as_bytes());
        }
        let digest: [u8; 32] = mac.finalize().into_bytes().into();
        format!("sluice-{}", &to_hex(&digest)[..32])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_action_has_one_key_and_no_two_actions_share_one() {
        let s = KeySecret::from_bytes([7; 32]);
        assert_eq!(s.key("acme/t", "pay"), s.key("acme/t", "pay"));
        assert_ne!(s.key("acme/t", "pay"), s.key("acme/t", "pay2"));
        // Length-prefixed: moving a character between the names changes the key.
        assert_ne!(s.key("acme/t", "pay"), s.key("acme/tp", "ay"));
        assert_ne!(
            s.key("acme/t", "pay"),
            KeySecret::from_bytes([8; 32]).key("acme/t", "pay")
        );
        assert_eq!(s.key("a", "b").len(), "sluice-".len() + 32);
    }
}
