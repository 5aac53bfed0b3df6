//! Crash safety: a host process is killed with SIGKILL at a seeded-random step of its writes
//! — before the intent is committed, after it, with an attempt marked sent, while the
//! attempt is at the provider, after the answer arrived, during reconciliation — then
//! restarted until its work is done. Judged at the provider's ledger, whatever the kill
//! point: no logical action is stored twice, every action the journal calls succeeded is
//! stored once under the id the journal holds, none it calls failed or cancelled is stored,
//! the journal ends with nothing left unsettled, and the audit log still verifies.
//!
//! Against two providers (`sluice_tests::crash_run`): one that stores a write once per
//! idempotency key (Stripe's style; the host settles by a resend with the same key), and one
//! that ignores the key (GitHub's create endpoints; the host settles by looking the issue up
//! by the client reference in its body). Against the second, a blind resend is a duplicate.
//!
//! `CRASH_RUNS` sets the number of seeded runs per provider (24 by default). The soak, not
//! part of the default run, makes `SOAK_RUNS` runs (1 000 by default) across both and
//! reports what the provider counted:
//!
//! ```sh
//! SOAK_RUNS=1000 cargo test -p sluice-tests --test never_twice crash:: -- --ignored --nocapture
//! ```
//!
//! With damage (`sluice_tests::damage`): between the killed host and its restart the
//! journal is emptied or deleted, the audit witness emptied, the plugin's compiled artifact
//! swapped for another's, or the Redis the host shares with a second host restarted
//! without persistence (the second host then tries the same actions, and must be refused
//! each). The restarted host must refuse to start, or start and say what it found; after
//! the operator's remedy the run is judged as any other. Store-loss runs need
//! `redis-server`. `DAMAGE_RUNS`
//! seeded runs per damage and provider in the default run (2), `SOAK_DAMAGE_RUNS` in all in
//! the damage soak (500 by default):
//!
//! ```sh
//! SOAK_DAMAGE_RUNS=500 cargo test -p sluice-tests --test never_twice crash::soak_damaged -- --ignored --nocapture
//! ```
//!
//! In a group that shares its journal in PostgreSQL (`sluice_tests::group_run`), the killed
//! host is never restarted: another host of the group takes its writes over. `GROUP_RUNS`
//! seeded runs per provider of a group of two in the default run (6), and `FOUR_RUNS` of a
//! group of four hosts that also share quotas on Redis, the three others writing tasks of
//! their own meanwhile (2); skipped without `SLUICE_TEST_POSTGRES_URL`. `SOAK_GROUP_RUNS` in
//! the group soak (500 by default), of `SOAK_GROUP_HOSTS` hosts (4 by default: on Redis too).

use std::collections::BTreeMap;
use std::path::Path;

use sluice::clock::{Clock, SystemClock};
use sluice_tests::crash_run::{Damage, Judgement, Provider, Run, perform};
use sluice_tests::group_run::{Group, perform_group, took_over};
use sluice_tests::redis_server::RedisServer;

const HOST: &str = env!("CARGO_BIN_EXE_crash_host");

async fn one(provider: Provider, seed: u64) -> Judgement {
    let dir = tempfile::tempdir().unwrap();
    perform(&Run::seeded(provider, seed), Path::new(HOST), dir.path()).await
}

async fn damaged(provider: Provider, seed: u64, damage: Damage) -> Judgement {
    let dir = tempfile::tempdir().unwrap();
    perform(
        &Run::damaged(provider, seed, damage),
        Path::new(HOST),
        dir.path(),
    )
    .await
}

