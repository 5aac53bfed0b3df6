//! Writes through the sidecar with the openai SDK's generic `client.post`: journaled, sent
//! with one idempotency key, never done twice — when the provider drops the answer, and
//! when the sidecar is stopped (SIGTERM) or killed (SIGKILL) under load and started again
//! on the same state.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use sluice::journal::{Journal, State, client_reference};
use sluice_fake_provider::Fault;

use crate::python::PYTHON;
use crate::scripts::Sdks;
use crate::sidecar::{AGENT_TOKEN, Deadline, Sidecar, World};

const INTENTS: &str = "/v1/payment_intents";
const BATCHES: &str = "/v1/batches";

/// The arguments of `writes.py` for `count` payments of tenant `acme`'s task `task` (actions
/// `prefix0`...), `threads` at a time, to the Stripe-style provider.
fn payments(task: &str, count: usize, threads: usize, prefix: &str) -> Vec<String> {
    let (count, threads) = (count.to_string(), threads.to_string());
    [
        "--provider",
        "payments",
        "--path",
        INTENTS,
        "--tenant",
        "acme",
        "--task",
        task,
        "--count",
        &count,
        "--threads",
        &threads,
        "--prefix",
        prefix,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// One payment of the task `invoices`, action `pay-0`.
fn pay() -> Vec<String> {
    payments("invoices", 1, 1, "pay-")
}

/// Starts `count` payments of `task` (actions `prefix0`...), `threads` at a time, through
/// `sidecar`; `PYTHON.finish` reads what the script saw.
fn start_payments(
    sidecar: &Sidecar,
    task: &str,
    count: usize,
    threads: usize,
    prefix: &str,
) -> std::process::Child {
    let args = payments(task, count, threads, prefix);
    PYTHON.start("writes", &as_strs(&args), &sidecar.url, AGENT_TOKEN)
}

/// The writes a script made.
fn writes(seen: &Value) -> &Vec<Value> {
    seen["writes"].as_array().expect("a list of writes")
}

#[test]
fn a_write_stored_and_then_dropped_is_reconciled_to_one_effect() {
    if PYTHON.unavailable() {
        return;
    }
    a_lost_answer_is_one_effect(&PYTHON);
}

/// A write from `sdks` whose answer is lost (the provider stores it, then drops the
/// connection) has one effect at the provider: a payment is reconciled by a resend under its
/// one key, and the SDK gets the stored object; an OpenAI batch, which cannot be looked up,
/// goes to a person (a 409 naming the escalation), never resent.
pub fn a_lost_answer_is_one_effect(sdks: &Sdks) {
    let world = World::new();
    world.payments.script(INTENTS, [Fault::StoreThenDrop]);
    world.openai.script(BATCHES, [Fault::StoreThenDrop]);
    let sidecar = world.serve();

    let seen = sdks.run("writes", &as_strs(&pay()), &sidecar.url, AGENT_TOKEN);
    let write = &writes(&seen)[0];
    assert_eq!(write["status"], 200, "{seen}");
    assert_eq!(
        write["headers"]["x-sluice-action-state"], "succeeded",
        "{seen}"
    );
    assert_eq!(write["headers"]["x-sluice-attempts"], "2", "{seen}");
    let stored = world.payments.stored();
    assert_eq!(stored.len(), 1, "one effect at the provider: {stored:?}");
    assert_eq!(
        write["id"],
        stored[0].id.as_str(),
        "the SDK got the stored object"
    );
    assert_eq!(
        stored[0].reference.as_deref(),
        // The task the agent named, as its tenant's.
        Some(client_reference("acme/invoices", "pay-0").as_str())
    );
    let key = stored[0]
        .idempotency_key
        .clone()
        .expect("stored under a key");
    assert_eq!(
        world.payments.attempts_with_key(&key),
        2,
        "dropped, then reconciled by a resend with the one key"
    );
    assert_eq!(world.payments.duplicates(), 0);

    // OpenAI has no way to look a write up: an uncertain batch goes to a person, and is
    // never resent.
    let batch = sdks.run("openai_batch", &["batch-1"], &sidecar.url, AGENT_TOKEN);
    assert_eq!(batch["error"], "ConflictError", "{batch}");
    assert_eq!(batch["status"], 409, "{batch}");
    assert_eq!(
        batch["headers"]["x-sluice-action-state"], "escalated",
        "{batch}"
    );
    assert!(
        batch["headers"]["x-sluice-escalation"].is_string(),
        "{batch}"
    );
    assert_eq!(world.openai.attempts_on(BATCHES), 1, "never resent");
    assert_eq!(world.openai.stored().len(), 1);
    // Sent again by the agent, the same action: still the person's, still not sent.
    let again = sdks.run("openai_batch", &["batch-1"], &sidecar.url, AGENT_TOKEN);
    assert_eq!(again["status"], 409, "{again}");
    assert_eq!(
        again["headers"]["x-sluice-escalation"], batch["headers"]["x-sluice-escalation"],
        "{again}"
    );
    assert_eq!(world.openai.attempts_on(BATCHES), 1, "never resent");
}

/// How a sidecar is stopped mid-load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Term,
    Kill,
}

/// `count` writes from 8 Python threads; the sidecar is stopped by `stop` once a third of
/// them are stored, then started again on the same state. Every write the SDK saw succeed
/// is stored once; after the restart every journaled write is settled and stored once, and
/// nothing else is stored.
fn writes_survive(stop: Stop, count: usize, slow: Duration) {
    let world = World::new();
    world
        .payments
        .script(INTENTS, std::iter::repeat_n(Fault::Slow(slow), count * 2));
    let task = "load";
    let sidecar = world.serve();
    let started = Deadline::after(Duration::from_secs(60));
    let mut load = start_payments(&sidecar, task, count, 8, "load-");
    while world.payments.stored().len() < count / 3 {
        if load.try_wait().expect("ask after the script").is_some() {
            let seen = PYTHON.finish("writes", load);
            panic!("the load ended before a third of it was stored: {seen}");
        }
        assert!(
            !started.passed(),
            "the load never got a third of the way:\n{}",
            sidecar.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let stored_at_stop = world.payments.stored().len();
    let (status, log) = match stop {
        Stop::Term => sidecar.terminate(),
        Stop::Kill => sidecar.kill(),
    };
    if stop == Stop::Term {
        assert!(status.success(), "a graceful stop: {status}\n{log}");
        assert!(log.contains("SIGTERM: stopping"), "{log}");
    }
    let seen = PYTHON.finish("writes", load);
    let ok: BTreeSet<String> = writes(&seen)
        .iter()
        .filter(|w| w["status"] == 200)
        .map(|w| w["action"].as_str().unwrap().to_owned())
        .collect();
    // A write the stop cut short is named as the agent knows it, never by a runtime task id.
    for cut in writes(&seen).iter().filter(|w| w["status"] == 503) {
        let message = cut["message"].as_str().unwrap_or("");
        let action = cut["action"].as_str().unwrap();
        if message.contains("stopped before the write") {
            assert!(message.contains(action), "{cut}");
            assert!(
                !message.contains("task 0x") && !message.contains("Id("),
                "{cut}"
            );
        }
    }
    assert!(
        ok.len() < count,
        "the stop came mid-load: {} of {count} succeeded",
        ok.len()
    );

    let unfinished = Journal::open_existing(&world.journal())
        .and_then(|j| j.unfinished())
        .expect("the journal, between the runs")
        .len();
    if stop == Stop::Term {
        // A graceful stop lets the writes in flight finish (serve.shutdown_deadline_ms).
        assert_eq!(unfinished, 0, "{log}");
        assert!(log.contains("no write left unfinished"), "{log}");
    }

    // Started again on the same state: it is ready once the journal's writes are settled. A
    // kill between the log's first checkpoint and its copy in the witness leaves an empty
    // witness beside one checkpoint, which cannot be told from an emptied one: the host
    // refuses it, and the operator starts a new witness epoch (docs/audit.md).
    let again = if stop == Stop::Kill && first_checkpoint_unwitnessed(&world) {
        world.serve_with(&["--new-witness-epoch"])
    } else {
        world.serve()
    };
    let (status, log) = again.terminate();
    assert!(status.success(), "{status}\n{log}");

    let journal = Journal::open_existing(&world.journal()).expect("the sidecar's journal");
    let actions = journal.all().expect("the journal's actions");
    let mut at_provider: BTreeMap<String, usize> = BTreeMap::new();
    for s in world.payments.stored() {
        *at_provider
            .entry(s.reference.expect("every write carries its reference"))
            .or_default() += 1;
    }
    let reference = |action: &str| client_reference(&format!("acme/{task}"), action);
    for action in &ok {
        assert_eq!(
            at_provider.get(&reference(action)),
            Some(&1),
            "{action}: the SDK saw it succeed, so it is stored once"
        );
    }
    for a in &actions {
        assert_eq!(
            a.state,
            State::Succeeded,
            "settled after the restart: {a:?}"
        );
        assert_eq!(
            at_provider.get(&reference(&a.action)),
            Some(&1),
            "{}: journaled, so stored once",
            a.action
        );
    }
    assert_eq!(
        at_provider.len(),
        actions.len(),
        "nothing stored that the journal does not hold"
    );
    assert_eq!(world.payments.duplicates(), 0);
    eprintln!(
        "{stop:?} under load: {count} writes sent, {stored_at_stop} stored at the stop, {} \
         seen to succeed by the SDK, {unfinished} left unfinished by the stop; after the \
         restart {} journaled and settled, {} stored at the provider ({} attempts), 0 \
         duplicates, in {:.1} s",
        ok.len(),
        actions.len(),
        at_provider.len(),
        world.payments.attempts().len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_sigterm_under_load_loses_no_write_and_does_none_twice() {
    if PYTHON.unavailable() {
        return;
    }
    writes_survive(Stop::Term, 40, Duration::from_millis(150));
}

#[test]
fn a_sigkill_under_load_loses_no_journaled_write_and_does_none_twice() {
    if PYTHON.unavailable() {
        return;
    }
    writes_survive(Stop::Kill, 40, Duration::from_millis(400));
}

/// Issue 26: on a zero-byte journal beside the audit log of a run that wrote, `sluice serve`
/// started a fresh journal silently, and a write that run had done was sent again under a
/// new key. It refuses, saying what it found and how to start afresh on purpose.
#[test]
fn an_emptied_journal_beside_an_earlier_run_s_audit_log_is_refused_not_adopted() {
    if PYTHON.unavailable() {
        return;
    }
    let world = World::new();
    let sidecar = world.serve();
    let seen = PYTHON.run("writes", &as_strs(&pay()), &sidecar.url, AGENT_TOKEN);
    assert_eq!(writes(&seen)[0]["status"], 200, "{seen}");
    let (status, log) = sidecar.terminate();
    assert!(status.success(), "{log}");
    let state = world.journal().parent().unwrap().to_path_buf();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(state.join(format!("journal.sqlite{suffix}")));
    }
    std::fs::write(world.journal(), b"").unwrap();

    let (status, log) = world.serve_refused(&[]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("is empty (0 bytes)"), "{log}");
    assert!(log.contains("audit.log"), "{log}");
    assert!(log.contains("--fresh-journal"), "{log}");
    assert_eq!(
        std::fs::metadata(world.journal()).unwrap().len(),
        0,
        "left as it was"
    );

    // Started afresh on purpose, it says so; the agent's resubmission is then a new send,
    // which the operator chose.
    let fresh = world.serve_with(&["--fresh-journal"]);
    let (status, log) = fresh.terminate();
    assert!(status.success(), "{log}");
    assert!(log.contains("starting a fresh journal on purpose"), "{log}");
    // The key to pin, at the start and at the stop.
    assert_eq!(log.matches("is signed by key sha256:").count(), 2, "{log}");
    assert_eq!(world.payments.stored().len(), 1);
}

/// Issue 26: the sidecar's stop overran its 5 s deadline by 1.5 s with writes still at the
/// provider. With writes that never answer, SIGTERM to exit stays within the deadline (and
/// a little for the process to end).
#[test]
fn a_stop_with_writes_hanging_at_the_provider_meets_its_deadline() {
    if PYTHON.unavailable() {
        return;
    }
    let world = World::new();
    world
        .payments
        .script(INTENTS, std::iter::repeat_n(Fault::Hang, 8));
    let sidecar = world.serve();
    let load = start_payments(&sidecar, "hang", 4, 4, "h-");
    let waited = Deadline::after(Duration::from_secs(60));
    while world.payments.attempts_on(INTENTS) < 4 {
        assert!(!waited.passed(), "the writes never reached the provider");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stopping = Deadline::after(Duration::from_secs(60));
    let (status, log) = sidecar.terminate();
    let took = stopping.elapsed();
    let _ = PYTHON.finish("writes", load);
    eprintln!("stopped in {took:?}");
    assert!(status.success(), "{status}\n{log}");
    assert!(
        took < Duration::from_millis(5_000 + 1_000),
        "the stop took {took:?} against a 5 s deadline:\n{log}"
    );
}

/// Issue 26: `sluice serve` made its audit signing key in the state directory, beside the
/// log it signs, so whoever could write there could rewrite the log and sign it again. It
/// refuses to unless told; the key `[audit] key_file` names is the one that signs.
#[test]
fn the_signing_key_is_kept_beside_the_log_only_when_asked() {
    let world = World::new();
    let with_key = std::fs::read_to_string(world.config()).unwrap();
    let key_line = with_key
        .lines()
        .find(|l| l.starts_with("key_file = "))
        .expect("the world names its key")
        .to_owned();
    std::fs::write(world.config(), with_key.replace(&key_line, "")).unwrap();
    let state = world.journal().parent().unwrap().to_path_buf();

    let (status, log) = world.serve_refused(&[]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("[audit] key_file"), "{log}");
    assert!(log.contains("--audit-key-in-state-dir"), "{log}");
    assert!(!state.join("audit.key").exists(), "no key was made");
    assert!(
        !state.join("journal.sqlite").exists(),
        "nothing was started"
    );

    // Asked for, the key is made there.
    let (status, log) = world.serve_with(&["--audit-key-in-state-dir"]).terminate();
    assert!(status.success(), "{log}");
    assert!(state.join("audit.key").exists(), "{log}");

    // Named, the key apart signs, and none is made beside the log.
    let fresh = World::new();
    let (status, log) = fresh.serve().terminate();
    assert!(status.success(), "{log}");
    let public = sluice::audit::load_verifying(&fresh.dir.path().join("keys/audit.pub")).unwrap();
    let pinned = format!(
        "is signed by key {}",
        sluice::audit::Fingerprint::of(&public)
    );
    assert_eq!(log.matches(&pinned).count(), 2, "{log}");
    assert!(!fresh.dir.path().join("state/audit.key").exists());
}

/// Whether the sidecar's audit log holds exactly one checkpoint and its witness none: what
/// a kill between the two writes of the first checkpoint leaves.
fn first_checkpoint_unwitnessed(world: &World) -> bool {
    let state = world.journal().parent().unwrap().to_path_buf();
    let log = std::fs::read_to_string(state.join("audit.log")).unwrap_or_default();
    let checkpoints = log
        .lines()
        .filter(|l| l.contains(r#""event":"checkpoint""#))
        .count();
    let witness = std::fs::metadata(state.join("audit.witness")).map_or(0, |m| m.len());
    checkpoints == 1 && witness == 0
}

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}
