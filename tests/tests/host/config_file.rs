//! A host built from one configuration file, as an embedder builds it: its plugin, base URL,
//! credentials (from a file, read again at a send when it changed), extra root and state directory all come
//! from the file, and a provider that demands its key (401 otherwise) is the judge.

use std::path::Path;

use sluice::Sluice;
use sluice::contract::RequestClass;
use sluice::execute::{Call, Outcome, Reason};
use sluice::writes::{Write, WriteOutcome};
use sluice_fake_provider::tls::TestCa;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_tests::test_cache;

const CHAT: &str = "/v1/chat/completions";
const KEY: &str = "sk-from-the-key-file";

/// A configuration for the provider at `base` (TLS, trusting `ca.pem`), its key in
/// `openai.key`, its state in `state/` — every path relative to the file.
fn config(base: &str) -> String {
    format!(
        r#"
state_dir = "state"

[providers.openai]
plugin = "openai"
base_url = "{base}"
[providers.openai.credentials.team-key]
file = "openai.key"
[providers.openai.limits]
requests_per_minute = 6000

[transport]
connect_timeout_ms = 2000
extra_roots = ["ca.pem"]

[retry]
backoff_base_ms = 50
backoff_cap_ms = 200
"#
    )
}

/// Writes the configuration, the CA and the key into `dir`; returns the configuration's path.
fn lay_out(dir: &Path, ca: &TestCa, fake: &FakeProvider) -> std::path::PathBuf {
    std::fs::write(dir.join("ca.pem"), ca.ca_pem()).unwrap();
    std::fs::write(dir.join("openai.key"), format!("{KEY}\n")).unwrap();
    let path = dir.join("sluice.toml");
    std::fs::write(&path, config(&fake.url(""))).unwrap();
    path
}

fn chat() -> Call {
    Call::post(
        "openai",
        CHAT,
        br#"{"model":"gpt-4o","max_tokens":16}"#.to_vec(),
    )
    .credential("team-key")
    .tenant("acme")
    .class(RequestClass::Read)
    .header("content-type", "application/json")
}

fn status(o: &Outcome) -> Option<u16> {
    match o {
        Outcome::Succeeded { response, .. } => Some(response.status),
        Outcome::Ended(t) => t.last_status,
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_host_from_one_file_sends_with_the_key_file_and_reads_it_again_when_it_changes() {
    let ca = TestCa::new().unwrap();
    let fake = FakeProvider::start_tls(FakeConfig::new(Style::OpenAi), &ca)
        .await
        .unwrap();
    fake.require_credential("authorization", &format!("Bearer {KEY}"));
    let dir = tempfile::tempdir().unwrap();
    let path = lay_out(dir.path(), &ca, &fake);
    let sluice = Sluice::builder()
        .config_file(&path)
        .component_cache(test_cache())
        .build()
        .expect("a host from the file");

    let first = sluice.execute(&chat()).await;
    assert!(
        matches!(first, Outcome::Succeeded { attempts: 1, .. }),
        "{first:?}"
    );

    // A label the file does not name: refused here, nothing sent without a key.
    let unknown = sluice.execute(&chat().credential("someone-else")).await;
    let Outcome::Ended(ended) = &unknown else {
        panic!("an unknown label ends the call: {unknown:?}")
    };
    assert!(
        matches!(ended.reason, Reason::UnknownCredential { .. }),
        "{unknown:?}"
    );
    assert!(!ended.sent);
    assert!(
        ended
            .reason
            .to_string()
            .contains("providers.openai.credentials"),
        "{}",
        ended.reason
    );

    // The key file is read again when it changed: a rotated (here, wrong) key is what goes
    // out next.
    std::fs::write(dir.path().join("openai.key"), "sk-rotated").unwrap();
    let rotated = sluice.execute(&chat()).await;
    assert_eq!(status(&rotated), Some(401), "{rotated:?}");

    let statuses: Vec<_> = fake.attempts().iter().map(|a| a.status).collect();
    assert_eq!(statuses, [Some(200), Some(401)]);

    // The state went where the file said, the audit key with it, private.
    let state = dir.path().join("state");
    for file in [
        "journal.sqlite",
        "audit.log",
        "audit.witness",
        "audit.key",
        "audit.pub",
    ] {
        assert!(state.join(file).is_file(), "{file} is missing");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&state.join("audit.key")), 0o600);
    }
    sluice.close().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_to_a_relative_url_goes_to_the_base_url_once_and_a_restarted_host_keeps_its_key() {
    let ca = TestCa::new().unwrap();
    let fake = FakeProvider::start_tls(FakeConfig::new(Style::Stripe), &ca)
        .await
        .unwrap();
    fake.require_credential("authorization", &format!("Bearer {KEY}"));
    let dir = tempfile::tempdir().unwrap();
    let path = lay_out(dir.path(), &ca, &fake);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"openai\"", "\"stripe\"")
        .replace("providers.openai", "providers.stripe");
    std::fs::write(&path, text).unwrap();
    let build = || {
        Sluice::builder()
            .config_file(&path)
            .component_cache(test_cache())
            .build()
            .expect("a host from the file")
    };
    let sluice = build();
    let write = Write {
        task: "invoice-7".into(),
        action: "pay".into(),
        goal: "pay invoice 7".into(),
        call: Call::post("stripe", "/v1/charges", "amount=100")
            .credential("team-key")
            .header("content-type", "application/x-www-form-urlencoded"),
    };
    let outcome = sluice.write(&write).await.unwrap();
    assert!(
        matches!(outcome, WriteOutcome::Succeeded { .. }),
        "{outcome:?}"
    );
    sluice.close().unwrap();
    let public = std::fs::read(dir.path().join("state/audit.pub")).unwrap();
    drop(sluice);

    // Restarted on the same file: the same key signs, and the write is not sent again.
    let again = build();
    assert_eq!(
        std::fs::read(dir.path().join("state/audit.pub")).unwrap(),
        public
    );
    let outcome = again.write(&write).await.unwrap();
    assert!(
        matches!(outcome, WriteOutcome::Succeeded { .. }),
        "{outcome:?}"
    );
    assert_eq!(fake.stored().len(), 1, "{:?}", fake.stored());
    assert_eq!(fake.attempts().len(), 1, "{:?}", fake.attempts());
}

#[tokio::test(flavor = "current_thread")]
async fn a_credential_that_cannot_be_read_stops_the_build_naming_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(
        &path,
        "state_dir = \"state\"\n[providers.openai.credentials.team-key]\nenv = \"SLUICE_TEST_SURELY_UNSET_VARIABLE\"\n",
    )
    .unwrap();
    let e = Sluice::builder()
        .config_file(&path)
        .component_cache(test_cache())
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("providers.openai.credentials.team-key"), "{e}");
    assert!(e.contains("SLUICE_TEST_SURELY_UNSET_VARIABLE"), "{e}");
    assert!(
        !dir.path().join("state").exists(),
        "nothing is created before the build can succeed"
    );
}
