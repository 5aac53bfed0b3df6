//! Keys: which key signed a log, pinning it, and key files that are private and never
//! overwritten.

use super::support::*;

#[test]
fn a_chain_rebuilt_with_another_key_fails_at_its_first_checkpoint() {
    let dir = fresh_log();
    let (log, witness) = (dir.path().join("log"), dir.path().join("forged-witness"));
    std::fs::remove_file(&log).unwrap();
    let mut forged = events();
    forged[50] = forged[50].clone().status(500);
    let key = AuditKey::generate().unwrap();
    let forger_public = dir.path().join("forger.pub");
    std::fs::write(
        &forger_public,
        format!(
            "sluice-audit-public-v1 {}\n",
            key.verifying_key()
                .as_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
    )
    .unwrap();
    write_log(&log, &witness, key, &forged);
    // The forged chain is consistent in itself: only the signatures give it away.
    let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["audit", "verify"])
        .arg(&log)
        .arg("--key")
        .arg(&forger_public)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let o = verify(dir.path(), &[]);
    assert_tampered(
        &o,
        "record 17 (line 17): checkpoint signature does not verify with the given key (chain \
         rebuilt or wrong key)",
    );
    // Both keys named in the one form `verify` prints and `--expect-key` takes.
    let (forger, genuine) = (
        fingerprint_of(&forger_public),
        fingerprint_of(&dir.path().join("public")),
    );
    assert!(
        said(&o).contains(&format!(
            "; it names the key {}… (the first 16 hex digits of its fingerprint), the given \
             key is {genuine}",
            &forger[.."sha256:".len() + 16]
        )),
        "{}",
        said(&o)
    );
}

#[test]
fn keygen_writes_a_pair_and_never_overwrites_it() {
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = (dir.path().join("a.key"), dir.path().join("a.pub"));
    let keygen = || {
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["audit", "keygen", "--secret"])
            .arg(&secret)
            .arg("--public")
            .arg(&public)
            .output()
            .unwrap()
    };
    let o = keygen();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let first = std::fs::read(&secret).unwrap();
    let made = audit::load_signing(&secret).unwrap();
    assert_eq!(
        audit::load_verifying(&public).unwrap(),
        made.verifying_key()
    );
    let o = keygen();
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(said(&o).contains("a.key exists already"), "{}", said(&o));
    assert_eq!(std::fs::read(&secret).unwrap(), first);
}

#[test]
fn keygen_with_one_path_for_both_keys_says_they_are_the_same() {
    let dir = tempfile::tempdir().unwrap();
    for (secret, public) in [("e.key", "e.key"), ("e.key", "./e.key")] {
        let o = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .current_dir(dir.path())
            .args(["audit", "keygen", "--secret", secret, "--public", public])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", said(&o));
        assert!(
            said(&o).contains("--secret and --public name the same file (e.key)"),
            "{}",
            said(&o)
        );
        assert!(!dir.path().join("e.key").exists(), "nothing written");
    }
}

#[test]
fn verify_names_the_key_and_a_log_rebuilt_with_a_new_key_fails_when_the_key_is_pinned() {
    let dir = fresh_log();
    let d = dir.path();
    let genuine = fingerprint_of(&d.join("public"));
    let o = with_witness(d);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        said(&o).ends_with(&format!("\nkey: {genuine}\n")),
        "{}",
        said(&o)
    );
    // Rebuilt whole: a new key, a new public key file, a new witness, a forged record.
    for f in ["log", "witness", "secret", "public"] {
        std::fs::remove_file(d.join(f)).unwrap();
    }
    let mut forged = events();
    forged[50] = forged[50].clone().status(500);
    let key = audit::generate(&d.join("secret"), &d.join("public")).unwrap();
    write_log(&d.join("log"), &d.join("witness"), key, &forged);
    let forger = fingerprint_of(&d.join("public"));
    let o = with_witness(d);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        said(&o).ends_with(&format!("\nkey: {forger}\n")),
        "{}",
        said(&o)
    );
    let o = verify(d, &["--expect-key", &genuine]);
    assert_tampered(
        &o,
        &format!(
            "the log is checked with key {forger}, not the expected {genuine}: it was \
             signed by someone else, or the key file was replaced"
        ),
    );
    // Pinned to its own key, the upper-case form is accepted too.
    let o = verify(d, &["--expect-key", &forger.to_uppercase()]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
}

#[test]
fn an_expected_key_that_is_not_a_fingerprint_is_a_usage_error() {
    let dir = fresh_log();
    let o = verify(dir.path(), &["--expect-key", "abc123"]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        said(&o).contains("`sha256:` and 64 hex digits"),
        "{}",
        said(&o)
    );
}

#[cfg(unix)]
#[test]
fn keygen_makes_private_files_under_an_open_umask() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = (dir.path().join("a.key"), dir.path().join("a.pub"));
    // The umask is per process: set it in a shell that then becomes sluice.
    let o = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 000 && exec "$0" audit keygen --secret "$1" --public "$2""#)
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .arg(&secret)
        .arg(&public)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    for file in [&secret, &public] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
    assert!(
        said(&o).contains(&format!("key {}", fingerprint_of(&public))),
        "keygen names the fingerprint: {}",
        said(&o)
    );
}
