//! The isolation promise as a table: each misbehaviour an agent can commit, run through
//! `sluice serve` beside one steady tenant on the same provider key, and what the steady
//! tenant must still get.
//!
//! For each row a fresh sidecar serves a provider that answers in 200 ms and allows 600
//! requests a minute (10 a second). The steady tenant (agent `bot`, tenant `acme`) sends 4
//! chats a second — less than its fair half of the quota — for a few seconds alone, then as
//! long again while tenant `noisy` misbehaves. Each row asserts that the steady tenant has:
//!
//! - at least 99% of its calls answered 200;
//! - at least 90% of its fair share: of what it asked, since it asked less than half,
//!   answered by the end of the phase and a second more;
//! - a median latency at most 2× its median alone;
//! - the process's memory within [`MEMORY_BOUND`] of where the row started.
//!
//! The row beside 20 MiB uploads measures the sidecar's reading of them, not the harness's:
//! the crates that read every byte of a body (`serde_json`, the SDK's body digest, the fake
//! provider) are optimised in the dev profile too (`Cargo.toml`), as they are in a release.
//!
//! `SLUICE_NOISY_SECONDS` sets each phase's length (default 3 s;
//! `docs/benchmarks/noisy-neighbours.md` records a longer run). The figures are printed as a
//! table (`-- --nocapture`).
//!
//! A test binary of its own: the test binaries of a crate run one after another, so the
//! steady tenant is measured on a machine no other test loads.

#![cfg(unix)]

#[allow(
    dead_code,
    reason = "shared with the serve_sdk tests, which use the rest"
)]
#[path = "../serve_sdk/raw.rs"]
mod raw;
#[allow(
    dead_code,
    reason = "shared with the serve_sdk tests, which use the rest"
)]
#[path = "../serve_sdk/sidecar.rs"]
mod sidecar;

