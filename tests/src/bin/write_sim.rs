//! The write path's simulation, long: `write_sim [SCENARIOS] [FIRST_SEED]` runs SCENARIOS
//! scenarios (default 1 000 000) from FIRST_SEED (default 0) on every core, printing
//! progress every 100 000, and exits 1 at the first broken invariant, printing its seed
//! and trace (make it a regression test in tests/tests/never_twice/write_sim.rs).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use sluice_tests::write_sim::{Tally, run};

fn main() {
    let mut args = std::env::args().skip(1);
    let count: u64 = args.next().map_or(1_000_000, |a| {
        a.replace('_', "").parse().expect("SCENARIOS: a number")
    });
    let first: u64 = args
        .next()
        .map_or(0, |a| a.parse().expect("FIRST_SEED: a number"));
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let next = Arc::new(AtomicU64::new(first));
    let done = Arc::new(AtomicU64::new(0));
    let broken = Arc::new(AtomicBool::new(false));
    #[allow(
        clippy::disallowed_methods,
        reason = "the run's own wall time, to report"
    )]
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (next, done, broken) = (next.clone(), done.clone(), broken.clone());
            std::thread::spawn(move || {
                let mut tally = Tally::default();
                while !broken.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + count {
                        break;
                    }
                    match run(seed) {
                        Ok(t) => tally.add(&t),
                        Err(v) => {
                            broken.store(true, Ordering::Relaxed);
                            eprintln!("{v}");
                            return Err(v.seed);
                        }
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n % 100_000 == 0 {
                        eprintln!("{n} scenarios in {:.0?}", started.elapsed());
                    }
                }
                Ok(tally)
            })
        })
        .collect();
    let mut tally = Tally::default();
    let mut failed = None;
    for w in workers {
        match w.join().expect("a worker") {
            Ok(t) => tally.add(&t),
            Err(seed) => failed = Some(seed),
        }
    }
    if let Some(seed) = failed {
        eprintln!("invariant broken at seed {seed}");
        std::process::exit(1);
    }
    println!(
        "{} scenarios (seeds {first}..{}) in {:.1?} on {threads} threads, no invariant broken",
        done.load(Ordering::Relaxed),
        first + count,
        started.elapsed()
    );
    println!("{tally:#?}");
}
