//! The latency `sluice serve` adds to a call, measured from outside as users meet it: the same
//! chat completion sent to a provider on loopback directly, through a plain reverse-proxy hop
//! (the cost of any hop: [`hop`]), through nginx set up as such a hop ([`nginx`], when
//! installed), through the real `sluice serve` binary, through the same
//! sidecar inside this process, and through the host embedded in this process as a library
//! (`Sluice::execute`) — side by side in one run, in rounds whose order turns, so every target
//! sees the same machine.
//!
//! Two loads ([`load`]): one connection sending one request after another; and open-loop
//! rates on a fixed number of connections, each latency counted from the request's scheduled
//! time. Beside each figure: the CPU the target's own process spent per request, the context
//! switches its threads made per request (each a wait for, or a hand-over to, another
//! thread), and the machine's load average when the load ended (these machines are shared).
//! For the real binary, the plugin calls' mean time as the server itself timed them
//! (`sluice_plugin_call_seconds` on its admin API's `/metrics`, over the measured rounds).
//!
//! Run: `cargo bench -p sluice-cli --bench added_latency` (about three minutes). Options, by
//! environment variable:
//!
//! - `ADDED_LATENCY_RATES`: requests per second, comma-separated (default `500,2000`);
//! - `ADDED_LATENCY_SECS`: measured seconds per target and rate (default `12`);
//! - `ADDED_LATENCY_CONNECTIONS`: connections for the rates (default `20`);
//! - `ADDED_LATENCY_SEQUENTIAL`: requests per target one after another (default `3000`);
//! - `ADDED_LATENCY_ROUNDS`: rounds each load is split into (default `4`);
//! - `ADDED_LATENCY_WARMUP_SECS`: unmeasured seconds per target before each rate (default `2`;
//!   the sequential load warms up on 5% of its requests);
//! - `ADDED_LATENCY_TARGETS`: which targets, comma-separated (default every one: `direct,hop,
//!   nginx,sluice,sluice in-process,embedded`; `direct` is always measured, the others are
//!   compared to it; `nginx` is left out when none is found, see [`nginx`]);
//! - `ADDED_LATENCY_NGINX`: the nginx program for the target `nginx` (default `nginx` on
//!   `PATH` or in `/usr/sbin`);
//! - `ADDED_LATENCY_BASELINE`: the path of another `sluice` binary (an earlier build), measured
//!   beside this one as the target `baseline`: a change's before and after in one run;
//! - `ADDED_LATENCY_SIDECAR`: the path of the `sluice` binary measured as the target `sluice`
//!   (default: the one built with this bench), for example `target/release/sluice` as
//!   `cargo build --release` makes it;
//! - `ADDED_LATENCY_CLIENT`: `hey` sends the load with `hey` instead of this bench's own
//!   client ([`hey`]; the embedded host is then left out);
//! - `ADDED_LATENCY_CPUS`: where the processes run ([`cpus`]): `any` (the default, as the
//!   kernel places them), `shared` (all on one CPU) or `apart` (the hop, `sluice serve` and the
//!   baseline on a CPU of their own);
//! - `ADDED_LATENCY_BUDGETS`: `1` gives every sidecar and the embedded host spend budgets far
//!   above the load, so each call is charged in the journal before it is sent and corrected
//!   after;
//! - `ADDED_LATENCY_CONFIG`: TOML added to every sidecar's and the embedded host's
//!   configuration, for example `[plugins]\ncall_deadline_ms = 60000`; read before any target
//!   starts, and refused by name when the configuration with it is (a table the bench
//!   already writes, such as `[providers.openai.limits]`, may not be named again);
//! - `ADDED_LATENCY_BASELINE_CONFIG`: TOML added to the baseline's configuration alone, after
//!   every table the bench writes, for example `[serve]\ncode_on_huge_pages = false`: the
//!   same binary measured with a setting and without it; read before any target starts, and
//!   refused by name as `ADDED_LATENCY_CONFIG` is;
//! - `ADDED_LATENCY_HUGE_TEXT`: `1` moves this bench's own code onto huge pages at start
//!   ([`sluice::code_on_huge_pages`]), as an embedder may: the in-process targets (`direct`'s
//!   provider among them) run from it;
//! - `ADDED_LATENCY_JOURNAL`: a `postgres://` URL: every sidecar and the embedded host keep
//!   their journal (budgets included) in that database, each a host of its own in the group,
//!   instead of a file each. The bench leaves its rows there: give it a database of its own.
//!
//! Run without `--bench` (`cargo test -p sluice-cli --bench added_latency`, as CI does), it is
//! a brief check that every target answers every request: a few requests per load, and a
//! failure when any was refused.

