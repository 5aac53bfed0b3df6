//! `hey` as the client (`ADDED_LATENCY_CLIENT=hey`): the load generator people reach for, a
//! process of its own, in place of this bench's client for every target served over HTTP.
//!
//! A rate is `hey -c CONNECTIONS -q RATE/CONNECTIONS -z SECS`: each of its workers sends on
//! its own keep-alive connection at most its share of the rate, the next request when the
//! answer is in and its tick has come (a closed loop: unlike this bench's own client, a
//! request that waits for a slow answer does not count the wait). One connection sending
//! one request after another is `hey -c 1 -n N`. Each request's time comes from hey's CSV
//! output (`-o csv`), which rounds it to 0.1 ms; requests that opened their connection
//! (DNS+dialup above zero) are left out, so every figure is a request on a warm connection.
//!
//! The embedded host has no URL to send to: with `hey` it is left out, with a line saying so.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::load::{BODY, Tally, Target, Used, Via};

/// The client a run asked for: `ADDED_LATENCY_CLIENT=hey`.
pub fn wanted() -> bool {
    std::env::var("ADDED_LATENCY_CLIENT").is_ok_and(|v| v.trim() == "hey")
}

/// The `hey` program: on `PATH`, else an error that says how to get it.
pub fn program() -> Result<PathBuf, String> {
    crate::targets::find_program("hey", &[]).ok_or_else(|| {
        "ADDED_LATENCY_CLIENT=hey, but no `hey` is on PATH: install it (Debian: \
         `apt-get install hey`)"
            .to_owned()
    })
}

/// What to ask hey for: `count` requests one after another, or `rate` a second on
/// `connections` connections for `secs`.
pub enum Ask {
    Sequential(usize),
    Rate {
        rate: u32,
        connections: usize,
        secs: f64,
    },
}

/// Runs hey against `target` (served over HTTP) and tallies what it reports.
pub async fn run(program: &Path, target: &Target, ask: &Ask) -> Tally {
    let Via::Http { url, authorization } = &target.via else {
        return Tally {
            errors: 1,
            first_error: Some(format!("{}: hey sends over HTTP only", target.name)),
            ..Tally::default()
        };
    };
    let mut command = std::process::Command::new(program);
    command.args([
        "-m",
        "POST",
        "-T",
        "application/json",
        "-H",
        &format!("Authorization: {authorization}"),
        "-d",
        BODY,
        "-o",
        "csv",
        "-t",
        "10",
    ]);
    match *ask {
        Ask::Sequential(n) => {
            command.args(["-c", "1", "-n", &n.max(1).to_string()]);
        }
        Ask::Rate {
            rate,
            connections,
            secs,
        } => {
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a few connections; milliseconds of a short run"
            )]
            let (each, ms) = (
                f64::from(rate) / connections.max(1) as f64,
                (secs * 1000.0).round().max(1.0) as u64,
            );
            command.args([
                "-c",
                &connections.max(1).to_string(),
                "-q",
                &format!("{each}"),
                "-z",
                &format!("{ms}ms"),
            ]);
        }
    }
    command.arg(url).stdin(Stdio::null()).stderr(Stdio::piped());
    let before = Used::of(target.pid);
    // hey runs for seconds: off the runtime's threads, which serve the fake provider.
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)));
    let used = before.since(target.pid);
    let mut tally = match output {
        Ok(o) if o.status.success() => parse(&String::from_utf8_lossy(&o.stdout)),
        Ok(o) => Tally {
            errors: 1,
            first_error: Some(format!(
                "hey exited with {}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            ..Tally::default()
        },
        Err(e) => Tally {
            errors: 1,
            first_error: Some(format!("hey could not be run: {e}")),
            ..Tally::default()
        },
    };
    tally.record(used);
    tally
}

/// hey's CSV: `response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,
/// status-code,offset`, times in seconds.
fn parse(csv: &str) -> Tally {
    let mut tally = Tally::default();
    for line in csv.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let number = |i: usize| fields.get(i).and_then(|f| f.trim().parse::<f64>().ok());
        let (Some(time), Some(dial)) = (number(0), number(1)) else {
            continue;
        };
        tally.sent += 1;
        let status = fields.get(6).map_or("", |s| s.trim());
        if !status.starts_with('2') {
            tally.errors += 1;
            tally
                .first_error
                .get_or_insert_with(|| format!("status {status}"));
            continue;
        }
        if dial > 0.0 {
            // The request that opened its connection: not a warm request's figure.
            continue;
        }
        tally.latencies.push(Duration::from_secs_f64(time));
    }
    tally
}
