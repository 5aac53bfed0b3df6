//! Key files, and pinning the key a log is verified with.

use super::super::*;
use super::key;

#[test]
fn key_files_round_trip_and_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = (dir.path().join("audit.key"), dir.path().join("audit.pub"));
    let made = generate(&secret, &public).unwrap();
    let loaded = load_signing(&secret).unwrap();
    assert_eq!(loaded.key_id(), made.key_id());
    assert_eq!(load_verifying(&public).unwrap(), made.verifying_key());
    assert!(
        std::fs::read_to_string(&public)
            .unwrap()
            .starts_with("sluice-audit-public-v1 ")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let again = generate(&secret, &dir.path().join("other.pub")).unwrap_err();
    assert!(matches!(again, KeyError::Exists { .. }), "{again}");
    assert!(!dir.path().join("other.pub").exists());
    assert_eq!(load_signing(&secret).unwrap().key_id(), made.key_id());
}

#[test]
fn key_file_errors_name_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = (dir.path().join("audit.key"), dir.path().join("audit.pub"));
    generate(&secret, &public).unwrap();
    let msg = load_verifying(&secret).unwrap_err().to_string();
    assert!(msg.contains("audit.key: it holds the secret key"), "{msg}");
    let msg = load_signing(&public).unwrap_err().to_string();
    assert!(msg.contains("audit.pub: it holds a public key"), "{msg}");
    let short = dir.path().join("short.pub");
    std::fs::write(&short, "sluice-audit-public-v1 abcd\n").unwrap();
    let msg = load_verifying(&short).unwrap_err().to_string();
    assert!(
        msg.contains("short.pub: after `sluice-audit-public-v1` it must hold 64 hex"),
        "{msg}"
    );
    let msg = load_verifying(&dir.path().join("missing.pub"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing.pub"), "{msg}");
}

#[test]
fn a_pinned_key_other_than_the_signer_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such.log");
    let pinned = VerifyOptions {
        expect_key: Some(key(2).fingerprint()),
        ..VerifyOptions::default()
    };
    let err = verify_with(&missing, &key(1).verifying_key(), &pinned).unwrap_err();
    assert!(
        matches!(err, VerifyError::UnexpectedKey { given, expected }
            if given == key(1).fingerprint() && expected == key(2).fingerprint()),
        "{err}"
    );
}