use std::io::{Read, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use sluice_fake_provider::{FakeConfig, Fault, Style};

use crate::raw::{post_large, request};
use crate::sidecar::{AGENT_TOKEN, Deadline, Sidecar, World, open_files};

/// The noisy agent's token; its tenant is `noisy`.
const NOISY_TOKEN: &str = "agent-token-of-a-noisy-tenant";
/// How much the process may grow in a row, in bytes: its bodies' memory for one tenant
/// (256 MiB) and room for the rest.
const MEMORY_BOUND: u64 = 350_000_000;
/// The steady tenant's calls a second.
const STEADY_RATE: u32 = 4;

/// What tenant `noisy` does.
#[derive(Debug, Clone, Copy)]
enum Misbehaviour {
    /// Chats the provider refuses as malformed (400), as fast as it can.
    BadRequestLoop,
    /// Embeddings the provider fails (500), as fast as it can.
    ServerErrorLoop,
    /// Chats with a 20 ms deadline against 200 ms answers.
    TinyDeadlines,
    /// A new model name in every chat.
    InventedModels,
    /// Bodies of 20 MiB, eight at a time.
    HugeBodies,
    /// 300 connections, each stalled in its body.
    StalledBodies,
    /// 1 100 sockets that never send a byte.
    IdleSockets,
    /// Wrong agent tokens, as fast as it can, from the steady tenant's address.
    WrongTokens,
    /// Interactive chats from 16 connections at once, as fast as they go.
    PriorityFlood,
    /// Moderations the provider answers 503, each retried by sluice, 16 at once.
    RetryStorm,
    /// Streamed chats hung up on after their first bytes.
    AbandonedStreams,
    /// Writes refused before they are sent (a write hinted a read), as fast as it can.
    RefusedWrites,
}

const TABLE: [Misbehaviour; 12] = [
    Misbehaviour::BadRequestLoop,
    Misbehaviour::ServerErrorLoop,
    Misbehaviour::TinyDeadlines,
    Misbehaviour::InventedModels,
    Misbehaviour::HugeBodies,
    Misbehaviour::StalledBodies,
    Misbehaviour::IdleSockets,
    Misbehaviour::WrongTokens,
    Misbehaviour::PriorityFlood,
    Misbehaviour::RetryStorm,
    Misbehaviour::AbandonedStreams,
    Misbehaviour::RefusedWrites,
];

fn phase() -> Duration {
    let secs = std::env::var("SLUICE_NOISY_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs)
}

fn chat(model: &str) -> String {
    json!({"model": model, "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string()
}

/// One request on a new connection; its status, or `None` when the connection failed.
fn send(
    addr: SocketAddr,
    token: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<u16> {
    send_waited(addr, token, path, headers, body).map(|(status, _)| status)
}

/// One request on a new connection: its status and the `x-sluice-waited-ms` it said.
fn send_waited(
    addr: SocketAddr,
    token: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<(u16, u64)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    s.write_all(request(addr, token, path, headers, body).as_bytes())
        .ok()?;
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let status = text.get(9..12)?.parse().ok()?;
    let waited = text
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("x-sluice-waited-ms:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Some((status, waited))
}

/// What the steady tenant got in one phase.
#[derive(Debug, Default)]
struct Steady {
    sent: usize,
    answered: usize,
    /// The answered calls' latencies, sorted.
    latencies: Vec<Duration>,
    /// The answered calls' waits in sluice (`x-sluice-waited-ms`), sorted.
    waits: Vec<u64>,
    /// The calls answered by the end of the phase and a second more: what it was served at
    /// the rate it asked.
    delivered: usize,
}

impl Steady {
    fn median_wait(&self) -> u64 {
        self.waits.get(self.waits.len() / 2).copied().unwrap_or(0)
    }

    fn median(&self) -> Duration {
        self.latencies
            .get(self.latencies.len() / 2)
            .copied()
            .unwrap_or(Duration::MAX)
    }
}

/// The steady tenant's chats, [`STEADY_RATE`] a second for `length`, each on a schedule
/// whatever the earlier ones took.
fn steady(addr: SocketAddr, length: Duration) -> Steady {
    let n = (length.as_secs_f64() * f64::from(STEADY_RATE)).round() as usize;
    let every = Duration::from_secs(1) / STEADY_RATE;
    let started = Deadline::after(Duration::ZERO);
    let results: Vec<Option<(Duration, u64, Duration)>> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..n)
            .map(|i| {
                let due = every * u32::try_from(i).unwrap_or(u32::MAX);
                std::thread::sleep(due.saturating_sub(started.elapsed()));
                let started = &started;
                scope.spawn(move || {
                    let took = Deadline::after(Duration::ZERO);
                    let path = "/openai/v1/chat/completions";
                    match send_waited(addr, AGENT_TOKEN, path, &[], &chat("gpt-4o")) {
                        Some((200, waited)) => Some((took.elapsed(), waited, started.elapsed())),
                        _ => None,
                    }
                })
            })
            .collect();
        calls
            .into_iter()
            .map(|c| c.join().expect("a steady call"))
            .collect()
    });
    let mut latencies: Vec<Duration> = results.iter().flatten().map(|(l, ..)| *l).collect();
    latencies.sort();
    let mut waits: Vec<u64> = results.iter().flatten().map(|(_, w, _)| *w).collect();
    waits.sort_unstable();
    Steady {
        sent: n,
        answered: latencies.len(),
        latencies,
        waits,
        delivered: results
            .iter()
            .flatten()
            .filter(|(.., at)| *at <= length + Duration::from_secs(1))
            .count(),
    }
}

/// Runs `m` as tenant `noisy` until `stop` is set, counting in `done` the calls it made (or,
/// for the rows that hold connections, the connections it holds).
fn misbehave(m: Misbehaviour, addr: SocketAddr, stop: &AtomicBool, done: &AtomicU64) {
    let looping = |threads: usize, each: &(dyn Fn(usize) + Sync)| {
        std::thread::scope(|scope| {
            for t in 0..threads {
                scope.spawn(move || {
                    let mut i = t * 1_000_000;
                    while !stop.load(Ordering::Relaxed) {
                        each(i);
                        done.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                });
            }
        });
    };
    let chat_path = "/openai/v1/chat/completions";
    let hold = |conns: Vec<TcpStream>| {
        done.store(conns.len() as u64, Ordering::Relaxed);
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(conns);
    };
    match m {
        Misbehaviour::BadRequestLoop => looping(4, &|_| {
            let empty = json!({"model": "gpt-4o", "max_tokens": 8, "messages": []}).to_string();
            send(addr, NOISY_TOKEN, chat_path, &[], &empty);
        }),
        Misbehaviour::ServerErrorLoop => looping(4, &|_| {
            let body = json!({"model": "text-embedding-3-small", "input": "hi"}).to_string();
            send(addr, NOISY_TOKEN, "/openai/v1/embeddings", &[], &body);
        }),
        Misbehaviour::TinyDeadlines => looping(4, &|_| {
            send(
                addr,
                NOISY_TOKEN,
                chat_path,
                &[("x-sluice-deadline-ms", "20")],
                &chat("gpt-4o"),
            );
        }),
        Misbehaviour::InventedModels => looping(4, &|i| {
            send(
                addr,
                NOISY_TOKEN,
                chat_path,
                &[],
                &chat(&format!("invented-{i}")),
            );
        }),
        Misbehaviour::HugeBodies => looping(8, &|_| {
            post_large(addr, NOISY_TOKEN, 20 << 20);
        }),
        Misbehaviour::StalledBodies => hold(
            (0..300)
                .filter_map(|_| {
                    let mut s = TcpStream::connect(addr).ok()?;
                    write!(
                        s,
                        "POST {chat_path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer \
                         {NOISY_TOKEN}\r\ncontent-type: application/json\r\n\
                         content-length: 1000\r\n\r\n{{\"model\":"
                    )
                    .ok()?;
                    Some(s)
                })
                .collect(),
        ),
        Misbehaviour::IdleSockets => hold(
            (0..1100)
                .filter_map(|_| TcpStream::connect(addr).ok())
                .collect(),
        ),
        Misbehaviour::WrongTokens => looping(2, &|_| {
            send(
                addr,
                "not-a-token-of-any-agent",
                chat_path,
                &[],
                &chat("gpt-4o"),
            );
        }),
        Misbehaviour::PriorityFlood => looping(16, &|_| {
            send(
                addr,
                NOISY_TOKEN,
                chat_path,
                &[("x-sluice-priority", "interactive")],
                &chat("gpt-4o"),
            );
        }),
        Misbehaviour::RetryStorm => looping(16, &|_| {
            let body = json!({"input": "hi"}).to_string();
            send(addr, NOISY_TOKEN, "/openai/v1/moderations", &[], &body);
        }),
        Misbehaviour::AbandonedStreams => looping(4, &|_| {
            let Ok(mut s) = TcpStream::connect(addr) else {
                return;
            };
            let body = json!({"model": "gpt-4o", "max_tokens": 64, "stream": true,
                "messages": [{"role": "user", "content": "hi"}]})
            .to_string();
            let _ = s.write_all(request(addr, NOISY_TOKEN, chat_path, &[], &body).as_bytes());
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut first = [0u8; 64];
            let _ = s.read(&mut first);
        }),
        Misbehaviour::RefusedWrites => looping(4, &|i| {
            let action = format!("charge-{i}");
            send(
                addr,
                NOISY_TOKEN,
                "/payments/v1/charges",
                &[("x-sluice-action", &action), ("x-sluice-class", "read")],
                "amount=100&currency=usd",
            );
        }),
    }
}

/// The world of one row: the provider's behaviour, and tenant `noisy`'s agent.
fn world() -> World {
    let world = World::with_openai(
        FakeConfig::new(Style::OpenAi).rpm(600),
        "requests_per_minute = 600",
    );
    world
        .openai
        .play(&"slow=200".parse().expect("a fault spec"));
    world.openai.refuse_empty_chats();
    let failing = Fault::Status {
        status: 500,
        code: "server_error",
    };
    world
        .openai
        .script("/v1/embeddings", vec![failing; 100_000]);
    let overloaded = Fault::Unavailable { retry_after: None };
    world
        .openai
        .script("/v1/moderations", vec![overloaded; 100_000]);
    world.add_agent("noisy", NOISY_TOKEN, "noisy");
    world
}

/// One row's figures.
struct Row {
    m: Misbehaviour,
    alone: Steady,
    beside: Steady,
    grew: u64,
    /// What tenant `noisy` did: its calls made, or the connections it held.
    noisy: u64,
    /// The 429s the provider answered in the row.
    throttled: usize,
}

fn run(m: Misbehaviour) -> Row {
    let world = world();
    let sidecar: Sidecar = world.serve();
    let addr = sidecar.agents_addr();
    let alone = steady(addr, phase());
    let start = sidecar.rss();
    let peak = AtomicU64::new(start);
    let stop = AtomicBool::new(false);
    let noisy = AtomicU64::new(0);
    let beside = std::thread::scope(|scope| {
        scope.spawn(|| misbehave(m, addr, &stop, &noisy));
        let sampler = scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(sidecar.rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        // The misbehaviour under way first.
        std::thread::sleep(Duration::from_millis(500));
        let beside = steady(addr, phase());
        stop.store(true, Ordering::Relaxed);
        sampler.join().expect("the sampler");
        beside
    });
    Row {
        m,
        alone,
        beside,
        grew: peak.load(Ordering::Relaxed).saturating_sub(start),
        noisy: noisy.load(Ordering::Relaxed),
        throttled: world.openai.answered(429),
    }
}

/// Each misbehaviour of the table, beside the steady tenant: see the module docs.
#[test]
fn no_misbehaviour_of_one_tenant_hurts_the_steady_one() {
    // 1 100 idle sockets are more than a default soft limit of 1 024 files.
    open_files(4096);
    let mut failures = Vec::new();
    eprintln!(
        "| misbehaviour | noisy's calls | answered | share of demand | p50 alone | p50 beside | ratio | waited p50 beside | memory grew | provider 429s |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|---|");
    // `SLUICE_NOISY_ONLY=TinyDeadlines,RetryStorm` runs only those rows.
    let only = std::env::var("SLUICE_NOISY_ONLY").unwrap_or_default();
    for m in TABLE {
        if !only.is_empty() && !only.split(',').any(|o| o == format!("{m:?}")) {
            continue;
        }
        let Row {
            m,
            alone,
            beside,
            grew,
            noisy,
            throttled,
        } = run(m);
        let answered = beside.answered as f64 / beside.sent as f64;
        // It asked for less than its fair half of the quota: all of it is its share, and
        // what was answered within the phase and a second more is what it got of it.
        let share = beside.delivered as f64 / beside.sent as f64;
        let ratio = beside.median().as_secs_f64() / alone.median().as_secs_f64();
        eprintln!(
            "| {m:?} | {noisy} | {}/{} | {:.0}% | {} ms | {} ms | {ratio:.2} | {} ms | {} MB | {throttled} |",
            beside.answered,
            beside.sent,
            share * 100.0,
            alone.median().as_millis(),
            beside.median().as_millis(),
            beside.median_wait(),
            grew / 1_000_000
        );
        if answered < 0.99 {
            failures.push(format!(
                "{m:?}: {}/{} answered",
                beside.answered, beside.sent
            ));
        }
        if share < 0.9 {
            failures.push(format!("{m:?}: {:.0}% of its share", share * 100.0));
        }
        if ratio > 2.0 {
            failures.push(format!(
                "{m:?}: median {:?} beside, {:?} alone",
                beside.median(),
                alone.median()
            ));
        }
        if grew > MEMORY_BOUND {
            failures.push(format!("{m:?}: memory grew by {grew} bytes"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