mod cpus;
mod hey;
mod hop;
mod load;
mod nginx;
mod targets;

use std::time::Duration;

use load::{PluginTimes, Tally, Target, quantile};

/// The run's options.
struct Options {
    rates: Vec<u32>,
    secs: f64,
    connections: usize,
    sequential: usize,
    rounds: u32,
    warmup_secs: f64,
    targets: Vec<String>,
    /// `hey`, when it sends the load ([`hey`]).
    hey: Option<std::path::PathBuf>,
}

impl Options {
    fn from_env() -> Self {
        let number = |name: &str, default: f64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .unwrap_or(default)
        };
        let list = |name: &str| -> Option<Vec<String>> {
            let v = std::env::var(name).ok()?;
            let items: Vec<String> = v.split(',').map(|s| s.trim().to_owned()).collect();
            Some(items).filter(|i| !i.iter().all(String::is_empty))
        };
        let rates = list("ADDED_LATENCY_RATES")
            .map(|r| {
                r.iter()
                    .filter_map(|r| r.parse().ok())
                    .filter(|r| *r > 0)
                    .collect()
            })
            .unwrap_or_else(|| vec![500, 2000]);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "small whole numbers from the environment"
        )]
        Self {
            rates,
            secs: number("ADDED_LATENCY_SECS", 12.0).max(0.1),
            connections: number("ADDED_LATENCY_CONNECTIONS", 20.0).max(1.0) as usize,
            sequential: number("ADDED_LATENCY_SEQUENTIAL", 3000.0) as usize,
            rounds: number("ADDED_LATENCY_ROUNDS", 4.0).max(1.0) as u32,
            warmup_secs: number("ADDED_LATENCY_WARMUP_SECS", 2.0),
            targets: list("ADDED_LATENCY_TARGETS").unwrap_or_default(),
            hey: None,
        }
    }

    /// A few requests per load: does every target still answer?
    fn brief() -> Self {
        Self {
            rates: vec![200],
            secs: 0.5,
            connections: 4,
            sequential: 40,
            rounds: 1,
            warmup_secs: 0.1,
            targets: Vec::new(),
            hey: None,
        }
    }
}

/// One load: one connection, one request after another; or a rate on the connections.
#[derive(Clone, Copy)]
enum Load {
    Sequential(usize),
    Rate(u32),
}

impl Load {
    fn name(self) -> String {
        match self {
            Self::Sequential(_) => "1 connection, sequential".to_owned(),
            Self::Rate(r) => format!("{r}/s"),
        }
    }

