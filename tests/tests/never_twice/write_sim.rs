//! The write path's simulation (`sluice_tests::write_sim`) on a fixed set of seeds: every
//! scenario keeps the three invariants — no action done twice, every action told succeeded
//! done once, no action told not sent done later. The long run (a million scenarios and
//! more) is `cargo run -p sluice-tests --bin write_sim`; `docs/benchmarks/write-sim.md`
//! records it.

use sluice_tests::write_sim::{Tally, run};

/// Scenarios run here: a few seconds.
const SEEDS: u64 = 20_000;

/// Seeds that broke an invariant while the simulation was built, each with what it found.
/// (They name scenarios of this generator; a change to it draws other scenarios from them.)
const FOUND: [(u64, &str); 6] = [
    (
        52,
        "a journal restored to before a write was refused, accepted by the operator: the \
         restart sent the refused write (now: what the log saw move since is lost)",
    ),
    (
        97,
        "another host's journal copied in and accepted: the restart sent that host's pending \
         write (now: what the log does not know is lost)",
    ),
    (
        501,
        "a state directory wiped with the audit log in it, then an old journal restored: \
         adopted without a word (now: a journal that moved beside a log that names none is \
         refused)",
    ),
    (
        1605,
        "the store lost its state and a host's state directory was wiped: the wiped host, \
         having never joined, made a fresh epoch and sent another host's action again (now: \
         hosts never make the epoch; `sluice store init` does, once)",
    ),
    (
        37113,
        "a journal that never moved copied to another host: both journals had one id, so a \
         later copy of one over the other agreed with its log (now: a journal started beside \
         a new log gets a new id)",
    ),
    (
        7682,
        "a journal copied to another host and accepted there kept its id, so a copy of it \
         put back agreed with the first host's log (now: an accepted journal gets a new id)",
    ),
];

#[test]
fn every_seed_that_found_a_defect_keeps_the_invariants() {
    for (seed, found) in FOUND {
        if let Err(v) = run(seed) {
            panic!("{found}\n{v}");
        }
    }
}

#[test]
fn no_seed_of_the_fixed_set_does_an_action_twice() {
    let mut tally = Tally::default();
    for seed in 0..SEEDS {
        match run(seed) {
            Ok(t) => tally.add(&t),
            Err(v) => panic!("{v}"),
        }
    }
    // The set reaches what it is for: damage, deaths, refusals, escalations, effects.
    assert!(tally.local_damage > SEEDS, "{tally:?}");
    assert!(tally.store_damage > SEEDS / 4, "{tally:?}");
    assert!(tally.deaths > SEEDS / 2, "{tally:?}");
    assert!(tally.refused_starts > SEEDS / 4, "{tally:?}");
    assert!(tally.not_sent > SEEDS / 4, "{tally:?}");
    assert!(tally.escalated > SEEDS / 4, "{tally:?}");
    assert!(tally.effects > SEEDS, "{tally:?}");
}