fn runs(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_at_any_step_of_a_write_never_duplicates_it() {
    let runs = runs("CRASH_RUNS", 24);
    let mut killed_at = BTreeMap::<String, u32>::new();
    for provider in Provider::ALL {
        let mut effects = 0;
        for seed in 0..runs {
            let j = one(provider, seed).await;
            assert!(
                j.problems.is_empty(),
                "{} seed {seed}: {:?}\n{}",
                provider.name(),
                j.problems,
                j.log.join("\n")
            );
            effects += j.effects;
            *killed_at.entry(j.killed_at).or_default() += 1;
        }
        assert!(effects > 0, "{}: no run stored anything", provider.name());
    }
    println!("killed at: {killed_at:?}");
    if runs >= 24 {
        for step in [
            "recording",
            "intent-committed",
            "sent-1",
            "answered-1",
            "reconciling",
        ] {
            assert!(
                killed_at.contains_key(step),
                "no run was killed at `{step}`: {killed_at:?}"
            );
        }
    }
}

/// Totals over a provider's runs.
#[derive(Debug, Default)]
struct Totals {
    runs: u64,
    actions: usize,
    effects: usize,
    duplicates: usize,
    lost: usize,
    phantoms: usize,
    succeeded: usize,
    failed: usize,
    escalated: usize,
    escalated_done: usize,
    found_by_second_look: usize,
    bad_runs: Vec<String>,
}

impl Totals {
    fn add(&mut self, provider: Provider, seed: u64, j: &Judgement) {
        self.runs += 1;
        self.actions += j.actions;
        self.effects += j.effects;
        self.duplicates += j.duplicates;
        self.lost += j.lost;
        self.phantoms += j.phantoms;
        self.succeeded += j.succeeded;
        self.failed += j.failed;
        self.escalated += j.escalated;
        self.escalated_done += j.escalated_done;
        self.found_by_second_look += j.found_by_second_look;
        if !j.problems.is_empty() {
            self.bad_runs.push(format!(
                "{} seed {seed}: {:?}\n{}",
                provider.name(),
                j.problems,
                j.log.join("\n")
            ));
        }
    }
}

/// Prints what `totals` (by `what`: provider or damage) counted, one row each.
fn print_table(what: &str, totals: &BTreeMap<&str, Totals>) {
    println!(
        "{what} | runs | actions | stored | duplicates | lost | phantoms | succeeded | failed \
         | escalated (of which done) | found by a second look"
    );
    for (name, t) in totals {
        println!(
            "{name} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {}",
            t.runs,
            t.actions,
            t.effects,
            t.duplicates,
            t.lost,
            t.phantoms,
            t.succeeded,
            t.failed,
            t.escalated,
            t.escalated_done,
            t.found_by_second_look
        );
    }
}

/// Fails naming the first bad run of `totals`, if there is one.
fn assert_no_bad_run(totals: &BTreeMap<&str, Totals>) {
    let bad: Vec<&String> = totals.values().flat_map(|t| &t.bad_runs).collect();
    assert!(
        bad.is_empty(),
        "{} bad run(s); the first:\n{}",
        bad.len(),
        bad[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a soak of 1 000 kill -9 runs (minutes): \
            SOAK_RUNS=1000 cargo test -p sluice-tests --test never_twice crash:: -- --ignored --nocapture"]
async fn soak_a_thousand_killed_hosts_duplicate_nothing_at_the_provider() {
    let runs = runs("SOAK_RUNS", 1_000);
    let started = SystemClock.now();
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut killed_at = BTreeMap::<String, u32>::new();
    // The same seeds against both providers, alternating.
    for n in 0..runs {
        let (seed, provider) = (n / 2, Provider::ALL[(n % 2) as usize]);
        let j = one(provider, seed).await;
        totals
            .entry(provider.name())
            .or_default()
            .add(provider, seed, &j);
        *killed_at.entry(j.killed_at).or_default() += 1;
        if (n + 1) % 100 == 0 {
            println!("{} runs, {:.0} s", n + 1, started.elapsed().as_secs_f64());
        }
    }
    let elapsed = started.elapsed();
    println!("soak: {runs} runs in {:.1} s", elapsed.as_secs_f64());
    print_table("provider", &totals);
    println!("killed at: {killed_at:?}");
    assert_no_bad_run(&totals);
}

/// Issue 26: state damaged between two runs — an emptied or deleted journal, an emptied
/// witness, another plugin's artifact — was adopted silently, and a write done before was
/// sent again. Each damaged start is refused (then remedied as an operator would) or
/// reported, and nothing is done twice or lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_state_between_two_runs_is_refused_or_reported_and_nothing_is_done_twice() {
    let runs = runs("DAMAGE_RUNS", 2);
    let mut starts = BTreeMap::<(&str, &str), u32>::new();
    for damage in Damage::ALL {
        // A store's loss needs a real Redis; on a machine without one it is skipped.
        if damage == Damage::StoreLost && sluice_tests::redis_server::without_redis() {
            continue;
        }
        for provider in Provider::ALL {
            for seed in 0..runs {
                let j = damaged(provider, seed, damage).await;
                assert!(
                    j.problems.is_empty(),
                    "{} {} seed {seed}: {:?}\n{}",
                    damage.name(),
                    provider.name(),
                    j.problems,
                    j.log.join("\n")
                );
                let start = j.damaged_start.unwrap_or("none");
                *starts.entry((damage.name(), start)).or_default() += 1;
            }
        }
    }
    println!("damaged starts: {starts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a soak of 500 damaged kill -9 runs (minutes): \
            SOAK_DAMAGE_RUNS=500 cargo test -p sluice-tests --test never_twice crash::soak_damaged -- --ignored --nocapture"]
async fn soak_damaged_state_duplicates_and_loses_nothing() {
    let runs = runs("SOAK_DAMAGE_RUNS", 500);
    let started = SystemClock.now();
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut starts = BTreeMap::<(&str, &str), u32>::new();
    for n in 0..runs {
        let kinds = Damage::ALL.len() as u64;
        let damage = Damage::ALL[(n % kinds) as usize];
        if damage == Damage::StoreLost && sluice_tests::redis_server::without_redis() {
            continue;
        }
        let provider = Provider::ALL[((n / kinds) % 2) as usize];
        let seed = n / (2 * kinds);
        let j = damaged(provider, seed, damage).await;
        totals
            .entry(damage.name())
            .or_default()
            .add(provider, seed, &j);
        *starts
            .entry((damage.name(), j.damaged_start.unwrap_or("none")))
            .or_default() += 1;
        if (n + 1) % 50 == 0 {
            println!("{} runs, {:.0} s", n + 1, started.elapsed().as_secs_f64());
        }
    }
    println!(
        "damage soak: {runs} runs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    print_table("damage", &totals);
    println!("damaged starts: {starts:?}");
    assert_no_bad_run(&totals);
}

/// A host of a group of `hosts` that shares its journal in PostgreSQL (and, from three
/// hosts, its quotas on a Redis of its own), killed at a seeded step of its writes and never
/// restarted: `None` when no PostgreSQL is given (the test skips).
async fn group(provider: Provider, seed: u64, hosts: usize) -> Option<Judgement> {
    let url = sluice_tests::postgres::fresh_schema()?;
    let dir = tempfile::tempdir().unwrap();
    let redis = (hosts > 2).then(RedisServer::start);
    let store = redis.as_ref().map(RedisServer::url);
    let group = Group {
        journal_url: &url,
        store: store.as_deref(),
        others: hosts - 1,
    };
    let run = Run::seeded(provider, seed);
    Some(perform_group(&run, Path::new(HOST), dir.path(), group).await)
}

/// Issue 29: a host that is gone for good stranded its writes. In a group that shares its
/// journal, a host killed at any step of its writes and never restarted has them taken over
/// by another host, which settles them as the dead host would have: nothing done twice,
/// nothing lost, nothing done that the journal does not account for. `GROUP_RUNS` seeded
/// runs per provider (6 by default); the soak:
///
/// ```sh
/// SOAK_GROUP_RUNS=500 cargo test -p sluice-tests --test never_twice crash::soak_group -- --ignored --nocapture
/// ```
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_of_a_group_killed_for_good_has_its_writes_taken_over_and_never_duplicated() {
    let runs = runs("GROUP_RUNS", 6);
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut taken = 0;
    for provider in Provider::ALL {
        for seed in 0..runs {
            let Some(j) = group(provider, seed, 2).await else {
                return;
            };
            taken += usize::from(took_over(&j));
            totals
                .entry(provider.name())
                .or_default()
                .add(provider, seed, &j);
        }
    }
    print_table("provider", &totals);
    println!("runs whose writes were taken over: {taken}");
    assert_no_bad_run(&totals);
    assert!(
        taken > 0,
        "no run left the second host anything to take over"
    );
}

/// The same in a group of four host processes sharing PostgreSQL and Redis: while one host
/// is killed at a seeded step of its writes, the three others write tasks of their own to
/// the same provider; a live one takes the dead host's writes over, and the dead host's
/// task, given to one of them, is answered from the journal. `FOUR_RUNS` seeded runs per
/// provider (2 by default; the soak runs 500).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_hosts_writing_beside_a_host_killed_for_good_take_it_over_and_duplicate_nothing() {
    if sluice_tests::redis_server::without_redis() {
        return;
    }
    let runs = runs("FOUR_RUNS", 2);
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    for provider in Provider::ALL {
        for seed in 0..runs {
            let Some(j) = group(provider, seed, 4).await else {
                return;
            };
            totals
                .entry(provider.name())
                .or_default()
                .add(provider, seed, &j);
        }
    }
    print_table("provider", &totals);
    assert_no_bad_run(&totals);
    // Each run's journal holds the dead host's task and the three others'.
    for t in totals.values() {
        assert!(
            u64::try_from(t.actions).is_ok_and(|a| a >= 4 * t.runs),
            "{t:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a soak of 500 kill -9 runs of a group's host (minutes): \
            SOAK_GROUP_RUNS=500 cargo test -p sluice-tests --test never_twice crash::soak_group -- --ignored --nocapture"]
async fn soak_group_takeover_duplicates_and_loses_nothing() {
    let hosts = usize::try_from(runs("SOAK_GROUP_HOSTS", 4)).expect("a few hosts");
    let runs = runs("SOAK_GROUP_RUNS", 500);
    let mut taken = 0;
    let started = SystemClock.now();
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut killed_at = BTreeMap::<String, u32>::new();
    for n in 0..runs {
        let (seed, provider) = (n / 2, Provider::ALL[(n % 2) as usize]);
        let Some(j) = group(provider, seed, hosts).await else {
            return;
        };
        totals
            .entry(provider.name())
            .or_default()
            .add(provider, seed, &j);
        *killed_at.entry(j.killed_at.clone()).or_default() += 1;
        taken += usize::from(took_over(&j));
        if (n + 1) % 50 == 0 {
            println!("{} runs, {:.0} s", n + 1, started.elapsed().as_secs_f64());
        }
    }
    println!(
        "group soak: {runs} runs of {hosts} hosts in {:.1} s, {taken} of them taken over",
        started.elapsed().as_secs_f64()
    );
    print_table("provider", &totals);
    println!("killed at: {killed_at:?}");
    assert_no_bad_run(&totals);
}
