//! TLS and connections at the wire: every claim is checked against what the fake provider
//! (and, for proxies, a counting proxy) received — attempts, their HTTP version, the
//! connection they came on — not against the client's own view. The fake serves TLS with a
//! certificate authority made for the run, which the host trusts as an extra root.

use std::time::Duration;

use sluice::contract::{Request, RequestClass, TransportFailure, WireOutcome};
use sluice::credentials::CredentialHeaders;
use sluice::execute::{Call, Outcome};
use sluice::retry::RetryConfig;
use sluice::transport::{
    BuiltInRoots, ExtraRoot, Fault, ProxySetting, Timeouts, Transport, TransportConfig,
};
use sluice_fake_provider::tls::TestCa;
use sluice_fake_provider::{FakeConfig, FakeProvider, Fault as Scripted, HttpVersion, Style};
use sluice_tests::proxy::CountingProxy;
use sluice_tests::request;
use sluice_tests::stack::executor_with;

const CHAT: &str = "/v1/chat/completions";

fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_secs(5),
        generation: Duration::from_secs(5),
        idle: Duration::from_secs(5),
    }
}

/// The defaults, with `ca` trusted as an extra root.
fn trusting(ca: &TestCa) -> TransportConfig {
    TransportConfig {
        extra_roots: vec![ExtraRoot::Pem(ca.ca_pem().to_owned())],
        ..TransportConfig::new(timeouts())
    }
}

fn chat(url: &str) -> Request {
    request("POST", url, RequestClass::Read)
        .with_body(br#"{"model":"gpt-4o","max_tokens":16}"#.to_vec())
}

/// Sends `req` once and returns the status.
async fn status(transport: &Transport, req: &Request) -> u16 {
    match transport.send(req, &[]).await {
        WireOutcome::Response(r) => r.status,
        WireOutcome::Transport(f) => panic!("no answer: {f:?}"),
    }
}

async fn tls_fake(ca: &TestCa) -> FakeProvider {
    FakeProvider::start_tls(FakeConfig::new(Style::OpenAi), ca)
        .await
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_through_the_test_ca_succeeds_through_the_whole_executor() {
    let ca = TestCa::new().unwrap();
    let fake = tls_fake(&ca).await;
    // The root as an embedder gives it: a PEM file.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("gateway-ca.pem");
    std::fs::write(&root, ca.ca_pem()).unwrap();
    let transport = Transport::with_config(TransportConfig {
        extra_roots: vec![ExtraRoot::PemFile(root)],
        ..TransportConfig::new(timeouts())
    })
    .unwrap();
    let config = "[providers.openai.limits]\nrequests_per_minute = 6000\n";
    let ex = executor_with("openai", config, RetryConfig::default(), transport);
    let call = Call::post(
        "openai",
        fake.url(CHAT),
        br#"{"model":"gpt-4o","max_tokens":16}"#.to_vec(),
    )
    .credential("team-key")
    .tenant("t")
    .class(RequestClass::Read)
    .header("content-type", "application/json");
    assert!(call.url.starts_with("https://127.0.0.1:"), "{}", call.url);
    let outcome = ex.execute(&call).await;
    assert!(
        matches!(outcome, Outcome::Succeeded { attempts: 1, .. }),
        "{outcome:?}"
    );
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].path, CHAT);
    assert_eq!(attempts[0].status, Some(200));
    assert_eq!(attempts[0].version, HttpVersion::Http2);
}

#[tokio::test(flavor = "current_thread")]
async fn an_https_host_without_the_extra_root_is_refused_for_its_certificate_not_its_scheme() {
    let ca = TestCa::new().unwrap();
    let fake = tls_fake(&ca).await;
    let untrusting = [
        // The built-in roots (Mozilla's and the system's) do not know the test CA...
        TransportConfig::new(timeouts()),
        // ...nor does another CA trusted alone.
        TransportConfig {
            built_in_roots: BuiltInRoots::Ignored,
            ..trusting(&TestCa::new().unwrap())
        },
    ];
    for config in untrusting {
        let transport = Transport::with_config(config).unwrap();
        let Err(Fault { failure, detail }) = transport
            .start(
                &chat(&fake.url(CHAT)),
                &CredentialHeaders::NONE,
                false,
                None,
            )
            .await
        else {
            panic!("a server with an unknown issuer was trusted");
        };
        assert_eq!(failure, TransportFailure::ConnectFailed, "{detail}");
        assert!(detail.contains("UnknownIssuer"), "{detail}");
        assert!(!detail.contains("scheme"), "{detail}");
    }
    assert_eq!(fake.attempts().len(), 0, "nothing reached the provider");
}