    /// Runs `share` of the load (its seconds, or its requests) against `target`.
    async fn run(self, target: &Target, o: &Options, share: f64) -> Tally {
        if let Some(program) = &o.hey {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss,
                reason = "request counts"
            )]
            let ask = match self {
                Self::Sequential(n) => hey::Ask::Sequential(((n as f64) * share).ceil() as usize),
                Self::Rate(rate) => hey::Ask::Rate {
                    rate,
                    connections: o.connections,
                    secs: o.secs * share,
                },
            };
            return hey::run(program, target, &ask).await;
        }
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "request counts"
        )]
        match self {
            Self::Sequential(n) => {
                load::run(target, None, 1, ((n as f64) * share).ceil() as usize).await
            }
            Self::Rate(r) => {
                let count = (f64::from(r) * o.secs * share).round() as usize;
                load::run(target, Some(r), o.connections, count).await
            }
        }
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The number of CPUs and the load average, as `/proc/loadavg` has it.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!("{cpus} CPUs, load average {}", load.join(" "))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(hop::HOP) {
        return hop::serve(args.get(2).cloned().ok_or("hop UPSTREAM")?);
    }
    let brief = !args.iter().any(|a| a == "--bench");
    let mut options = if brief {
        Options::brief()
    } else {
        Options::from_env()
    };
    if !brief && hey::wanted() {
        options.hey = Some(hey::program()?);
    }
    let placement = if brief {
        cpus::Placement::Any
    } else {
        cpus::Placement::from_env()?
    };
    // Before the runtime's threads start: they inherit this process's CPU.
    let cpu = placement.pin_self()?;
    let huge_text = (!brief
        && std::env::var_os("ADDED_LATENCY_HUGE_TEXT").is_some_and(|v| v == "1"))
    .then(sluice::code_on_huge_pages);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // As `sluice serve` does: the in-process sidecar's metrics go to a Prometheus recorder.
    metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
    let dir = tempfile::tempdir()?;
    let fake = rt.block_on(targets::upstream())?;
    targets::check_extra_config(dir.path(), &fake)?;
    let (hop, _hop) = targets::hop(&fake, cpu)?;
    let sidecar = std::env::var_os("ADDED_LATENCY_SIDECAR").filter(|p| !p.is_empty() && !brief);
    let (binary, _binary) = targets::binary(
        dir.path(),
        &fake,
        "sluice",
        sidecar.as_deref().map(std::path::Path::new),
        cpu,
    )?;
    let (in_process, running) = rt.block_on(targets::in_process(dir.path(), &fake))?;
    let embedded = {
        let _runtime = rt.enter();
        targets::embedded(dir.path(), &fake)?
    };
    let mut all = vec![targets::direct(&fake), hop];
    let asked = |name: &str| options.targets.iter().any(|n| n == name);
    let wanted = |name: &str| options.targets.is_empty() || asked(name);
    let mut _nginx = None;
    if wanted(nginx::NAME)
        && let Some((t, p)) = nginx::start(dir.path(), &fake, cpu, asked(nginx::NAME))?
    {
        all.push(t);
        _nginx = Some(p);
    }
    all.extend([binary, in_process, embedded]);
    let baseline = std::env::var_os("ADDED_LATENCY_BASELINE").filter(|_| !brief);
    let _baseline = match baseline {
        Some(program) => {
            let (t, p) =
                targets::binary(dir.path(), &fake, "baseline", Some(program.as_ref()), cpu)?;
            all.push(t);
            Some(p)
        }
        None => None,
    };
    if options.hey.is_some() && wanted("embedded") {
        eprintln!("the target `embedded` is left out: hey sends over HTTP only");
    }
    let chosen: Vec<&Target> = all
        .iter()
        .filter(|t| t.name == "direct" || wanted(t.name))
        .filter(|t| options.hey.is_none() || matches!(t.via, load::Via::Http { .. }))
        .collect();
    for t in &chosen {
        rt.block_on(load::until_ready(t, Duration::from_secs(30)))?;
    }

    let mut loads = vec![Load::Sequential(options.sequential)];
    loads.extend(options.rates.iter().map(|&r| Load::Rate(r)));
    eprintln!(
        "added latency: {} targets; client {}; sequential {} requests, rates {:?}/s on {} connections \
         for {} s, {} rounds, {} s warm-up; CPUs {}{}; budgets {}; journal {}; added configuration {:?}{}; {}; {}",
        chosen.len(),
        if options.hey.is_some() {
            "hey"
        } else {
            "the bench's own"
        },
        options.sequential,
        options.rates,
        options.connections,
        options.secs,
        options.rounds,
        options.warmup_secs,
        placement.name(),
        cpu.map_or_else(String::new, |c| format!(
            " (the process targets on CPU {c})"
        )),
        if targets::budgets() { "on" } else { "off" },
        if targets::journal().is_some() {
            "PostgreSQL"
        } else {
            "a file each"
        },
        targets::extra_config(),
        Some(targets::baseline_config())
            .filter(|c| !c.is_empty() && _baseline.is_some())
            .map_or_else(String::new, |c| format!(", the baseline's own {c:?}")),
        huge_text.map_or_else(
            || "the bench's code on small pages".to_owned(),
            |h| format!("the bench's {h}")
        ),
        machine()
    );
    let mut rows = Vec::new();
    let mut plugin_rows = Vec::new();
    for load in loads {
        let warmup = match load {
            Load::Sequential(_) => 0.05,
            Load::Rate(_) => options.warmup_secs / options.secs,
        };
        for t in &chosen {
            rt.block_on(load.run(t, &options, warmup));
        }
        let mut tallies: Vec<Tally> = chosen.iter().map(|_| Tally::default()).collect();
        let before: Vec<PluginTimes> = chosen
            .iter()
            .map(|t| rt.block_on(load::plugin_times(t)))
            .collect::<Result<_, _>>()?;
        for round in 0..options.rounds {
            // The order turns each round: no target always goes first or last.
            for k in 0..chosen.len() {
                let i = (k + round as usize) % chosen.len();
                let t = rt.block_on(load.run(chosen[i], &options, 1.0 / f64::from(options.rounds)));
                tallies[i].add(t);
            }
        }
        let machine = machine();
        eprintln!("{} done; {machine}", load.name());
        for ((t, before), tally) in chosen.iter().zip(before).zip(tallies.iter()) {
            let after = rt.block_on(load::plugin_times(t))?;
            for (function, (calls, secs)) in after {
                let (was_calls, was_secs) = before.get(&function).copied().unwrap_or_default();
                plugin_rows.push(format!(
                    "| {} | {} | {function} | {:.0} | {:.1} | {} |",
                    load.name(),
                    t.name,
                    calls - was_calls,
                    (secs - was_secs) / (calls - was_calls).max(1.0) * 1e6,
                    tally.sent,
                ));
            }
        }
        rows.push((load, tallies, machine));
    }

    let failed = report(&chosen, &mut rows);
    if !plugin_rows.is_empty() {
        println!(
            "\n| load | target | plugin function | calls | mean µs a call, as the server timed it | requests |"
        );
        println!("|---|---|---|--:|--:|--:|");
        for row in &plugin_rows {
            println!("{row}");
        }
    }
    eprintln!("provider answered {} requests", fake.attempts().len());
    rt.block_on(running.shutdown());
    if failed && brief {
        return Err("a target refused requests (above)".into());
    }
    Ok(())
}

