//! A stream the agent abandons midway is charged what the provider produced of it, through
//! `sluice serve`, for OpenAI and Anthropic: the prompt and the output read so far, never the
//! estimate (the prompt and the whole `max_tokens`), and never less than what was produced.
//!
//! Tenant `acme` may spend 1 USD a day, priced per model; an agent asks for a stream of up
//! to 4 000 tokens, reads five of its content events and closes its connection. The fake
//! providers pace a stream's events 200 ms apart, share its output evenly among them (four
//! bytes of text a token, as English is), and bill what the events they sent carried.

use std::io::{Read, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use sluice_fake_provider::{FakeConfig, FakeProvider, Style};

use crate::raw::request;
use crate::sidecar::{AGENT_TOKEN, Deadline, Sidecar, World};

/// The tenant's daily budget, in micro-dollars: 1 USD.
const BUDGET_MICROS: f64 = 1_000_000.0;

/// A provider's route, model, prices (micro-dollars a token, input and output) and the text
/// that starts each content event in its stream.
struct Case {
    provider: &'static str,
    path: &'static str,
    model: &'static str,
    prices: (f64, f64),
    content_event: &'static str,
}

const CASES: [Case; 2] = [
    Case {
        provider: "openai",
        path: "/openai/v1/chat/completions",
        model: "gpt-4o",
        prices: (2.5, 10.0),
        content_event: "chat.completion.chunk",
    },
    Case {
        provider: "anthropic",
        path: "/anthropic/v1/messages",
        model: "claude-sonnet-4-5",
        prices: (3.0, 15.0),
        content_event: "content_block_delta",
    },
];

/// Content events the agent reads before it goes away.
const READ: usize = 5;

fn world() -> World {
    let paced = |style| FakeConfig::new(style).stream_gap(Duration::from_millis(200));
    let world = World::with_providers(
        paced(Style::OpenAi),
        paced(Style::Anthropic),
        "requests_per_minute = 6000",
    );
    world.configure(|text| {
        text + r#"
[tenants.budgets.acme]
spend_micros_per_day = 1000000

[providers.openai.prices."gpt-4o"]
input_micros_per_million = 2500000
output_micros_per_million = 10000000

[providers.anthropic.prices."claude-sonnet-4-5"]
input_micros_per_million = 3000000
output_micros_per_million = 15000000
"#
    });
    world
}

/// Sends a stream's request and reads until `READ` content events have come, then closes the
/// connection.
fn abandon(sidecar: &Sidecar, case: &Case) {
    let addr: SocketAddr = sidecar
        .url
        .trim_start_matches("http://")
        .parse()
        .expect("the sidecar's address");
    let body = format!(
        r#"{{"model":"{}","max_tokens":4000,"stream":true,"messages":[{{"role":"user","content":"{}"}}]}}"#,
        case.model,
        "word ".repeat(2_000)
    );
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    let headers = [("anthropic-version", "2023-06-01")];
    s.write_all(request(addr, AGENT_TOKEN, case.path, &headers, &body).as_bytes())
        .expect("send the request");
    let mut seen = String::new();
    let mut buf = [0_u8; 4096];
    while seen.matches(case.content_event).count() < READ {
        let n = s.read(&mut buf).expect("read the stream");
        assert!(n > 0, "the stream ended before {READ} events: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
}

/// What the provider billed for its one stream, in micro-dollars, once it ended, and whether
/// it was cut.
fn billed(fake: &FakeProvider, case: &Case) -> (f64, Option<bool>, u64) {
    let wait = Deadline::after(Duration::from_secs(20));
    loop {
        let attempts = fake.attempts();
        let a = attempts.last().expect("one attempt");
        if a.stream.is_some() || wait.passed() {
            let cost =
                a.input_tokens as f64 * case.prices.0 + a.output_tokens as f64 * case.prices.1;
            return (cost, a.stream, a.output_tokens);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The tenant's spend as sluice counts it, in micro-dollars, from its budget gauge.
fn charged(sidecar: &Sidecar) -> f64 {
    let metrics = sidecar.metrics();
    let ratio: f64 = metrics
        .lines()
        .find(|l| {
            l.starts_with("sluice_budget_used_ratio{")
                && l.contains("tenant=\"acme\"")
                && l.contains("spend_micros_per_day")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no budget gauge in {metrics}"));
    ratio * BUDGET_MICROS
}

#[test]
fn an_abandoned_stream_is_charged_what_was_produced() {
    for case in &CASES {
        let world = world();
        let sidecar = world.serve();
        let fake = match case.provider {
            "openai" => &world.openai,
            _ => &world.anthropic,
        };
        abandon(&sidecar, case);
        let (billed, whole, output) = billed(fake, case);
        assert_eq!(whole, Some(false), "{}: the stream was cut", case.provider);
        // sluice settles the charge once the stream is dropped: wait for the correction.
        let wait = Deadline::after(Duration::from_secs(20));
        let mut spent = charged(&sidecar);
        while spent > 2.0 * billed && !wait.passed() {
            std::thread::sleep(Duration::from_millis(50));
            spent = charged(&sidecar);
        }
        let estimate = {
            let input = 2_000.0 * 5.0 / 4.0;
            input * case.prices.0 + 4_000.0 * case.prices.1
        };
        println!(
            "{}: produced {output} output tokens; billed {billed:.0} µUSD, charged {spent:.0} \
             ({:.3}×), the estimate {estimate:.0}",
            case.provider,
            spent / billed
        );
        assert!(
            spent >= billed * 0.999 && spent <= billed * 1.1,
            "{}: charged {spent:.0} µUSD for a stream the provider billed {billed:.0} µUSD \
             (the estimate: {estimate:.0})",
            case.provider
        );
    }
}
