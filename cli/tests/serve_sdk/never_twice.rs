//! Never twice, through `sluice serve` as agents reach it: a payment done once stays done
//! once whatever happens to the sidecar's records between two runs — an older journal put
//! back, another sidecar's journal copied in, the state directory wiped beside a shared
//! store, the PostgreSQL journal dropped and made again — and a write refused before its
//! first byte is never sent by a restart.
//!
//! The Stripe-style provider answers a resend under the same idempotency key with the first
//! result, so what it stored would hide a second send. Every case counts what it *received*
//! instead (`attempts_on`): each request that reaches it is taken as a new side effect, as
//! it would be at a provider that ignores keys. After the damage, each case ends one of
//! three ways, and asserts which: the sidecar refuses to start, naming the disagreement;
//! or the agent's resubmit is refused with a clear code and nothing is sent; or (never
//! seen here) the resubmit is answered without a second request.

use std::io::{Read, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use sluice::journal::{Journal, State, client_reference};
use sluice_fake_provider::Fault;
use sluice_fake_provider::services::{missing, postgres_schema, runs};

use crate::raw::{Answer, post};
use crate::sidecar::{Deadline, Sidecar, World};

/// The payments collection at the provider.
const INTENTS: &str = "/v1/payment_intents";
/// The same, as agents reach it through the sidecar.
const AGENT_INTENTS: &str = "/payments/v1/payment_intents";
/// The agent's task; the sidecar keeps it as its tenant's, `acme/invoices`.
const TASK: &str = "invoices";

/// The body of the payment `action`: it carries the action's client reference.
fn payment(action: &str) -> String {
    json!({
        "amount": 100,
        "currency": "eur",
        "description": action,
        "metadata": {"client_reference": client_reference(&format!("acme/{TASK}"), action)},
    })
    .to_string()
}

/// The agent submits the payment `action` of [`TASK`] through `sidecar`.
fn submit(sidecar: &Sidecar, action: &str) -> Answer {
    post(
        sidecar,
        AGENT_INTENTS,
        &[("x-sluice-task", TASK), ("x-sluice-action", action)],
        &payment(action),
    )
}

/// Requests the payments provider received: every one a side effect.
fn received(world: &World) -> usize {
    world.payments.attempts_on(INTENTS)
}

/// Submits the payment `action` and checks it succeeded, reaching the provider once.
fn pay_once(world: &World, sidecar: &Sidecar, action: &str) {
    let before = received(world);
    let paid = submit(sidecar, action);
    assert_eq!(paid.status, 200, "{paid:?}\n{}", sidecar.log());
    assert_eq!(
        paid.header("x-sluice-action-state"),
        Some("succeeded"),
        "{paid:?}"
    );
    assert_eq!(
        received(world),
        before + 1,
        "the payment reached the provider"
    );
}

/// Stops `sidecar` gracefully, checking it stopped cleanly.
fn stop(sidecar: Sidecar) {
    let (status, log) = sidecar.terminate();
    assert!(status.success(), "{status}\n{log}");
}

/// The state directory of `world`.
fn state_of(world: &World) -> std::path::PathBuf {
    world
        .journal()
        .parent()
        .expect("the state directory")
        .to_path_buf()
}

/// Copies the journal (`journal.sqlite` and its `-wal` and `-shm`, those there are) from the
/// directory `from` into `to`, replacing what `to` held.
fn copy_journal(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("the journal's destination");
    for suffix in ["", "-wal", "-shm"] {
        let name = format!("journal.sqlite{suffix}");
        let _ = std::fs::remove_file(to.join(&name));
        if from.join(&name).exists() {
            std::fs::copy(from.join(&name), to.join(&name)).expect("copy the journal");
        }
    }
}

/// The agent resubmits the payment `action` after the journal was accepted on the
/// operator's word: the journal no longer knows it and the audit log does, so it is a
/// `record_lost` case for a person, and nothing is sent.
fn resubmit_goes_to_a_person(world: &World, sidecar: &Sidecar, action: &str) {
    let before = received(world);
    let again = submit(sidecar, action);
    assert_eq!(again.status, 409, "{again:?}\n{}", sidecar.log());
    assert_eq!(
        again.header("x-sluice-action-state"),
        Some("escalated"),
        "{again:?}"
    );
    assert_eq!(again.sluice()["kind"], "write_escalated", "{again:?}");
    let escalation = again
        .header("x-sluice-escalation")
        .unwrap_or_else(|| panic!("the escalation is named: {again:?}"));
    let case = sidecar.admin_json(&format!("/escalations/{escalation}"));
    assert_eq!(case["kind"], "record_lost", "{case}");
    assert_eq!(case["options"], json!(["cancel"]), "{case}");
    // Asked again, the same: still the person's, still not sent.
    let third = submit(sidecar, action);
    assert_eq!(third.status, 409, "{third:?}");
    assert_eq!(received(world), before, "the resubmits sent nothing");
}

/// Case 1: the journal put back from a copy taken before the payment. The audit log records
/// that the journal had moved on: the sidecar refuses to start, naming both. Accepted on the
/// operator's word (`--fresh-journal`), the payment the old copy does not know is `lost`,
/// and the agent's resubmit of it goes to a person, never to the provider.
#[test]
fn an_older_journal_put_back_is_refused_and_the_payment_is_never_sent_again() {
    let world = World::new();
    let state = state_of(&world);
    let backup = world.dir.path().join("backup");
    // A first run makes the journal; the operator's copy of it, taken after a clean stop.
    stop(world.serve());
    assert!(world.journal().exists());
    copy_journal(&state, &backup);

    let sidecar = world.serve();
    pay_once(&world, &sidecar, "pay-1");
    stop(sidecar);

    // The older copy put back.
    copy_journal(&backup, &state);
    let (status, log) = world.serve_refused(&[]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("is behind the audit log"), "{log}");
    assert!(
        log.contains("journal.sqlite"),
        "the journal is named: {log}"
    );
    assert!(log.contains("audit.log"), "the log is named: {log}");
    assert!(log.contains("--fresh-journal"), "{log}");
    assert_eq!(received(&world), 1, "a refused start sends nothing");

    // Accepted knowingly: the payment the copy lost is never sent again.
    let sidecar = world.serve_with(&["--fresh-journal"]);
    resubmit_goes_to_a_person(&world, &sidecar, "pay-1");
    stop(sidecar);
    assert_eq!(received(&world), 1, "the payment reached the provider once");
    assert_eq!(world.payments.stored().len(), 1);

    // From then on the journal and the log agree, and the case stands.
    let sidecar = world.serve();
    let again = submit(&sidecar, "pay-1");
    assert_eq!(again.status, 409, "{again:?}");
    stop(sidecar);
    assert_eq!(received(&world), 1, "the payment reached the provider once");
}

/// Case 1, another sidecar's journal copied in: it is not the journal the audit log was
/// written beside, so the sidecar refuses to start; accepted, the payment its own journal
/// had is lost, and a resubmit goes to a person.
#[test]
fn another_sidecar_s_journal_copied_in_is_refused_and_the_payment_is_never_sent_again() {
    let world = World::new();
    let sidecar = world.serve();
    pay_once(&world, &sidecar, "pay-1");
    stop(sidecar);

    // Another sidecar, on a state of its own, that made a payment of its own.
    let other = World::new();
    let sidecar = other.serve();
    pay_once(&other, &sidecar, "pay-9");
    stop(sidecar);
    copy_journal(&state_of(&other), &state_of(&world));

    let (status, log) = world.serve_refused(&[]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("is not the one the audit log"), "{log}");
    assert!(log.contains("was written beside"), "{log}");
    assert!(log.contains("--fresh-journal"), "{log}");
    assert_eq!(received(&world), 1, "a refused start sends nothing");

    let sidecar = world.serve_with(&["--fresh-journal"]);
    resubmit_goes_to_a_person(&world, &sidecar, "pay-1");
    stop(sidecar);
    assert_eq!(received(&world), 1, "the payment reached the provider once");
    assert_eq!(received(&other), 1);
}

/// A `redis-server` of one test, on a free loopback port, keeping an append-only file (the
/// sidecar refuses writes on a store that could lose its claims); killed when dropped.
struct Redis {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Redis {
    /// `None` when `redis-server` is not installed (the test skips, saying so).
    fn start() -> Option<Self> {
        Self::start_with(&["--appendonly", "yes"])
    }

    /// As [`Redis::start`], configured with `settings` (`redis-server` arguments).
    fn start_with(settings: &[&str]) -> Option<Self> {
        let binary = redis_binary();
        if missing(
            "redis-server",
            runs(&binary),
            "Debian: apt-get install redis-server, or set SLUICE_REDIS_SERVER",
        ) {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = tempfile::tempdir().expect("a directory for redis");
        let child = Command::new(&binary)
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["--save", ""])
            .args(settings)
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let redis = Self {
            child,
            port,
            _dir: dir,
        };
        let deadline = Deadline::after(Duration::from_secs(10));
        while !redis.pong() {
            assert!(!deadline.passed(), "redis-server did not answer PING");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The group's ownership epoch, as `sluice store init` makes it once.
        redis.ok(&["SET", "sluice:epoch", "7e57e90c7e57e90c", "NX"]);
        Some(redis)
    }

    fn pong(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let mut buf = [0; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Runs `args` (one command, as RESP), expecting `+OK`.
    fn ok(&self, args: &[&str]) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to redis");
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let mut command = format!("*{}\r\n", args.len());
        for a in args {
            command.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(command.as_bytes()).expect("send to redis");
        let mut buf = [0; 5];
        s.read_exact(&mut buf).expect("redis answers");
        assert_eq!(&buf, b"+OK\r\n", "{args:?}");
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn redis_binary() -> String {
    std::env::var("SLUICE_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_owned())
}

/// Case 2: the state directory wiped — journal, audit log, witness and the store's epoch
/// together, as a pod rescheduled without its volume — and the sidecar started again with
/// the same `[store] host_id`. Nothing local remembers the payment; the shared store's claim
/// does: the resubmit is refused (409 `action_record_lost`), never sent.
#[test]
fn a_wiped_state_directory_beside_a_shared_store_never_sends_the_payment_again() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let world = World::new();
    let url = redis.url();
    world.configure(|text| {
        format!(
            "{text}\n[store]\nurl = \"{url}\"\nhosts = 1\nhost_id = \"never-twice-1\"\n\
             lease_ttl_ms = 300\n"
        )
    });
    let state = state_of(&world);
    let sidecar = world.serve();
    pay_once(&world, &sidecar, "pay-1");
    stop(sidecar);
    assert!(
        state.join("audit.log").exists() && world.journal().exists(),
        "the audit log and the journal live in the state directory"
    );

    std::fs::remove_dir_all(&state).expect("wipe the state directory");
    // Nothing local is left to disagree with: it starts, as a first start.
    let sidecar = world.serve();
    let before = received(&world);
    let again = resubmit_past_the_previous_run(&sidecar, "pay-1");
    assert_eq!(again.status, 409, "{again:?}\n{}", sidecar.log());
    let said = again.sluice();
    assert_eq!(said["kind"], "action_record_lost", "{again:?}");
    let message = again.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("never-twice-1"),
        "the host is named: {message}"
    );
    assert!(message.contains("nothing was sent"), "{message}");
    // And asked again, the same.
    let third = submit(&sidecar, "pay-1");
    assert_eq!(third.status, 409, "{third:?}");
    assert_eq!(third.sluice()["kind"], "action_record_lost", "{third:?}");
    stop(sidecar);
    assert_eq!(received(&world), before, "the resubmits sent nothing");
    assert_eq!(received(&world), 1, "the payment reached the provider once");
}

/// Case 4: a claim that can vanish from the store. A Redis that evicts keys (or keeps no
/// append-only file) could drop one claim while its epoch stays, and a second host would
/// then take the action and send it again; so the sidecar claims no write there (503
/// `shared_store_may_lose_claims`, naming the setting; nothing sent). A store reconfigured
/// to evict while the sidecar runs is seen within 10 s, and writes stop.
#[test]
fn a_store_that_could_lose_a_claim_takes_no_payment() {
    let settings = ["--appendonly", "yes", "--maxmemory", "64mb"];
    let Some(evicting) =
        Redis::start_with(&[&settings[..], &["--maxmemory-policy", "volatile-lru"]].concat())
    else {
        return;
    };
    let store = |url: &str, id: &str| {
        let url = url.to_owned();
        let id = id.to_owned();
        move |text: String| {
            format!(
                "{text}\n[store]\nurl = \"{url}\"\nhosts = 1\nhost_id = \"{id}\"\n\
                 lease_ttl_ms = 300\n"
            )
        }
    };
    let world = World::new();
    world.configure(store(&evicting.url(), "claims-evicted"));
    let sidecar = world.serve();
    let refused = resubmit_past_the_previous_run(&sidecar, "pay-1");
    assert_eq!(refused.status, 503, "{refused:?}\n{}", sidecar.log());
    assert_eq!(refused.sluice()["kind"], "shared_store_may_lose_claims");
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("volatile-lru") && message.contains("noeviction"),
        "the setting and its fix are named: {message}"
    );
    stop(sidecar);
    assert_eq!(received(&world), 0, "nothing was sent");

    // A store that cannot lose a claim takes the payment; reconfigured to evict, it
    // takes no more.
    let Some(kept) =
        Redis::start_with(&[&settings[..], &["--maxmemory-policy", "noeviction"]].concat())
    else {
        return;
    };
    let world = World::new();
    world.configure(store(&kept.url(), "claims-kept"));
    let sidecar = world.serve();
    let paid = resubmit_past_the_previous_run(&sidecar, "pay-1");
    assert_eq!(paid.status, 200, "{paid:?}\n{}", sidecar.log());
    kept.ok(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    let deadline = Deadline::after(Duration::from_secs(20));
    let mut n = 2;
    let stopped = loop {
        let answer = submit(&sidecar, &format!("pay-{n}"));
        n += 1;
        if answer.status == 503 {
            break answer;
        }
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(!deadline.passed(), "writes went on in a store that evicts");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(stopped.sluice()["kind"], "shared_store_may_lose_claims");
    stop(sidecar);
    assert_eq!(
        received(&world),
        n - 2,
        "one payment for each write taken, none for the refused"
    );
}

/// The agent's resubmit of `action` once the previous run's mark of this host id in the
/// store has expired: a `host_id_in_use` refusal (nothing sent) is waited out.
fn resubmit_past_the_previous_run(sidecar: &Sidecar, action: &str) -> Answer {
    let deadline = Deadline::after(Duration::from_secs(30));
    loop {
        let answer = submit(sidecar, action);
        let in_use = answer.status == 503
            && answer
                .json()
                .pointer("/error/sluice/kind")
                .is_some_and(|k| k == "host_id_in_use");
        if !in_use || deadline.passed() {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `sql` on the test database.
fn psql(url: &str, sql: &str) {
    let out = Command::new("psql")
        .args([url, "-qAtc", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Case 3: the journal in PostgreSQL (`[journal] url`), its database dropped and made again
/// (the test's schema, which is its database: dropped with everything in it, and made
/// again empty). The audit log names a journal that is gone: the sidecar refuses to start;
/// accepted knowingly, the payment is lost, and its resubmit goes to a person.
#[test]
fn a_postgres_journal_dropped_and_made_again_never_sends_the_payment_again() {
    let Some(url) = postgres_schema() else {
        return;
    };
    let base = std::env::var("SLUICE_TEST_POSTGRES_URL").expect("the test database");
    let schema = url
        .rsplit("search_path%3D")
        .next()
        .expect("the test's schema")
        .to_owned();
    let world = World::new();
    world.configure(|text| format!("{text}\n[journal]\nurl = \"{url}\"\nlease_ttl_ms = 1000\n"));
    let sidecar = world.serve();
    pay_once(&world, &sidecar, "pay-1");
    stop(sidecar);
    assert!(!world.journal().exists(), "the journal is in PostgreSQL");

    psql(
        &base,
        &format!("DROP SCHEMA {schema} CASCADE; CREATE SCHEMA {schema}"),
    );
    let (status, log) = world.serve_refused(&[]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("is not the one the audit log"), "{log}");
    assert!(log.contains("--fresh-journal"), "{log}");
    assert_eq!(received(&world), 1, "a refused start sends nothing");

    let sidecar = world.serve_with(&["--fresh-journal"]);
    resubmit_goes_to_a_person(&world, &sidecar, "pay-1");
    stop(sidecar);
    assert_eq!(received(&world), 1, "the payment reached the provider once");
}

/// Case 5: a write refused before its first byte (its route's breaker open) is over. The
/// agent is told `write_not_sent`, `"sent": false`; it retries under a new action name,
/// which is sent once; no restart sends the refused one.
#[test]
fn a_write_refused_before_it_was_sent_is_never_sent_by_a_restart() {
    let world = World::new();
    // One failure opens a breaker, for 1.5 s.
    world.configure(|text| {
        text.replace(
            "breaker_threshold = 1000",
            "breaker_threshold = 1\nbreaker_open_ms = 1500",
        )
    });
    // A payment the provider refuses as the caller's mistake: it trips the tenant's breaker
    // on the route.
    world.payments.script(
        INTENTS,
        [Fault::Status {
            status: 400,
            code: "parameter_invalid_integer",
        }],
    );
    let sidecar = world.serve();
    let tripped = submit(&sidecar, "bad-0");
    assert_eq!(tripped.status, 400, "{tripped:?}");
    assert_eq!(
        tripped.header("x-sluice-action-state"),
        Some("failed"),
        "{tripped:?}"
    );
    assert_eq!(received(&world), 1);

    let refused = submit(&sidecar, "pay-1");
    assert_eq!(refused.status, 503, "{refused:?}\n{}", sidecar.log());
    assert_eq!(
        refused.header("x-sluice-action-state"),
        Some("refused"),
        "{refused:?}"
    );
    let said = refused.sluice();
    assert_eq!(said["kind"], "write_not_sent", "{refused:?}");
    assert_eq!(said["sent"], false, "{refused:?}");
    assert_eq!(said["action"], "pay-1", "{refused:?}");
    assert_eq!(received(&world), 1, "the refused write sent nothing");

    // The agent retries under a new action name once the breaker closes: a new write, sent
    // once.
    std::thread::sleep(Duration::from_millis(1_600));
    pay_once(&world, &sidecar, "pay-1-retry");
    assert_eq!(received(&world), 2);
    stop(sidecar);

    let refused_key = {
        let journal = Journal::open_existing(&world.journal()).expect("the journal");
        let actions = journal.all().expect("its actions");
        let pay = actions
            .iter()
            .find(|a| a.action == "pay-1")
            .unwrap_or_else(|| panic!("pay-1 is journaled: {actions:?}"));
        assert_eq!(pay.state, State::Refused, "{pay:?}");
        assert_eq!(pay.attempts, 0, "{pay:?}");
        pay.idempotency_key.clone()
    };

    // Started again, and given time to carry on whatever it would: the refused write stays
    // unsent.
    let sidecar = world.serve();
    std::thread::sleep(Duration::from_secs(2));
    stop(sidecar);
    assert_eq!(received(&world), 2, "the restart sent nothing");
    assert_eq!(
        world.payments.stored().len(),
        1,
        "one payment stored: the retry under its new name"
    );
    assert_eq!(
        world.payments.attempts_with_key(&refused_key),
        0,
        "the refused write never reached the provider"
    );
    let reference = client_reference(&format!("acme/{TASK}"), "pay-1");
    assert!(
        world
            .payments
            .stored()
            .iter()
            .all(|s| s.reference.as_deref() != Some(reference.as_str())),
        "the refused payment was never stored"
    );
    let journal = Journal::open_existing(&world.journal()).expect("the journal");
    let states: Vec<(String, State)> = journal
        .all()
        .expect("its actions")
        .into_iter()
        .map(|a| (a.action, a.state))
        .collect();
    assert!(
        states.contains(&("pay-1".to_owned(), State::Refused)),
        "{states:?}"
    );
}

/// (a) `x-sluice-class: read` on a POST to a write route is refused: a write is never made
/// a read by the agent's word, and nothing is sent.
#[test]
fn a_read_hint_on_a_write_route_is_refused_and_nothing_is_sent() {
    let world = World::new();
    let sidecar = world.serve();
    for headers in [
        vec![("x-sluice-class", "read")],
        vec![
            ("x-sluice-class", "read"),
            ("x-sluice-task", TASK),
            ("x-sluice-action", "pay-1"),
        ],
    ] {
        let answer = post(&sidecar, AGENT_INTENTS, &headers, &payment("pay-1"));
        assert_eq!(answer.status, 400, "{answer:?}");
        assert_eq!(
            answer.sluice()["kind"],
            "class_hint_not_allowed",
            "{answer:?}"
        );
        let message = answer.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(message.contains("nothing was sent"), "{message}");
    }
    assert_eq!(received(&world), 0, "nothing was sent");
    stop(sidecar);
    // Nor journaled: there is nothing for a restart to carry on.
    let journal = Journal::open_existing(&world.journal()).expect("the journal");
    assert!(journal.all().expect("its actions").is_empty());
}

/// (b) `x-sluice-class: idempotent-write` would have a write resent after an unknown outcome:
/// taken where the provider's plugin says a repeat with the same key is suppressed (Stripe's
/// payment), refused where it does not (an OpenAI file upload), and nothing is sent then.
#[test]
fn an_idempotent_write_hint_is_taken_only_where_the_provider_suppresses_repeats() {
    let world = World::new();
    let sidecar = world.serve();
    let hinted = |action: &'static str| {
        vec![
            ("x-sluice-class", "idempotent-write"),
            ("x-sluice-task", TASK),
            ("x-sluice-action", action),
        ]
    };
    let upload = post(
        &sidecar,
        "/openai/v1/files",
        &hinted("upload-1"),
        r#"{"purpose":"batch"}"#,
    );
    assert_eq!(upload.status, 400, "{upload:?}");
    assert_eq!(
        upload.sluice()["kind"],
        "class_hint_not_allowed",
        "{upload:?}"
    );
    let message = upload.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("nothing was sent") && message.contains("idempotency key"),
        "{message}"
    );
    assert_eq!(world.openai.attempts_on("/v1/files"), 0, "nothing was sent");
    let paid = post(&sidecar, AGENT_INTENTS, &hinted("pay-1"), &payment("pay-1"));
    assert_eq!(paid.status, 200, "{paid:?}");
    assert_eq!(received(&world), 1);
    stop(sidecar);
}

/// A new group's store has no ownership epoch, and hosts never make one (a host that never
/// joined, meeting a store that lost its state, would otherwise take other hosts' actions as
/// new): the payment is refused (503 `shared_store_not_initialized`, nothing sent) until an
/// operator runs `sluice store init` once; run again, it changes nothing.
#[test]
fn a_new_groups_store_takes_payments_once_sluice_store_init_made_its_epoch() {
    let Some(redis) = Redis::start() else {
        return;
    };
    redis.ok(&["FLUSHALL"]);
    let world = World::new();
    let url = redis.url();
    world.configure(|text| {
        format!(
            "{text}\n[store]\nurl = \"{url}\"\nhosts = 1\nhost_id = \"new-group-1\"\n\
             lease_ttl_ms = 300\n"
        )
    });
    // Not ready for writes, and saying so.
    let sidecar = Sidecar::start_unready(&world.config());
    let deadline = Deadline::after(Duration::from_secs(20));
    while sidecar.admin_get("/readyz") != Some(503) {
        assert!(!deadline.passed(), "{}", sidecar.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let refused = resubmit_past_the_previous_run(&sidecar, "pay-1");
    assert_eq!(refused.status, 503, "{refused:?}\n{}", sidecar.log());
    assert_eq!(refused.sluice()["kind"], "shared_store_not_initialized");
    assert!(refused.body.contains("sluice store init"), "{refused:?}");
    assert_eq!(received(&world), 0, "nothing was sent");

    let init = |said: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["store", "init", "--config"])
            .arg(world.config())
            .output()
            .expect("run sluice store init");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(said), "{stdout}");
    };
    init("ownership epoch");
    init("nothing changed");
    // The host joins it (its upkeep, or its next claim), and the payment goes, once.
    let deadline = Deadline::after(Duration::from_secs(20));
    loop {
        let answer = submit(&sidecar, "pay-1");
        if answer.status == 200 {
            break;
        }
        assert!(!deadline.passed(), "{answer:?}\n{}", sidecar.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(sidecar);
    assert_eq!(received(&world), 1, "the payment reached the provider once");
}