/// Prints the tables; whether any request failed.
fn report(chosen: &[&Target], rows: &mut [(Load, Vec<Tally>, String)]) -> bool {
    println!(
        "\n| load | target | sent | errors | p50 µs | p90 µs | p99 µs | max µs | start lag p50 / p99 µs | own CPU µs/request | own switches/request |"
    );
    println!("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    let mut failed = false;
    for (load, tallies, _) in rows.iter_mut() {
        for (t, tally) in chosen.iter().zip(tallies.iter_mut()) {
            tally.sort();
            let l = &tally.latencies;
            #[allow(clippy::cast_precision_loss, reason = "request counts")]
            let cpu = micros(tally.cpu) / tally.sent.max(1) as f64;
            #[allow(clippy::cast_precision_loss, reason = "switch counts")]
            let switches = tally.switches as f64 / tally.sent.max(1) as f64;
            let (own, own_switches) = if t.pid.is_some() {
                (format!("{cpu:.0}"), format!("{switches:.1}"))
            } else {
                (
                    format!("({cpu:.0}, whole bench)"),
                    format!("({switches:.1}, whole bench)"),
                )
            };
            println!(
                "| {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} / {:.0} | {own} | {own_switches} |",
                load.name(),
                t.name,
                tally.sent,
                tally.errors,
                micros(quantile(l, 0.50)),
                micros(quantile(l, 0.90)),
                micros(quantile(l, 0.99)),
                micros(l.last().copied().unwrap_or_default()),
                micros(quantile(&tally.start_lag, 0.50)),
                micros(quantile(&tally.start_lag, 0.99)),
            );
            if let Some(why) = &tally.first_error {
                failed = true;
                // scripts/build-release.sh finds a refused training run by this line's
                // "TARGET: N failed; the first:".
                eprintln!(
                    "{}: {}: {} failed; the first: {why}",
                    load.name(),
                    t.name,
                    tally.errors
                );
            }
        }
    }
    println!(
        "\n| load | target | added p50 µs | added p99 µs | p50 added / hop's | p99 added / hop's \
         | p50 added / nginx's | p99 added / nginx's | load average at the end |"
    );
    println!("|---|---|--:|--:|--:|--:|--:|--:|---|");
    for (load, tallies, machine) in rows.iter() {
        let at = |i: usize, q: f64| micros(quantile(&tallies[i].latencies, q));
        // A target's added latency over a yardstick's, when that yardstick was measured.
        let ratio = |i: usize, yardstick: &str, q: f64| {
            chosen
                .iter()
                .position(|t| t.name == yardstick)
                .filter(|&y| y != i)
                .map_or_else(
                    || "–".to_owned(),
                    |y| format!("{:.2}", (at(i, q) - at(0, q)) / (at(y, q) - at(0, q))),
                )
        };
        for (i, t) in chosen.iter().enumerate().skip(1) {
            let (p50, p99) = (at(i, 0.5) - at(0, 0.5), at(i, 0.99) - at(0, 0.99));
            println!(
                "| {} | {} | {p50:.0} | {p99:.0} | {} | {} | {} | {} | {} |",
                load.name(),
                t.name,
                ratio(i, "hop", 0.5),
                ratio(i, "hop", 0.99),
                ratio(i, nginx::NAME, 0.5),
                ratio(i, nginx::NAME, 0.99),
                machine.split("load average ").nth(1).unwrap_or(""),
            );
        }
    }
    failed
}
