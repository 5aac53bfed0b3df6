//! Hosts sharing a `rediss://` store: a `redis-server` that speaks TLS only, under a CA the
//! test makes ([`Pki`]). The server's certificate is checked against `[store] ca_file` and
//! the URL's host name, a client certificate is shown when the server asks for one, and a
//! certificate refused is named: which server, what is wrong, and the CA trusted.

use std::num::NonZeroU32;
use std::path::Path;

use sluice::admission::shared::{ClaimError, RedisStore, SharedConfig};
use sluice::writes::WriteError;
use sluice_fake_provider::{FakeConfig, FakeProvider, Style};
use sluice_tests::pki::Pki;
use sluice_tests::redis_server::RedisServer;

use crate::support::{host, only_the_first_host_sends, payment};

/// How long a store command may take here, a TLS handshake included: a loaded machine
/// running unoptimised code takes longer than the default 250 ms now and then.
const PATIENCE_MS: u64 = 5_000;

/// The store at `url`, its certificate checked against `ca`, showing `client` (the names
/// of a certificate and its key in `pki`) if given.
fn store(url: &str, pki: &Pki, ca: &str, client: Option<(&str, &str)>) -> RedisStore {
    let mut config = SharedConfig::new(url, NonZeroU32::MIN);
    config.timeout = std::time::Duration::from_millis(PATIENCE_MS);
    config.ca_file = Some(pki.path(ca));
    if let Some((cert, key)) = client {
        config.client_cert_file = Some(pki.path(cert));
        config.client_key_file = Some(pki.path(key));
    }
    config.validate().expect("the settings are valid");
    RedisStore::new(&config).expect("a store client")
}

/// A `redis-server` that speaks TLS only, under a CA of its own (see
/// [`RedisServer::start_tls`]): `None` when there is no Redis (the test skips, saying so).
fn tls_redis(auth_clients: bool) -> Option<(Pki, RedisServer)> {
    if sluice_tests::redis_server::without_redis() {
        return None;
    }
    let pki = Pki::new();
    let server = RedisServer::start_tls(&pki, auth_clients);
    Some((pki, server))
}

/// Why `store` refuses a `PING`, as text.
async fn refusal(store: &RedisStore) -> String {
    store.ping().await.expect_err("refused").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_share_claims_through_a_rediss_store_checked_against_its_ca() {
    let Some((pki, server)) = tls_redis(false) else {
        return;
    };
    // An operator makes the group's epoch, over TLS as the hosts reach it.
    let operator = store(&server.url(), &pki, "ca.pem", None);
    assert!(operator.init().await.expect("the epoch made").is_some());
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let keys = format!(
        "ca_file = {:?}\ntimeout_ms = {PATIENCE_MS}",
        pki.path("ca.pem")
    );
    let group = (server.url(), keys);
    let a = tls_host(&group, "host-a", dir.path());
    let b = tls_host(&group, "host-b", dir.path());
    only_the_first_host_sends(&a, &b, &payment(&fake, "invoice-7")).await;
    assert_eq!(fake.attempts().len(), 1);
}

fn tls_host(group: &(String, String), id: &str, dir: &Path) -> sluice::Sluice {
    host(
        (&group.0, "sluice", &group.1),
        id,
        "stripe",
        dir,
        "requests_per_minute = 6000",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_another_ca_signed_is_refused_naming_the_ca_trusted() {
    let Some((pki, server)) = tls_redis(false) else {
        return;
    };
    let err = refusal(&store(&server.url(), &pki, "other-ca.pem", None)).await;
    let other = pki.path("other-ca.pem").display().to_string();
    assert!(
        err.contains(&format!(
            "the Redis server's certificate is not signed by the CA in {other}"
        )),
        "{err}"
    );
    // A host whose store is so refused sends no write: it could not claim it.
    let fake = FakeProvider::start(FakeConfig::new(Style::Stripe))
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("dir");
    let group = (
        server.url(),
        format!("ca_file = {other:?}\ntimeout_ms = {PATIENCE_MS}"),
    );
    let lone = tls_host(&group, "host-a", dir.path());
    match lone.write(&payment(&fake, "invoice-8")).await {
        Err(WriteError::Claim(ClaimError::Unreachable { error, .. })) => {
            assert!(error.contains("is not signed by the CA in"), "{error}");
        }
        other => panic!("the write was not refused for the certificate: {other:?}"),
    }
    assert!(fake.attempts().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_host_name_is_refused() {
    let Some((pki, server)) = tls_redis(false) else {
        return;
    };
    // The certificate is for `localhost`: the same server reached as 127.0.0.1 is refused.
    let by_address = format!("rediss://127.0.0.1:{}", server.port());
    let err = refusal(&store(&by_address, &pki, "ca.pem", None)).await;
    assert!(
        err.contains("the Redis server's certificate is not for the host name it was reached at"),
        "{err}"
    );
    assert!(err.contains("127.0.0.1"), "{err}");
    store(&server.url(), &pki, "ca.pem", None)
        .ping()
        .await
        .expect("reached by its own name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_asks_for_a_client_certificate_takes_the_configured_one() {
    let Some((pki, server)) = tls_redis(true) else {
        return;
    };
    let err = refusal(&store(&server.url(), &pki, "ca.pem", None)).await;
    assert!(
        err.contains("the Redis server asks for a client certificate, and none is configured"),
        "{err}"
    );
    let client = Some(("client.pem", "client.key"));
    store(&server.url(), &pki, "ca.pem", client)
        .ping()
        .await
        .expect("the client certificate taken");
}
