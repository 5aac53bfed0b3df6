//! Every shared resource of `sluice serve` is bounded per agent and tenant, shown through the
//! binary: idle sockets, one agent's stalled bodies, bodies held in memory, wrong tokens, and
//! what an agent's headers and paths may carry to the provider.

use std::io::{Read, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;
use sluice_fake_provider::Fault;

use crate::raw::{post, post_as, post_large};
use crate::sidecar::{AGENT_TOKEN, Deadline, World, open_files};

const CHAT: &str = "/v1/chat/completions";
const AGENT_CHAT: &str = "/openai/v1/chat/completions";
/// The noisy agent's token; its tenant is `noisy`.
const NOISY_TOKEN: &str = "agent-token-of-a-noisy-tenant";

fn chat() -> String {
    json!({"model": "gpt-4o", "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string()
}

/// The steady agent's five chats are each answered 200 within a second.
fn steady_agent_is_answered(sidecar: &crate::sidecar::Sidecar, beside: &str) {
    for i in 0..5 {
        let took = Deadline::after(Duration::ZERO);
        let a = post(sidecar, AGENT_CHAT, &[], &chat());
        assert_eq!(a.status, 200, "chat {i} beside {beside}: {a:?}");
        assert!(
            took.elapsed() < Duration::from_secs(1),
            "chat {i} beside {beside} took {:?}",
            took.elapsed()
        );
    }
}

/// Whether `s` was closed by the sidecar within `within` (end of stream or a reset).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).expect("a read timeout");
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

/// 1 100 sockets that never send a byte (more than the listener's 1 024 places): the steady
/// agent is answered within a second all the same, and a socket that presents no token is
/// cut within its time (`serve.auth_timeout_ms`, 2 s).
#[test]
fn idle_sockets_never_keep_an_agent_out() {
    open_files(4096);
    let world = World::new();
    let sidecar = world.serve();
    let addr = sidecar.agents_addr();
    let mut idle: Vec<TcpStream> = (0..1100)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect();
    steady_agent_is_answered(&sidecar, "1 100 idle sockets");
    let last = idle.last_mut().expect("sockets");
    assert!(
        closed_within(last, Duration::from_secs(5)),
        "an idle socket is cut"
    );
}

/// Agent `noisy` opens 300 connections and stalls each mid-body: 256 of them are seated
/// (`serve.max_connections_per_agent`), the rest are answered 503 `too_many_connections`
/// and closed, and the steady agent (another tenant) is answered within a second.
#[test]
fn one_agents_stalled_bodies_never_keep_another_agent_out() {
    let world = World::new();
    world.add_agent("noisy", NOISY_TOKEN, "noisy");
    let sidecar = world.serve();
    let addr = sidecar.agents_addr();
    let mut stalled: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            write!(
                s,
                "POST {AGENT_CHAT} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer \
                 {NOISY_TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n\
                 {{\"model\":"
            )
            .expect("send a stalled request");
            s
        })
        .collect();
    steady_agent_is_answered(&sidecar, "300 stalled bodies of another agent");
    let mut refused = 0;
    for s in &mut stalled {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("a read timeout");
        let mut head = [0u8; 64];
        if let Ok(n) = s.read(&mut head) {
            let head = String::from_utf8_lossy(&head[..n]);
            assert!(head.starts_with("HTTP/1.1 503"), "{head}");
            refused += 1;
        }
    }
    assert_eq!(refused, 300 - 256, "past the agent's 256 places");
}

/// 40 bodies of 20 MiB sent at once by one tenant, to a provider that answers each in 3 s:
/// its bodies' memory is bounded (`serve.max_body_memory_per_tenant`, 256 MiB), the ones past
/// it are answered 503 with `Retry-After`, the process grows by at most 300 MB, and its memory
/// is back within 50 MB once the calls have ended.
#[test]
fn held_bodies_are_bounded_and_their_memory_comes_back() {
    const LEN: usize = 20 << 20;
    let world = World::new();
    let sidecar = world.serve();
    steady_agent_is_answered(&sidecar, "nothing");
    world
        .openai
        .script(CHAT, [Fault::Slow(Duration::from_secs(3)); 40]);
    let before = sidecar.rss();
    let addr = sidecar.agents_addr();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(before));
    let answers = std::thread::scope(|scope| {
        let senders: Vec<_> = (0..40)
            .map(|_| scope.spawn(move || post_large(addr, AGENT_TOKEN, LEN)))
            .collect();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = {
            let (peak, done, sidecar) = (peak.clone(), done.clone(), &sidecar);
            scope.spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    peak.fetch_max(sidecar.rss(), std::sync::atomic::Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let answers: Vec<_> = senders
            .into_iter()
            .map(|s| s.join().expect("a sender"))
            .collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        sampler.join().expect("the sampler");
        answers
    });
    let ok = answers.iter().filter(|(s, _)| *s == 200).count();
    let refused: Vec<_> = answers.iter().filter(|(s, _)| *s == 503).collect();
    assert!(
        ok >= 12,
        "as many as fit the tenant's memory are answered: {answers:?}"
    );
    assert!(!refused.is_empty(), "the rest are refused: {answers:?}");
    assert!(
        refused.iter().all(|(_, r)| r.as_deref() == Some("1")),
        "each refusal says when to try again: {answers:?}"
    );
    assert_eq!(ok + refused.len(), 40, "{answers:?}");
    let grew = peak
        .load(std::sync::atomic::Ordering::Relaxed)
        .saturating_sub(before);
    eprintln!(
        "40 bodies of 20 MiB: {ok} answered, {} refused; the process grew by {} MB at most",
        refused.len(),
        grew / 1_000_000
    );
    assert!(grew <= 300_000_000, "the process grew by {grew} bytes");
    let back = Deadline::after(Duration::from_secs(10));
    loop {
        let kept = sidecar.rss().saturating_sub(before);
        if kept <= 50_000_000 {
            eprintln!("{} MB kept after the calls ended", kept / 1_000_000);
            break;
        }
        assert!(
            !back.passed(),
            "{kept} bytes were kept after the calls ended"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Twelve wrong agent tokens from one address lock that address out of the agents'
/// listener, never the operators out of the admin API.
#[test]
fn wrong_agent_tokens_never_lock_the_operators_out() {
    let world = World::new();
    let sidecar = world.serve();
    let mut last = 0;
    for _ in 0..12 {
        last = post_as(
            &sidecar,
            "not-a-token-of-any-agent",
            AGENT_CHAT,
            &[],
            &chat(),
        )
        .status;
    }
    assert_eq!(
        last, 429,
        "the address is refused for a while at the agents' door"
    );
    assert_eq!(sidecar.admin_get("/readyz"), Some(200));
    assert_eq!(sidecar.admin_get("/metrics"), Some(200));
}

/// Routing and account headers an agent sends never reach the provider (others do), and a
/// path with a `;` parameter or doubly encoded dots is refused before anything is sent.
#[test]
fn routing_headers_account_headers_and_hidden_paths_never_reach_the_provider() {
    let world = World::new();
    let sidecar = world.serve();
    let a = post(
        &sidecar,
        AGENT_CHAT,
        &[
            ("x-forwarded-for", "10.0.0.1"),
            ("forwarded", "for=192.0.2.60"),
            ("x-real-ip", "192.0.2.61"),
            ("cf-access-client-id", "an-id"),
            ("x-goog-user-project", "another-project"),
            ("openai-project", "proj_other"),
            ("x-http-method-override", "DELETE"),
            ("x-request-id", "kept"),
        ],
        &chat(),
    );
    assert_eq!(a.status, 200, "{a:?}");
    let attempts = world.openai.attempts();
    let sent = &attempts.last().expect("one attempt").headers;
    for stripped in [
        "x-forwarded-for",
        "forwarded",
        "x-real-ip",
        "cf-access-client-id",
        "x-goog-user-project",
        "openai-project",
        "x-http-method-override",
    ] {
        assert!(!sent.iter().any(|h| h == stripped), "{stripped}: {sent:?}");
    }
    assert!(sent.iter().any(|h| h == "x-request-id"), "{sent:?}");
    for hidden in [
        "/openai/v1/..;/chat/completions",
        "/openai/v1;x=1/chat/completions",
        "/openai/v1/%252e%252e/chat/completions",
        "/openai/%25252e%25252e/v1/chat/completions",
    ] {
        let a = post(&sidecar, hidden, &[], &chat());
        assert_eq!(a.status, 400, "{hidden}: {a:?}");
        assert_eq!(a.json()["error"]["code"], "path_not_allowed", "{hidden}");
    }
    assert_eq!(world.openai.attempts().len(), attempts.len());
}