#[tokio::test(flavor = "current_thread")]
async fn http2_is_negotiated_over_tls_and_calls_share_one_connection() {
    let ca = TestCa::new().unwrap();
    let fake = tls_fake(&ca).await;
    let transport = Transport::with_config(trusting(&ca)).unwrap();
    let req = chat(&fake.url(CHAT));
    assert_eq!(status(&transport, &req).await, 200);
    // A clone shares the client and its pool.
    assert_eq!(status(&transport.clone(), &req).await, 200);
    // Concurrent calls are multiplexed on the open connection.
    let (a, b, c) = tokio::join!(
        status(&transport, &req),
        status(&transport, &req),
        status(&transport, &req)
    );
    assert_eq!((a, b, c), (200, 200, 200));
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 5);
    for a in &attempts {
        assert_eq!(a.version, HttpVersion::Http2, "{attempts:?}");
        assert_eq!(a.connection, 1, "one connection for all: {attempts:?}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_without_http2_gets_http1_1_on_a_kept_connection() {
    let ca = TestCa::new().unwrap();
    let tls = FakeProvider::start_tls_http1(FakeConfig::new(Style::OpenAi), &ca)
        .await
        .unwrap();
    let plain = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    let transport = Transport::with_config(trusting(&ca)).unwrap();
    for fake in [&tls, &plain] {
        let req = chat(&fake.url(CHAT));
        assert_eq!(status(&transport, &req).await, 200);
        assert_eq!(status(&transport, &req).await, 200);
        let attempts = fake.attempts();
        assert_eq!(attempts.len(), 2);
        for a in &attempts {
            assert_eq!(a.version, HttpVersion::Http1_1, "{attempts:?}");
            assert_eq!(a.connection, 1, "kept alive: {attempts:?}");
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_redirect_is_an_answer_not_another_attempt() {
    let ca = TestCa::new().unwrap();
    let fake = tls_fake(&ca).await;
    fake.script(
        CHAT,
        [Scripted::Redirect {
            status: 307,
            location: "/v1/elsewhere",
        }],
    );
    let transport = Transport::with_config(trusting(&ca)).unwrap();
    assert_eq!(status(&transport, &chat(&fake.url(CHAT))).await, 307);
    assert_eq!(fake.attempts_on("/v1/elsewhere"), 0, "not followed");
    assert_eq!(fake.attempts().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_broken_exchange_is_reported_and_not_resent() {
    let ca = TestCa::new().unwrap();
    let fake = tls_fake(&ca).await;
    fake.script(CHAT, [Scripted::StoreThenDrop]);
    let transport = Transport::with_config(trusting(&ca)).unwrap();
    let outcome = transport.send(&chat(&fake.url(CHAT)), &[]).await;
    assert_eq!(
        outcome,
        WireOutcome::Transport(TransportFailure::ResetAfterSend),
        "the request arrived: it may have acted"
    );
    assert_eq!(fake.attempts().len(), 1, "sent once");
    assert_eq!(fake.stored().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn an_explicit_proxy_carries_an_http_call_and_a_no_proxy_entry_bypasses_it() {
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    let proxy = CountingProxy::start().await.unwrap();
    let req = chat(&fake.url(CHAT));
    let through = |no_proxy: Vec<String>| {
        Transport::with_config(TransportConfig {
            proxy: ProxySetting::Explicit {
                url: proxy.url(),
                no_proxy,
            },
            ..TransportConfig::new(timeouts())
        })
        .unwrap()
    };

    assert_eq!(status(&through(Vec::new()), &req).await, 200);
    assert_eq!(
        proxy.requests(),
        [format!("POST {} HTTP/1.1", fake.url(CHAT))]
    );
    assert_eq!(fake.attempts().len(), 1);

    assert_eq!(status(&through(vec!["127.0.0.1".into()]), &req).await, 200);
    assert_eq!(
        proxy.requests().len(),
        1,
        "bypassed: {:?}",
        proxy.requests()
    );
    assert_eq!(fake.attempts().len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn an_https_call_goes_through_the_proxy_in_a_tunnel_and_still_speaks_http2() {
    let ca = TestCa::new().unwrap();
    let fake = tls_fake(&ca).await;
    let proxy = CountingProxy::start().await.unwrap();
    let transport = Transport::with_config(TransportConfig {
        proxy: ProxySetting::Explicit {
            url: proxy.url(),
            no_proxy: Vec::new(),
        },
        ..trusting(&ca)
    })
    .unwrap();
    assert_eq!(status(&transport, &chat(&fake.url(CHAT))).await, 200);
    assert_eq!(
        proxy.requests(),
        [format!("CONNECT {} HTTP/1.1", fake.addr())]
    );
    let attempts = fake.attempts();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].version, HttpVersion::Http2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_connection_refused_or_a_handshake_that_never_ends_sent_nothing() {
    // A port nobody listens on: refused at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = format!("https://{}{CHAT}", closed.local_addr().unwrap());
    drop(closed);
    // A listener that accepts and never answers the TLS handshake: the connect limit
    // covers the handshake, not only TCP.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hanging = format!("https://{}{CHAT}", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((conn, _)) = silent.accept().await {
            open.push(conn);
        }
    });
    let transport = Transport::with_config(TransportConfig {
        timeouts: Timeouts {
            connect: Duration::from_millis(300),
            ..timeouts()
        },
        ..TransportConfig::default()
    })
    .unwrap();
    let Err(Fault { failure, detail }) = transport
        .start(&chat(&refused), &CredentialHeaders::NONE, false, None)
        .await
    else {
        panic!("a closed port answered");
    };
    assert_eq!(failure, TransportFailure::ConnectFailed, "{detail}");
    #[allow(
        clippy::disallowed_methods,
        reason = "measures how long the refusal took"
    )]
    let started = std::time::Instant::now();
    let Err(Fault { failure, detail }) = transport
        .start(&chat(&hanging), &CredentialHeaders::NONE, false, None)
        .await
    else {
        panic!("a silent listener answered");
    };
    assert_eq!(failure, TransportFailure::TimeoutBeforeSend, "{detail}");
    assert!(detail.contains("not open within"), "{detail}");
    assert!(started.elapsed() < Duration::from_secs(3), "the limit held");
    held.abort();
}

#[tokio::test(flavor = "current_thread")]
async fn a_proxy_s_credentials_go_to_the_proxy_on_both_paths() {
    let ca = TestCa::new().unwrap();
    let tls = tls_fake(&ca).await;
    let plain = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    let proxy = CountingProxy::start().await.unwrap();
    let with_password = proxy.url().replace("http://", "http://ops:hunter%202@");
    let transport = Transport::with_config(TransportConfig {
        proxy: ProxySetting::Explicit {
            url: with_password,
            no_proxy: Vec::new(),
        },
        ..trusting(&ca)
    })
    .unwrap();
    assert_eq!(status(&transport, &chat(&plain.url(CHAT))).await, 200);
    assert_eq!(status(&transport, &chat(&tls.url(CHAT))).await, 200);
    assert_eq!(
        proxy.requests(),
        [
            format!("POST {} HTTP/1.1", plain.url(CHAT)),
            format!("CONNECT {} HTTP/1.1", tls.addr()),
        ]
    );
    // `ops:hunter 2`, the password's escape undone, in base64.
    let basic = Some("Basic b3BzOmh1bnRlciAy".to_owned());
    assert_eq!(proxy.credentials(), [basic.clone(), basic]);
    assert_eq!(plain.attempts().len() + tls.attempts().len(), 2);
}

// What the process environment says (proxies, the platform's roots) is tested in a child
// process of this test binary, given only the variables a test names: the environment of
// this process is never changed.

/// What [`a_child_sends_one_call`] is told by its parent: the URL to call...
const CHILD_TARGET: &str = "SLUICE_TLS_WIRE_TARGET";
/// ...the configuration to call it with (one of [`Setting`]'s names)...
const CHILD_SETTING: &str = "SLUICE_TLS_WIRE_SETTING";
/// ...and whether to expect an answer (`answer`) or a refused certificate (`refused`).
const CHILD_EXPECT: &str = "SLUICE_TLS_WIRE_EXPECT";

/// The transport configuration a child builds.
#[derive(Debug, Clone, Copy)]
enum Setting {
    /// `TransportConfig::default()`: the environment's proxy, the built-in roots.
    Default,
    /// `ProxySetting::Direct`.
    Direct,
    /// `BuiltInRoots::Ignored`, no extra roots: nothing is trusted.
    NoBuiltInRoots,
}

impl Setting {
    fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Direct => "direct",
            Self::NoBuiltInRoots => "no-built-in-roots",
        }
    }

    fn config(name: &str) -> TransportConfig {
        let mut config = TransportConfig::new(timeouts());
        match name {
            "direct" => config.proxy = ProxySetting::Direct,
            "no-built-in-roots" => config.built_in_roots = BuiltInRoots::Ignored,
            _ => {}
        }
        config
    }
}

/// Runs [`a_child_sends_one_call`] in a new process of this test binary, with `env` as its
/// only proxy and root-store variables; it calls `target` with `setting` and expects an
/// answer, or (`answer: false`) a refused certificate.
async fn child(target: &str, setting: Setting, answer: bool, env: &[(&str, String)]) {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "tls_wire::a_child_sends_one_call",
        "--ignored",
        "--nocapture",
    ]);
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)))
        .env(CHILD_TARGET, target)
        .env(CHILD_SETTING, setting.name())
        .env(CHILD_EXPECT, if answer { "answer" } else { "refused" });
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_environment_proxy_is_used_by_default_and_no_proxy_or_an_explicit_setting_bypasses_it()
{
    let fake = FakeProvider::start(FakeConfig::new(Style::OpenAi))
        .await
        .unwrap();
    let proxy = CountingProxy::start().await.unwrap();
    let target = fake.url(CHAT);

    child(
        &target,
        Setting::Default,
        true,
        &[("HTTP_PROXY", proxy.url())],
    )
    .await;
    assert_eq!(proxy.requests(), [format!("POST {target} HTTP/1.1")]);
    assert_eq!(fake.attempts().len(), 1);

    let bypass = [
        ("HTTP_PROXY", proxy.url()),
        ("NO_PROXY", "127.0.0.1".into()),
    ];
    child(&target, Setting::Default, true, &bypass).await;
    assert_eq!(
        proxy.requests().len(),
        1,
        "NO_PROXY: {:?}",
        proxy.requests()
    );
    assert_eq!(fake.attempts().len(), 2);

    child(
        &target,
        Setting::Direct,
        true,
        &[("HTTP_PROXY", proxy.url())],
    )
    .await;
    assert_eq!(proxy.requests().len(), 1, "Direct: {:?}", proxy.requests());
    assert_eq!(fake.attempts().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn the_platform_root_store_is_trusted_unless_built_in_roots_are_ignored() {
    let ca = TestCa::new().unwrap();
    let fake = tls_fake(&ca).await;
    let target = fake.url(CHAT);
    // The platform's store, as the environment points to it (`SSL_CERT_FILE`), holds the
    // test CA: the default configuration trusts it without an extra root.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("system-roots.pem");
    std::fs::write(&store, ca.ca_pem()).unwrap();
    let env = [("SSL_CERT_FILE", store.display().to_string())];

    child(&target, Setting::Default, true, &env).await;
    assert_eq!(fake.attempts().len(), 1);

    child(&target, Setting::NoBuiltInRoots, false, &env).await;
    assert_eq!(fake.attempts().len(), 1, "refused before sending");
}

/// One call to the target its parent names, with the configuration it names; run only by
/// [`child`] (without a target, it does nothing).
#[tokio::test(flavor = "current_thread")]
#[ignore = "run by the tests of the environment, in a process of its own"]
async fn a_child_sends_one_call() {
    let Ok(target) = std::env::var(CHILD_TARGET) else {
        return;
    };
    let setting = std::env::var(CHILD_SETTING).unwrap_or_default();
    let transport = Transport::with_config(Setting::config(&setting)).unwrap();
    let req = chat(&target);
    if std::env::var(CHILD_EXPECT).as_deref() == Ok("refused") {
        let Err(Fault { failure, detail }) = transport
            .start(&req, &CredentialHeaders::NONE, false, None)
            .await
        else {
            panic!("a server with an untrusted certificate was trusted");
        };
        assert_eq!(failure, TransportFailure::ConnectFailed, "{detail}");
        assert!(detail.contains("UnknownIssuer"), "{detail}");
    } else {
        assert_eq!(status(&transport, &req).await, 200);
    }
}
