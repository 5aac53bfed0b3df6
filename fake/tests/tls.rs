//! The fake provider over TLS, driven by a client that trusts its test CA: the ledger
//! records each attempt's HTTP version and connection, and a plain fake is unchanged.

use std::time::Duration;

use sluice_fake_provider::tls::TestCa;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault, HttpVersion, Style};

/// A client that trusts `ca` only (HTTP/2 where ALPN offers it), or plain HTTP/1.1.
fn client(ca: Option<&TestCa>) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    if let Some(ca) = ca {
        let root = reqwest::Certificate::from_pem(ca.ca_pem().as_bytes()).unwrap();
        builder = builder
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(root);
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_tls_fake_serves_http2_and_numbers_its_connections() {
    let ca = TestCa::new().unwrap();
    let fake = FakeProvider::start_tls(FakeConfig::new(Style::OpenAi), &ca)
        .await
        .unwrap();
    let url = fake.url("/v1/models");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    // Two clients: two connections; the first client's two calls share its connection.
    let (one, two) = (client(Some(&ca)), client(Some(&ca)));
    for c in [&one, &one, &two] {
        let resp = c.get(&url).send().await.unwrap();
        assert_eq!(resp.version(), reqwest::Version::HTTP_2);
        assert_eq!(resp.status(), 200);
    }
    let seen: Vec<(HttpVersion, u64)> = fake
        .attempts()
        .iter()
        .map(|a| (a.version, a.connection))
        .collect();
    assert_eq!(
        seen,
        [
            (HttpVersion::Http2, 1),
            (HttpVersion::Http2, 1),
            (HttpVersion::Http2, 2)
        ]
    );
}

#[tokio::test]
async fn a_tls_fake_without_http2_answers_in_http1_1() {
    let ca = TestCa::new().unwrap();
    let fake = FakeProvider::start_tls_http1(FakeConfig::new(Style::OpenAi), &ca)
        .await
        .unwrap();
    let resp = client(Some(&ca))
        .get(fake.url("/v1/models"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_11);
    assert_eq!(fake.attempts()[0].version, HttpVersion::Http1_1);
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_test_ca_reaches_no_handler() {
    let ca = TestCa::new().unwrap();
    let fake = FakeProvider::start_tls(FakeConfig::new(Style::OpenAi), &ca)
        .await
        .unwrap();
    let other = TestCa::new().unwrap();
    let e = client(Some(&other))
        .get(fake.url("/v1/models"))
        .send()
        .await
        .unwrap_err();
    assert!(e.is_connect(), "{e:?}");
    assert!(fake.attempts().is_empty());
}

#[tokio::test]
async fn a_plain_fake_speaks_http1_1_and_numbers_its_connections_too() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    let url = fake.url("/v1/models");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let c = client(None);
    c.get(&url).send().await.unwrap();
    c.get(&url).send().await.unwrap();
    client(None).get(&url).send().await.unwrap();
    let seen: Vec<(HttpVersion, u64)> = fake
        .attempts()
        .iter()
        .map(|a| (a.version, a.connection))
        .collect();
    assert_eq!(
        seen,
        [
            (HttpVersion::Http1_1, 1),
            (HttpVersion::Http1_1, 1),
            (HttpVersion::Http1_1, 2)
        ]
    );
}

#[tokio::test]
async fn a_scripted_redirect_carries_its_location() {
    let fake = FakeProvider::start(FakeConfig::new(Style::Ietf))
        .await
        .unwrap();
    fake.script(
        "/old",
        [Fault::Redirect {
            status: 308,
            location: "/new",
        }],
    );
    let resp = client(None).get(fake.url("/old")).send().await.unwrap();
    assert_eq!(resp.status(), 308);
    assert_eq!(resp.headers()["location"], "/new");
    assert_eq!(fake.attempts()[0].status, Some(308));
    assert_eq!(fake.attempts_on("/new"), 0);
}
